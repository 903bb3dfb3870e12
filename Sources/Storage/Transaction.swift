import CLMDB
import CLMDBGuard

/// One LMDB transaction, valid only inside the `Environment.read`/`write`
/// closure that created it. Values handed out as raw buffers point into the
/// memory map and are valid only until the transaction ends.
package final class Transaction {
    let handle: OpaquePointer
    package let readOnly: Bool
    private var finished = false
    /// One cursor per database (indexed by its handle) that every `put` and
    /// `insert`, and every read in a write transaction, goes through, left
    /// where the last one put it. When the next key falls in the same leaf
    /// page, LMDB skips the search from the root: writes in key order, as the
    /// views are written, mostly cost no tree search. (Deletes are rare and
    /// keep `mdb_del`.)
    private var writeCursors: [OpaquePointer?] = []
    /// The transaction this one is nested in, if it is.
    private let parent: Transaction?

    /// - Parameter parent: the write transaction this one is nested in: its changes become the parent's
    ///   when it commits, and vanish when it is discarded, the parent going on either way.
    package init(environment: OpaquePointer, readOnly: Bool, parent: Transaction? = nil) throws(StorageError) {
        var handle: OpaquePointer?
        let flags = readOnly ? UInt32(MDB_RDONLY) : 0
        try StorageError.check(evsync_mdb_txn_begin(environment, parent?.handle, flags, &handle), "beginning a transaction")
        guard let handle else { throw StorageError(code: MDB_PANIC, operation: "beginning a transaction") }
        self.handle = handle
        self.readOnly = readOnly
        self.parent = parent
    }

    deinit {
        discard()
    }

    package func commit() throws(StorageError) {
        guard !finished else { return }
        finished = true
        closeWriteCursors()
        try StorageError.check(evsync_mdb_txn_commit(handle), "committing")
    }

    /// Ends the transaction without keeping its changes (`mdb_txn_abort`).
    package func discard() {
        guard !finished else { return }
        finished = true
        closeWriteCursors()
        evsync_mdb_txn_abort(handle)
    }

    private func writeCursor(_ database: Database) throws(StorageError) -> OpaquePointer {
        let index = Int(database.dbi)
        if index < writeCursors.count, let cursor = writeCursors[index] { return cursor }
        var cursor: OpaquePointer?
        try StorageError.check(evsync_mdb_cursor_open(handle, database.dbi, &cursor), "opening a cursor on \(database.name)")
        guard let cursor else { throw StorageError(code: MDB_PANIC, operation: "opening a cursor") }
        if index >= writeCursors.count { writeCursors += repeatElement(nil, count: index + 1 - writeCursors.count) }
        writeCursors[index] = cursor
        return cursor
    }

    /// Closes `database`'s write cursor, if it has one: before the database is dropped, which closes
    /// its handle (a database opened afterwards may be given the same one).
    private func closeWriteCursor(_ database: Database) {
        let index = Int(database.dbi)
        guard index < writeCursors.count, let cursor = writeCursors[index] else { return }
        mdb_cursor_close(cursor)
        writeCursors[index] = nil
    }

    private func closeWriteCursors() {
        for case let cursor? in writeCursors { mdb_cursor_close(cursor) }
        writeCursors = []
    }

    /// Calls `body` with the value stored under `key`, or returns nil without calling it.
    package func withValue<T>(_ key: [UInt8], in database: Database, _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T? {
        try key.withUnsafeBytes { try withValue($0, in: database, body) }
    }

    package func withValue<T>(_ key: UnsafeRawBufferPointer, in database: Database, _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T? {
        var keyValue = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var data = MDB_val()
        // In a write transaction, the write cursor: the write that usually follows is then in place.
        let code = readOnly ? evsync_mdb_get(handle, database.dbi, &keyValue, &data)
            : evsync_mdb_cursor_get(try writeCursor(database), &keyValue, &data, MDB_SET_KEY)
        if code == MDB_NOTFOUND { return nil }
        try StorageError.check(code, "reading from \(database.name)")
        return try body(UnsafeRawBufferPointer(start: data.mv_data, count: data.mv_size))
    }

    /// A copy of the value stored under `key`.
    /// The id of the transaction this one reads (a read) or will commit (a write): a read of a store
    /// nothing was ever committed to has id 0.
    package var id: Int { mdb_txn_id(handle) }

    package func get(_ key: [UInt8], in database: Database) throws -> [UInt8]? {
        try withValue(key, in: database) { Array($0) }
    }

    /// Stores `value` under `key`. `append` promises the key sorts after
    /// every key already there (LMDB then skips the tree search).
    package func put(_ key: [UInt8], _ value: [UInt8], in database: Database, append: Bool = false, noDuplicate: Bool = false) throws(StorageError) {
        try key.withUnsafeBytes { key in
            value.withUnsafeBytes { value in
                Result { () throws(StorageError) in try put(key, value, in: database, append: append, noDuplicate: noDuplicate) }
            }
        }.get()
    }

    /// `appendDuplicate` promises, in a sorted-duplicates database, that `value` sorts after the key's values.
    package func put(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, in database: Database, append: Bool = false,
             appendDuplicate: Bool = false, noDuplicate: Bool = false) throws(StorageError) {
        var flags: UInt32 = 0
        if append { flags |= UInt32(MDB_APPEND) }
        if appendDuplicate { flags |= UInt32(MDB_APPENDDUP) }
        if noDuplicate { flags |= UInt32(MDB_NODUPDATA) }
        let code = try store(key, value, in: database, flags: flags)
        if code == MDB_KEYEXIST, noDuplicate { return }
        try StorageError.check(code, "writing to \(database.name)")
    }

    /// Stores `value` under `key` unless `key` is there already; returns
    /// whether it stored it. One tree search, where a lookup then a `put` take two.
    package func insert(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, in database: Database) throws(StorageError) -> Bool {
        let code = try store(key, value, in: database, flags: UInt32(MDB_NOOVERWRITE))
        if code == MDB_KEYEXIST { return false }
        try StorageError.check(code, "writing to \(database.name)")
        return true
    }

    private func store(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, in database: Database,
                       flags: UInt32) throws(StorageError) -> Int32 {
        var keyValue = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var dataValue = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        return evsync_mdb_cursor_put(try writeCursor(database), &keyValue, &dataValue, flags)
    }

    /// Removes `key`; returns whether it was there.
    @discardableResult
    package func delete(_ key: [UInt8], in database: Database) throws(StorageError) -> Bool {
        let code = key.withUnsafeBytes { keyBytes in
            var keyValue = MDB_val(mv_size: keyBytes.count, mv_data: UnsafeMutableRawPointer(mutating: keyBytes.baseAddress))
            return evsync_mdb_del(handle, database.dbi, &keyValue, nil)
        }
        if code == MDB_NOTFOUND { return false }
        try StorageError.check(code, "deleting from \(database.name)")
        return true
    }

    /// Removes `value` of `key` (in a sorted-duplicates database; `key` in any other), if it is there.
    package func delete(_ key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, in database: Database) throws(StorageError) {
        var keyValue = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var dataValue = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        let code = evsync_mdb_del(handle, database.dbi, &keyValue, &dataValue)
        if code == MDB_NOTFOUND { return }
        try StorageError.check(code, "deleting from \(database.name)")
    }

    /// Removes each of `keys` (in ascending order) that is there, through the database's write cursor:
    /// where the next key is on the page of the last, LMDB finds it without a search from the root
    /// (a compaction removes a million events in runs). Returns how many were there.
    @discardableResult
    package func delete(sorted keys: some Sequence<[UInt8]>, in database: Database) throws(StorageError) -> Int {
        let cursor = try writeCursor(database)
        var deleted = 0
        for key in keys {
            let code = key.withUnsafeBytes { keyBytes in
                var keyValue = MDB_val(mv_size: keyBytes.count, mv_data: UnsafeMutableRawPointer(mutating: keyBytes.baseAddress))
                var dataValue = MDB_val()
                return evsync_mdb_cursor_get(cursor, &keyValue, &dataValue, MDB_SET)
            }
            if code == MDB_NOTFOUND { continue }
            try StorageError.check(code, "finding a key in \(database.name)")
            try StorageError.check(evsync_mdb_cursor_del(cursor, 0), "deleting from \(database.name)")
            deleted += 1
        }
        return deleted
    }

    /// Removes every entry of `database`, keeping the database itself.
    package func empty(_ database: Database) throws(StorageError) {
        // LMDB resets the database's cursors itself, the write cursor among them.
        try StorageError.check(evsync_mdb_drop(handle, database.dbi, 0), "emptying \(database.name)")
    }

    /// Deletes `database` from the environment; its handle is closed.
    package func drop(_ database: Database) throws(StorageError) {
        closeWriteCursor(database)
        try StorageError.check(evsync_mdb_drop(handle, database.dbi, 1), "deleting \(database.name)")
    }

    /// How many leaf and branch pages `database` has, as this transaction sees it.
    package func pages(of database: Database) throws(StorageError) -> (leaves: Int, branches: Int) {
        var stat = MDB_stat()
        try StorageError.check(evsync_mdb_stat(handle, database.dbi, &stat), "reading the size of \(database.name)")
        return (stat.ms_leaf_pages, stat.ms_branch_pages)
    }

    /// The bytes of the pages `database`'s tree takes (branches, leaves and overflow pages), as this transaction sees it.
    package func bytes(of database: Database) throws(StorageError) -> Int {
        var stat = MDB_stat()
        try StorageError.check(evsync_mdb_stat(handle, database.dbi, &stat), "reading the size of \(database.name)")
        return (stat.ms_leaf_pages + stat.ms_branch_pages + stat.ms_overflow_pages) * Int(stat.ms_psize)
    }

    /// How many entries `database` holds, as this transaction sees it.
    package func entries(of database: Database) throws(StorageError) -> Int {
        var stat = MDB_stat()
        try StorageError.check(evsync_mdb_stat(handle, database.dbi, &stat), "reading the size of \(database.name)")
        return stat.ms_entries
    }

    /// Whether `database` keeps sorted duplicates (`MDB_DUPSORT`): several values under one key, in order.
    package func hasSortedDuplicates(_ database: Database) throws(StorageError) -> Bool {
        var flags: UInt32 = 0
        try StorageError.check(mdb_dbi_flags(handle, database.dbi, &flags), "reading the flags of \(database.name)")
        return flags & UInt32(MDB_DUPSORT) != 0
    }

    package func cursor(_ database: Database) throws(StorageError) -> Cursor {
        try Cursor(transaction: self, database: database)
    }
}

/// A position in one database, moved with LMDB's cursor operations.
/// Keys and values it returns point into the map: copy what must outlive the transaction.
package final class Cursor {
    private let handle: OpaquePointer
    private let database: Database

    fileprivate init(transaction: Transaction, database: Database) throws(StorageError) {
        var handle: OpaquePointer?
        try StorageError.check(evsync_mdb_cursor_open(transaction.handle, database.dbi, &handle), "opening a cursor on \(database.name)")
        guard let handle else { throw StorageError(code: MDB_PANIC, operation: "opening a cursor") }
        self.handle = handle
        self.database = database
    }

    deinit {
        mdb_cursor_close(handle)
    }

    package typealias Entry = (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)

    fileprivate func move(_ operation: MDB_cursor_op, key: [UInt8]? = nil) throws(StorageError) -> Entry? {
        var keyValue = MDB_val()
        var dataValue = MDB_val()
        let code: Int32
        if let key {
            code = key.withUnsafeBytes { keyBytes in
                keyValue = MDB_val(mv_size: keyBytes.count, mv_data: UnsafeMutableRawPointer(mutating: keyBytes.baseAddress))
                return evsync_mdb_cursor_get(handle, &keyValue, &dataValue, operation)
            }
        } else {
            code = evsync_mdb_cursor_get(handle, &keyValue, &dataValue, operation)
        }
        if code == MDB_NOTFOUND { return nil }
        try StorageError.check(code, "moving a cursor on \(database.name)")
        return (UnsafeRawBufferPointer(start: keyValue.mv_data, count: keyValue.mv_size),
                UnsafeRawBufferPointer(start: dataValue.mv_data, count: dataValue.mv_size))
    }

    package func first() throws(StorageError) -> Entry? { try move(MDB_FIRST) }
    package func last() throws(StorageError) -> Entry? { try move(MDB_LAST) }
    package func next() throws(StorageError) -> Entry? { try move(MDB_NEXT) }
    package func previous() throws(StorageError) -> Entry? { try move(MDB_PREV) }
    /// The first entry whose key is greater than or equal to `key`.
    package func seek(atLeast key: [UInt8]) throws(StorageError) -> Entry? { try move(MDB_SET_RANGE, key: key) }
}

extension Cursor {
    /// Positions on exactly `key`; nil if it is not there.
    package func seek(exactly key: [UInt8]) throws(StorageError) -> Entry? { try move(MDB_SET_KEY, key: key) }
    /// In a sorted-duplicates database: the last value of the current key.
    package func lastDuplicate() throws(StorageError) -> Entry? { try move(MDB_LAST_DUP) }
    /// In a sorted-duplicates database: the previous value of the current key.
    package func previousDuplicate() throws(StorageError) -> Entry? { try move(MDB_PREV_DUP) }
    /// In a sorted-duplicates database: the first value of the next key.
    package func nextKey() throws(StorageError) -> Entry? { try move(MDB_NEXT_NODUP) }

    /// In a sorted-duplicates database: how many values the current key holds (LMDB keeps the number, nothing is read).
    package func duplicateCount() throws(StorageError) -> Int {
        var count = 0
        try StorageError.check(mdb_cursor_count(handle, &count), "counting the values of a key in \(database.name)")
        return count
    }
}
