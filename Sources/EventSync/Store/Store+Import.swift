import Foundation

extension Store {
    /// Records gathered before they are appended and folded into the views together.
    static let importChunk = 100_000

    /// Imports JSON Lines (one object per line: the fields, and optionally `id`) from a file descriptor.
    ///
    /// The whole import is one write transaction, so it is all or nothing:
    /// every line is parsed and validated (schema, id well-formed, unique in
    /// the input, new to the store) as it streams by, and the first bad line
    /// throws, naming the line, which aborts the transaction. Records are
    /// appended in chunks whose view updates are applied in record order (see
    /// `EventLog.Appender.append(contentsOf:)`). Blank lines are skipped.
    /// Returns the number of records imported.
    public func importRecords(_ entityName: String, from descriptor: Int32) throws(StoreError) -> Int {
        let schema = try entity(entityName)
        let at = Timestamp.now()
        return try write { appender in
            var batch: [Event] = []
            var idsInBatch = Set<String>()
            var imported = 0
            func flush() throws {
                try appender.append(contentsOf: batch)
                imported += batch.count
                batch.removeAll(keepingCapacity: true)
                idsInBatch.removeAll(keepingCapacity: true)
                // Pages read so far need not stay mapped (dirty ones are the transaction's own copies).
                environment.releaseMappedPages()
            }
            var number = 0
            try LineReader(descriptor: descriptor).forEachLine { line in
                number += 1
                guard line.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) else { return }
                do {
                    var fields = try Self.importedFields(line)
                    let id: String
                    switch fields.removeValue(forKey: "id") {
                    case nil: id = RecordID.generate()
                    case .string(let given)?: id = given
                    case let other?: throw StoreError(.invalidData, "'id' must be a string, not \(other.typeName)")
                    }
                    try Self.checkID(id)
                    try schema.validate(fields)
                    // Earlier chunks are in the views already; this one is not yet.
                    let exists = try appender.transaction.withValue(Keys.record(entity: schema.name, id: id), in: log.views.rows) { _ in true }
                    guard exists == nil, idsInBatch.insert(id).inserted else {
                        throw StoreError(.invalidData, "\(schema.name) '\(id)' already exists")
                    }
                    batch.append(Event(eventID: RecordID.generate(), at: at, entity: schema.name, recordID: id, kind: .created,
                                       origin: .local, author: author, set: fields))
                } catch {
                    let wrapped = StoreError.wrap(error)
                    throw StoreError(wrapped.code == .failure ? .failure : .invalidData, "line \(number): \(wrapped.message)")
                }
                if batch.count >= Self.importChunk { try flush() }
            }
            try flush()
            return imported
        }
    }

    private static func importedFields(_ line: UnsafeRawBufferPointer) throws -> JSONObject {
        guard case .object(let fields) = try JSONParser.parse(line) else {
            throw StoreError(.invalidData, "expected a JSON object")
        }
        return fields
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
