import Foundation

extension Store {
    /// Records appended per write transaction by `importRecords`.
    static let importChunk = 100_000

    /// Imports JSON Lines (one object per line: the fields, and optionally `id`) from a file descriptor.
    ///
    /// The input is validated as a whole first, in a read snapshot: every
    /// line parsed and checked against the schema, every id checked unique in
    /// the file and new to the store. One bad line and nothing is written; the
    /// error names the line. Then the records are appended in transactions of
    /// `importChunk` (LMDB slows down on transactions of millions of pages).
    /// A pipe is spooled to a temporary file so it can be read twice. Blank
    /// lines are skipped. Returns the number of records imported.
    public func importRecords(_ entityName: String, from descriptor: Int32) throws(StoreError) -> Int {
        let schema = try entity(entityName)
        let input = try RewindableInput(descriptor, spoolDirectory: directory)
        var generatedIDs: [Int: String] = [:]
        try validateImport(input, schema: schema, generatedIDs: &generatedIDs)
        return try appendImport(input, schema: schema, generatedIDs: generatedIDs)
    }

    /// Pass 1: checks every line; remembers the ids it made for lines without one.
    private func validateImport(_ input: RewindableInput, schema: EntitySchema, generatedIDs: inout [Int: String]) throws(StoreError) {
        var seen = Set<String>()
        try read { transaction in
            try input.forEachLine { number, line in
                do {
                    var fields = try Self.importedFields(line)
                    let id: String
                    switch fields.removeValue(forKey: "id") {
                    case nil:
                        id = RecordID.generate()
                        generatedIDs[number] = id
                    case .string(let given)?:
                        id = given
                    case let other?:
                        throw StoreError(.invalidData, "'id' must be a string, not \(other.typeName)")
                    }
                    try Self.checkID(id)
                    try schema.validate(fields)
                    guard seen.insert(id).inserted else { throw StoreError(.invalidData, "id '\(id)' appears twice in the input") }
                    if try transaction.withValue(Keys.record(entity: schema.name, id: id), in: log.views.rows, { _ in true }) != nil {
                        throw StoreError(.invalidData, "\(schema.name) '\(id)' already exists")
                    }
                } catch {
                    let wrapped = StoreError.wrap(error)
                    throw StoreError(wrapped.code == .failure ? .failure : .invalidData, "line \(number): \(wrapped.message)")
                }
            }
        }
    }

    /// Pass 2: appends the validated lines, `importChunk` records per transaction.
    private func appendImport(_ input: RewindableInput, schema: EntitySchema, generatedIDs: [Int: String]) throws(StoreError) -> Int {
        let at = Timestamp.now()
        var batch: [Event] = []
        var imported = 0
        func flush() throws(StoreError) {
            guard !batch.isEmpty else { return }
            let events = batch
            batch.removeAll(keepingCapacity: true)
            do {
                try write { appender in
                    // Another process may have added an id since validation.
                    for event in events where try transaction(appender).withValue(Keys.record(entity: event.entity, id: event.recordID),
                                                                                  in: log.views.rows, { _ in true }) != nil {
                        throw StoreError(.invalidData, "\(schema.name) '\(event.recordID)' was added meanwhile")
                    }
                    try appender.append(contentsOf: events)
                }
            } catch {
                throw StoreError(error.code, "\(error.message); \(imported) records were imported before it")
            }
            imported += events.count
        }
        try input.forEachLine { number, line in
            var fields = try Self.importedFields(line)
            let id = fields.removeValue(forKey: "id")?.stringValue ?? generatedIDs[number] ?? RecordID.generate()
            batch.append(Event(eventID: RecordID.generate(), at: at, entity: schema.name, recordID: id, kind: .created,
                               origin: .local, author: author, set: fields))
            if batch.count >= Self.importChunk { try flush() }
        }
        try flush()
        return imported
    }

    private func transaction(_ appender: EventLog.Appender) -> Transaction { appender.transaction }

    private static func importedFields(_ line: UnsafeRawBufferPointer) throws -> JSONObject {
        guard case .object(let fields) = try JSONParser.parse(line) else {
            throw StoreError(.invalidData, "expected a JSON object")
        }
        return fields
    }
}

/// The import's input, readable twice: a regular file is read again from
/// the start; anything else (a pipe, a terminal) is first copied to a
/// temporary file, removed when done.
final class RewindableInput {
    private let descriptor: Int32
    private let spool: String?

    init(_ descriptor: Int32, spoolDirectory: String) throws(StoreError) {
        var status = stat()
        if fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG, lseek(descriptor, 0, SEEK_CUR) == 0 {
            self.descriptor = descriptor
            self.spool = nil
            return
        }
        let path = spoolDirectory + "/import-\(RecordID.generate()).spool"
        let copy = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard copy >= 0 else { throw StoreError(.failure, "cannot create \(path): \(String(cString: strerror(errno)))") }
        unlink(path)  // the open descriptor keeps it alive; nothing is left behind on a crash
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else {
                close(copy)
                throw StoreError(.failure, "cannot read input: \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            let written = buffer.withUnsafeBytes { write(copy, $0.baseAddress, count) }
            guard written == count else {
                close(copy)
                throw StoreError(.failure, "cannot spool input: \(String(cString: strerror(errno)))")
            }
        }
        self.descriptor = copy
        self.spool = path
    }

    deinit {
        if spool != nil { close(descriptor) }
    }

    /// Calls `body` with each non-blank line and its number (from 1), from the start of the input.
    func forEachLine(_ body: (Int, UnsafeRawBufferPointer) throws -> Void) throws(StoreError) {
        guard lseek(descriptor, 0, SEEK_SET) == 0 else {
            throw StoreError(.failure, "cannot rewind the input: \(String(cString: strerror(errno)))")
        }
        var number = 0
        do {
            try LineReader(descriptor: descriptor).forEachLine { line in
                number += 1
                guard line.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) else { return }
                try body(number, line)
            }
        } catch {
            throw StoreError.wrap(error)
        }
    }
}

/// Reads a file descriptor in large blocks and hands out one line at a time,
/// without the newline, as a buffer valid only during the call.
struct LineReader {
    let descriptor: Int32
    var blockSize = 1 << 22

    func forEachLine(_ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        var pending: [UInt8] = []
        var block = [UInt8](repeating: 0, count: blockSize)
        while true {
            let count = block.withUnsafeMutableBytes { Foundation.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw StoreError(.failure, "cannot read input: \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            try block.withUnsafeBytes { buffer in
                let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
                var start = 0
                while let newline = chunk[start...].firstIndex(of: 0x0A) {
                    if pending.isEmpty {
                        try body(UnsafeRawBufferPointer(rebasing: chunk[start..<newline]))
                    } else {
                        pending.append(contentsOf: chunk[start..<newline])
                        try pending.withUnsafeBytes { try body($0) }
                        pending.removeAll(keepingCapacity: true)
                    }
                    start = newline + 1
                }
                pending.append(contentsOf: chunk[start...])
            }
        }
        if !pending.isEmpty { try pending.withUnsafeBytes { try body($0) } }
    }
}
