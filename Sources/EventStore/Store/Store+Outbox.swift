import Storage

/// The outbox read record by record: what `status`, `syncState` and waiting for a sync all count, from one walk.
extension Store {
    /// A record waiting in the outbox, as its history tells it.
    struct OutboxRecord {
        /// The entity as the outbox keys it (lower-cased).
        let entityKey: String
        let id: String
        /// Its local events since the server's last word about it (a skip or a refusal is not one).
        var unacknowledged = 0
        /// The oldest of them; nil when the record is pending from a conflict's merge alone.
        var oldestUnacknowledged: UInt64?
        /// The server refused its last push, and nothing changed here since.
        var refused: Bool { refusal != nil }
        /// The `rejected` event that says so.
        var refusal: UInt64?
    }

    /// Calls `body` with each record of the outbox, in key order.
    func forEachOutboxRecord(in transaction: Transaction, _ body: (OutboxRecord) throws -> Void) throws {
        let outbox = try transaction.cursor(log.views.outbox)
        let history = try transaction.cursor(log.views.history)
        var entry = try outbox.first()
        while let current = entry, let (entity, id) = Keys.split(current.key) {
            try body(try outboxRecord(entityKey: entity, id: id, history: history))
            entry = try outbox.next()
        }
    }

    /// The record of the outbox under `entityKey` and `id`, as its history (read through `history`) tells it.
    func outboxRecord(entityKey: String, id: String, history: Cursor) throws -> OutboxRecord {
        var record = OutboxRecord(entityKey: entityKey, id: id)
        guard try history.seek(exactly: Keys.history(entity: entityKey, id: id)) != nil else { return record }
        let rejected = ViewDatabases.kindCodes[.rejected]
        var dup = try history.lastDuplicate()
        // Newest first, back to the server's last word; a history entry is seq (8 bytes), kind, origin (0: local).
        while let value = dup?.value, value.count == 10, value[9] == 0 || Self.noteCodes.contains(value[8]) {
            if value[9] == 0 {
                record.unacknowledged += 1
                record.oldestUnacknowledged = Keys.sequence(from: value)
            } else if value[8] == rejected, record.unacknowledged == 0, record.refusal == nil {
                record.refusal = Keys.sequence(from: value)
            }
            dup = try history.previousDuplicate()
        }
        return record
    }

    private static let noteCodes = Set(Event.Kind.allCases.filter(\.isNote).compactMap { ViewDatabases.kindCodes[$0] })

    /// Entity names by the outbox's lower-cased keys (a name the schemas do not know stays as keyed).
    func entityNames() -> [String: String] {
        Dictionary(schemas.entities.map { ($0.name.lowercased(), $0.name) }, uniquingKeysWith: { first, _ in first })
    }
}
