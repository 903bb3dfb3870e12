import CLMDB

// LMDB's own list of free pages (its database 0), read by the journal to know which pages a commit may reuse next.
// LMDB lets a read-only transaction open a cursor on it.
extension Transaction {
    /// Calls `body` with each page that the commits after `commit` freed, as this transaction sees them, while it
    /// returns true. LMDB keys its free-page records by the commit that freed them, native-endian, and each
    /// holds its page numbers after their count.
    func forEachFreedPage(after commit: Int, _ body: (UInt64) throws(StorageError) -> Bool) throws(StorageError) {
        let cursor = try self.cursor(Database(dbi: 0, name: "the free pages"))
        var record = try cursor.seek(atLeast: withUnsafeBytes(of: UInt(commit + 1)) { Array($0) })
        while let (key, value) = record {
            guard key.count == 8, value.count >= 8, case let count = value.loadUnaligned(as: UInt64.self),
                  count < UInt64(value.count / 8) else {
                throw StorageError(code: MDB_CORRUPTED, operation: "reading the free pages", reason: "a free-page record is not whole")
            }
            for index in 0..<Int(count) where try !body(value.loadUnaligned(fromByteOffset: 8 * (index + 1), as: UInt64.self)) { return }
            record = try cursor.next()
        }
    }
}
