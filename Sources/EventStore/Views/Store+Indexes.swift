import Storage

/// Which indexes a store keeps, and building them: as it opens, for those its schemas declare and it lacks
/// (a store made before, or a schema that gained one), and in `rebuildViews`, which keeps exactly those declared.
extension Store {
    /// The log with its indexes: the `index-entries` database, created if the store has none, and built for every
    /// index `declared` asks for that the store does not keep yet (or keeps under another reading of its field,
    /// renamed or given another default), or that a write by an evsync without indexes left behind. One write
    /// transaction, taken only then; a store opened read-only is read as it is, its queries by scans where its
    /// indexes are missing or behind. Indexes the store keeps and `declared` does not are kept: another app may
    /// read them; `rebuildViews` drops them.
    static func prepareIndexes(_ log: EventLog, declared: [IndexDefinition], environment: Environment,
                               writable: Bool) throws -> EventLog {
        let name = RecordIndexes.databaseName
        let (database, stored, fresh, legacy) = try environment.read { transaction in
            let stored = try transaction.withValue(RecordIndexes.metaKey, in: log.meta) { try IndexDefinition.decode($0) } ?? []
            let through = try transaction.get(RecordIndexes.throughKey, in: log.meta).map { String(decoding: $0, as: UTF8.self) }
            let last = try log.lastSeq(in: transaction)
            return (try environment.existingDatabase(name, flags: RecordIndexes.flags, in: transaction), stored,
                    stored.isEmpty || through == String(last),
                    try environment.existingDatabase(RecordIndexes.legacyDatabaseName, in: transaction))
        }
        // A declared index replaces a kept one of the same field read otherwise.
        let wanted = declared + stored.filter { kept in !declared.contains { $0.entity == kept.entity && $0.field == kept.field } }
        if let database, fresh, legacy == nil || !writable, Set(wanted) == Set(stored) || !writable {
            return log.with(RecordIndexes(database: database, meta: log.meta))
        }
        guard writable else { return log.with(RecordIndexes(database: nil, meta: log.meta)) }
        return try environment.write { transaction in
            if let legacy = try environment.existingDatabase(RecordIndexes.legacyDatabaseName, in: transaction) {
                try transaction.drop(legacy)
                try transaction.delete(RecordIndexes.legacyThroughKey, in: log.meta)
            }
            let database = try environment.openDatabase(name, flags: MDBFlags.create | RecordIndexes.flags, in: transaction)
            let indexed = log.with(RecordIndexes(database: database, meta: log.meta))
            guard !fresh || Set(wanted) != Set(stored) else { return indexed }
            try buildIndexes(wanted, of: indexed, in: transaction)
            return indexed
        }
    }

    /// Empties the `index-entries` database and fills it with the entries of `definitions` from the `records` view.
    private static func buildIndexes(_ definitions: [IndexDefinition], of log: EventLog, in transaction: Transaction) throws {
        guard let database = log.views.indexes.database else { return }
        try setIndexes(definitions, of: log, in: transaction)
        try transaction.empty(database)
        if !definitions.isEmpty {
            let cursor = try transaction.cursor(log.views.records)
            var entry = try cursor.first()
            while let current = entry {
                if let zero = current.key.firstIndex(of: 0),
                   try log.views.indexes.hasIndexes(entityKey: current.key[..<zero], in: transaction),
                   let row = try log.views.row(in: current.value, log: transaction) {
                    try log.views.indexes.update(recordKey: Array(current.key), before: nil, after: row, in: transaction)
                }
                entry = try cursor.next()
            }
        }
        try log.views.indexes.noteKept(through: try log.lastSeq(in: transaction), in: transaction)
    }

    /// Makes `definitions` the store's list of indexes (none: no list).
    static func setIndexes(_ definitions: [IndexDefinition], of log: EventLog, in transaction: Transaction) throws {
        if definitions.isEmpty {
            try transaction.delete(RecordIndexes.metaKey, in: log.meta)
            try transaction.delete(RecordIndexes.throughKey, in: log.meta)
        } else {
            try transaction.put(RecordIndexes.metaKey, IndexDefinition.encode(definitions), in: log.meta)
        }
    }
}

extension EventLog {
    /// This log with its views keeping `indexes`.
    func with(_ indexes: RecordIndexes) -> EventLog {
        EventLog(events: events, views: views.with(indexes), meta: meta)
    }
}
