import Storage
/// What the log believes the server holds, for `verify --remote`: the last
/// server state and version of each record, read from the `records` view
/// (the same fold as every other view).
extension Store {
    /// The log's projection of each record, by id, as of now (absent ids: an empty projection).
    package func projections(entity: String, ids: [String]) throws(StoreError) -> [RecordProjection] {
        try snapshot { transaction in
            try ids.map { try log.views.projection(entity: entity, id: $0, in: transaction) }
        }
    }

    /// Calls `body` with the id and server version of every record of `entity`
    /// the log holds as live on the server (a shadow and a version), in key order.
    package func forEachRecordLiveOnServer(entity: String, _ body: (String, RemoteVersion) throws -> Void) throws(StoreError) {
        let prefix = Keys.entityPrefix(entity)
        let entityKey = String(decoding: prefix.dropLast(), as: UTF8.self)
        try snapshot { transaction in
            let cursor = try transaction.cursor(log.views.records)
            var entry = try cursor.seek(atLeast: prefix)
            while let current = entry, current.key.starts(with: prefix) {
                // The header says it; a row stored by reference would cost a read of the log for each record.
                if let version = try RecordEntry.serverVersion(current.value) {
                    let keyPart = String(decoding: UnsafeRawBufferPointer(rebasing: current.key[prefix.count...]), as: UTF8.self)
                    try body(try log.recordID(keyPart: keyPart, entityKey: entityKey, in: transaction), version)
                }
                entry = try cursor.next()
            }
        }
    }
}
