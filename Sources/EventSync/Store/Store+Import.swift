import Foundation

extension Store {
    /// Imports JSON Lines (one object per line: the fields, and optionally `id`) from a file descriptor.
    ///
    /// The whole import is one write transaction: every line is parsed,
    /// validated and appended as it streams by, and the first bad line aborts
    /// the transaction, so either every record is in the log or none is.
    /// Blank lines are skipped. Returns the number of records imported.
    public func importRecords(_ entityName: String, from descriptor: Int32) throws(StoreError) -> Int {
        let schema = try entity(entityName)
        let at = Timestamp.now()
        return try write { appender in
            var lineNumber = 0
            var imported = 0
            try LineReader(descriptor: descriptor).forEachLine { line in
                lineNumber += 1
                guard line.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) else { return }
                do {
                    let (event, current) = try importEvent(line, schema: schema, at: at, in: appender.transaction)
                    try appender.append(event, current: current)
                    imported += 1
                } catch {
                    throw StoreError(StoreError.wrap(error).code == .failure ? .failure : .invalidData,
                                     "line \(lineNumber): \(StoreError.wrap(error).message)")
                }
            }
            return imported
        }
    }

    private func importEvent(_ line: UnsafeRawBufferPointer, schema: EntitySchema, at: Int64,
                             in transaction: Transaction) throws -> (Event, RecordProjection) {
        guard case .object(var fields) = try JSONParser.parse(line) else {
            throw StoreError(.invalidData, "expected a JSON object")
        }
        let id: String
        switch fields.removeValue(forKey: "id") {
        case nil: id = RecordID.generate()
        case .string(let given)?: id = given
        case let other?: throw StoreError(.invalidData, "'id' must be a string, not \(other.typeName)")
        }
        try Self.checkID(id)
        try schema.validate(fields)
        let current = try log.views.projection(entity: schema.name, id: id, in: transaction)
        if current.row != nil {
            throw StoreError(.invalidData, "\(schema.name) '\(id)' already exists")
        }
        return (Event(eventID: RecordID.generate(), at: at, entity: schema.name, recordID: id, kind: .created,
                      origin: .local, author: author, set: fields), current)
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
