/// The changes of one write transaction as the journal keeps them: each `put` and `delete`, in order,
/// enough to do them again on the store as it was before the transaction (`apply`).
///
/// A transaction whose changes cannot be told so (it creates, empties or drops a database) or that
/// grew past what one journal entry holds is not recorded: `Transaction.redo` is then nil, and its
/// commit is made durable by a checkpoint instead (see `Journal`).
///
/// Each change: its kind (1 byte), the database's name (its length, 1 byte, then the name), the key
/// (its length, 4 bytes, then the key) and, for a put or the removal of one value, the value likewise.
struct Redo {
    private(set) var bytes: [UInt8] = []

    private enum Kind: UInt8 {
        case put = 1
        /// The key with every value it has.
        case deleteKey = 2
        /// One value of the key (in a sorted-duplicates database; the key, in any other).
        case deleteValue = 3
    }

    /// The most a transaction's changes may take and still be journalled.
    static let limit = 1 << 20

    /// Whether the changes grew past `limit`.
    var isFull: Bool { bytes.count > Self.limit }

    mutating func put(_ database: Database, _ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) {
        append(.put, database, key, value)
    }

    mutating func delete(_ database: Database, _ key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer?) {
        append(value == nil ? .deleteKey : .deleteValue, database, key, value)
    }

    /// Adds the changes of a nested transaction that committed.
    mutating func append(_ nested: Redo) {
        bytes += nested.bytes
    }

    private mutating func append(_ kind: Kind, _ database: Database, _ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer?) {
        bytes.append(kind.rawValue)
        bytes.append(UInt8(database.name.utf8.count))
        bytes += database.name.utf8
        appendSized(key)
        if let value { appendSized(value) }
    }

    private mutating func appendSized(_ part: UnsafeRawBufferPointer) {
        withUnsafeBytes(of: UInt32(part.count).littleEndian) { bytes += $0 }
        bytes += part
    }

    /// Does the changes in `bytes` (a journal entry's) again, in `transaction`.
    /// - Throws: `MDB_CORRUPTED` if the bytes are not changes as `Redo` writes them.
    static func apply(_ bytes: UnsafeRawBufferPointer, in transaction: Transaction, of environment: Environment) throws {
        var databases: [String: Database] = [:]
        var reader = Reader(bytes: bytes)
        while !reader.isAtEnd {
            guard let kind = reader.byte().flatMap(Kind.init), let nameCount = reader.byte(),
                  let name = reader.take(Int(nameCount)), let key = reader.sized() else { throw damaged }
            let nameText = String(decoding: name, as: UTF8.self)
            let database: Database
            if let known = databases[nameText] {
                database = known
            } else {
                database = try environment.openDatabase(nameText, in: transaction)
                databases[nameText] = database
            }
            switch kind {
            case .put:
                guard let value = reader.sized() else { throw damaged }
                try transaction.put(key, value, in: database)
            case .deleteKey:
                try transaction.delete(Array(key), in: database)
            case .deleteValue:
                guard let value = reader.sized() else { throw damaged }
                try transaction.delete(key, value: value, in: database)
            }
        }
    }

    private static var damaged: StorageError {
        StorageError(code: MDBErrors.corrupted, operation: "replaying the journal", reason: "a journal entry does not hold changes evsync wrote")
    }

    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var offset = 0

        var isAtEnd: Bool { offset >= bytes.count }

        mutating func byte() -> UInt8? {
            guard offset < bytes.count else { return nil }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func take(_ count: Int) -> UnsafeRawBufferPointer? {
            guard count >= 0, count <= bytes.count - offset else { return nil }
            defer { offset += count }
            return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count])
        }

        mutating func sized() -> UnsafeRawBufferPointer? {
            guard let size = take(4) else { return nil }
            return take(Int(size.loadUnaligned(as: UInt32.self).littleEndian))
        }
    }
}
