extension Store {
    /// The ids of an entity's records that the log says the server holds (a
    /// shadow: pulled, or pushed and acknowledged), for a remote that keeps
    /// no tombstones and finds its deletions by comparing id sets.
    package func serverHeldIDs(entity: String) throws(StoreError) -> [String] {
        try read { transaction in
            let prefix = Keys.entityPrefix(entity)
            let entityKey = String(decoding: prefix.dropLast(), as: UTF8.self)
            let cursor = try transaction.cursor(log.views.records)
            var ids: [String] = []
            var entry = try cursor.seek(atLeast: prefix)
            while let current = entry, current.key.starts(with: prefix) {
                if try RecordEntry.hasShadow(current.value) {
                    let keyPart = String(decoding: UnsafeRawBufferPointer(rebasing: current.key[prefix.count...]), as: UTF8.self)
                    ids.append(try log.recordID(keyPart: keyPart, entityKey: entityKey, in: transaction))
                }
                entry = try cursor.next()
            }
            return ids
        }
    }
}
