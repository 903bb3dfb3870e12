import CLMDB

extension Environment {
    /// Writes every database of this environment, as one read snapshot, into `target` (a new, empty
    /// environment), each in key order with `MDB_APPEND`: LMDB then fills each page before it starts the
    /// next. `mdb_env_copy2`'s compacting copy leaves out free pages but keeps each page as full as the
    /// writes left it: after a compaction has deleted most of a tree's entries and rewritten the rest out of
    /// order, that is a third full. Writers in any process go on meanwhile; the target is committed (durably)
    /// every `bytesPerCommit`, so that the copy holds no more than that in memory.
    /// - Returns: the id of the snapshot's transaction (`mdb_txn_id`): the last commit it holds.
    @discardableResult
    package func copyRepacked(into target: Environment, bytesPerCommit: Int = 64 << 20) throws -> Int {
        try read { source in
            var databases = try databaseNames(in: source)[...]
            // The database being copied, and its next entry.
            var copying: (name: String, flags: Int32, cursor: Cursor, next: Cursor.Entry?)?
            var previousKey: [UInt8] = []
            repeat {
                try target.write(durable: true) { destination in
                    var written = 0
                    while written < bytesPerCommit {
                        if copying == nil {
                            guard let name = databases.popFirst() else { return }
                            let database = try openDatabase(name, in: source)
                            var flags: UInt32 = 0
                            try StorageError.check(mdb_dbi_flags(source.handle, database.dbi, &flags), "reading the flags of \(name)")
                            let cursor = try source.cursor(database)
                            copying = (name, Int32(flags), cursor, try cursor.first())
                            previousKey = []
                        }
                        guard let (name, flags, cursor, next) = copying else { return }
                        // Opened (created, the first time) in each commit that writes to it, empty or not.
                        let database = try target.openDatabase(name, flags: flags | MDBFlags.create, in: destination)
                        let sortedDuplicates = flags & MDBFlags.dupSort != 0
                        var entry = next
                        while let (key, value) = entry, written < bytesPerCommit {
                            // A further value of the key just written goes at the end of that key's values.
                            let sameKey = sortedDuplicates && key.elementsEqual(previousKey)
                            try destination.put(key, value, in: database, append: !sameKey, appendDuplicate: sameKey)
                            if sortedDuplicates && !sameKey { previousKey = Array(key) }
                            written += key.count + value.count
                            entry = try cursor.next()
                        }
                        copying = entry == nil ? nil : (name, flags, cursor, entry)
                    }
                }
            } while copying != nil || !databases.isEmpty
            return source.id
        }
    }
}
