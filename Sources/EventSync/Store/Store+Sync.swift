/// The store's side of syncing: what is pending, and what the log remembers of past local states.
extension Store {
    /// The next pending operations of an entity, in key order after `after` (which is moved past them).
    func pendingOperations(entity: String, after: inout [UInt8]?, limit: Int) throws -> [RemoteOperation] {
        let prefix = Keys.entityPrefix(entity)
        var lastKey = after
        let operations = try read { transaction in
            let cursor = try transaction.cursor(log.views.outbox)
            var operations: [RemoteOperation] = []
            var entry = try cursor.seek(atLeast: lastKey.map { $0 + [0] } ?? prefix)
            while let current = entry, current.key.starts(with: prefix), operations.count < limit {
                let key = Array(current.key)
                lastKey = key
                let id = String(decoding: key[prefix.count...], as: UTF8.self)
                let projection = try log.views.projection(key: key, in: transaction)
                switch (projection.row, projection.shadow, projection.version) {
                case (let row?, nil, _):
                    operations.append(.create(id: id, fields: row))
                case (let row?, _?, let version?):
                    operations.append(.update(id: id, fields: row, version: version))
                case (nil, _?, let version?):
                    operations.append(.delete(id: id, version: version))
                default:
                    break  // row equals shadow: not really pending (cannot happen in a sound outbox)
                }
                entry = try cursor.next()
            }
            return operations
        }
        after = lastKey
        return operations
    }

    /// The local states of a record since the server last spoke of it (an
    /// acknowledgement, a remote change or a conflict), oldest first; nil
    /// entries are deletions. Found through the history index.
    func unacknowledgedLocalStates(entity: String, id: String, in transaction: Transaction) throws -> [JSONObject?] {
        var projection = RecordProjection()
        var states: [JSONObject?] = []
        for event in try log.history(of: id, in: transaction) where event.entity == entity {
            projection.apply(event)
            if event.origin == .local { states.append(projection.row) } else { states.removeAll() }
        }
        return states
    }

    func readMeta(_ key: String) throws(StoreError) -> String? {
        try read { try meta(key, in: $0) }
    }

    func writeMeta(_ key: String, _ value: String) throws(StoreError) {
        do {
            try environment.write { try setMeta(key, value, in: $0) }
        } catch {
            throw StoreError.wrap(error)
        }
    }
}
