/// The databases derived from the log, and how one event updates them.
///
/// - `rows`: `entity\0id` → the record's fields (JSON): the current tables.
/// - `shadow`: `entity\0id` → the server's version and fields as the log last heard them.
/// - `outbox`: `entity\0id` → nothing; present exactly when row and shadow differ (what sync must push).
/// - `history`: `id\0entity` → sorted duplicates, one per event of the record (`seq`, kind, origin).
///
/// All four are rebuilt from the log by `rebuild-views`; they hold nothing
/// the log does not say.
struct ViewDatabases: Sendable {
    let rows: Database
    let shadow: Database
    let outbox: Database
    let history: Database

    static let names = ["rows", "shadow", "outbox", "history"]

    static func open(prefix: String = "", in environment: Environment, transaction: Transaction, create: Bool) throws -> ViewDatabases {
        let createFlag: Int32 = create ? MDBFlags.create : 0
        return ViewDatabases(
            rows: try environment.openDatabase(prefix + "rows", flags: createFlag, in: transaction),
            shadow: try environment.openDatabase(prefix + "shadow", flags: createFlag, in: transaction),
            outbox: try environment.openDatabase(prefix + "outbox", flags: createFlag, in: transaction),
            history: try environment.openDatabase(prefix + "history", flags: createFlag | MDBFlags.dupSort | MDBFlags.dupFixed, in: transaction)
        )
    }

    var all: [Database] { [rows, shadow, outbox, history] }

    // MARK: Reading

    func projection(entity: String, id: String, in transaction: Transaction) throws -> RecordProjection {
        let key = Keys.record(entity: entity, id: id)
        return try projection(key: key, in: transaction)
    }

    func projection(key: [UInt8], in transaction: Transaction) throws -> RecordProjection {
        var projection = RecordProjection()
        projection.row = try transaction.withValue(key, in: rows) { try Self.decodeRow($0) }
        if let (version, fields) = try transaction.withValue(key, in: shadow, { try Self.decodeShadow($0, row: projection.row) }) {
            projection.version = version
            projection.shadow = fields
        }
        return projection
    }

    static func decodeRow(_ bytes: UnsafeRawBufferPointer) throws -> JSONObject {
        guard case .object(let fields) = try JSONParser.parse(bytes) else {
            throw EventDecodingError(reason: "a view row is not a JSON object")
        }
        return fields
    }

    /// Shadow values: the version as 8 big-endian bytes (all ones: never
    /// heard), then the server's fields: nothing if the server has no such
    /// record, `=` when they equal the row (a record in step with the server,
    /// by far the most common, then costs 9 bytes), or their JSON.
    static func encodeShadow(version: Int64?, encodedFields: [UInt8]?) -> [UInt8] {
        var bytes = withUnsafeBytes(of: UInt64(bitPattern: version ?? -1).bigEndian, Array.init)
        if let encodedFields { bytes.append(contentsOf: encodedFields) }
        return bytes
    }

    static let sameAsRow: [UInt8] = [UInt8(ascii: "=")]

    static func decodeShadow(_ bytes: UnsafeRawBufferPointer, row: JSONObject?) throws -> (Int64?, JSONObject?) {
        guard bytes.count >= 8 else { throw EventDecodingError(reason: "a shadow entry is truncated") }
        let raw = Int64(bitPattern: Keys.sequence(from: bytes))
        let version: Int64? = raw == -1 ? nil : raw
        guard bytes.count > 8 else { return (version, nil) }
        if bytes.count == 9, bytes[8] == sameAsRow[0] {
            guard let row else { throw EventDecodingError(reason: "a shadow entry refers to a missing row") }
            return (version, row)
        }
        return (version, try decodeRow(UnsafeRawBufferPointer(rebasing: bytes[8...])))
    }

    /// History values: `seq` (8 bytes, big-endian, so duplicates sort in log order), kind, origin.
    static func historyEntry(_ event: Event) -> [UInt8] {
        var bytes = Keys.sequence(event.seq)
        bytes.append(UInt8(Event.Kind.allCases.firstIndex(of: event.kind) ?? 0))
        bytes.append(event.origin == .local ? 0 : 1)
        return bytes
    }

    // MARK: Writing

    /// Folds one event into the views, in the transaction that appends it.
    /// - Parameter current: the record's projection, when the caller has just read it in this transaction.
    /// - Parameter encodedSet: `event.set` encoded, which is the new row of a local creation.
    func apply(_ event: Event, in transaction: Transaction, current: RecordProjection? = nil, encodedSet: [UInt8]? = nil) throws {
        let key = Keys.record(entity: event.entity, id: event.recordID)
        var projection = try current ?? projection(key: key, in: transaction)
        let before = projection
        projection.apply(event)

        // Encode each state once: a creation's row is its `set`, already
        // encoded; a record in step with the server has equal row and shadow.
        let rowBytes: [UInt8]?
        if let row = projection.row {
            let rowIsSet = event.kind == .created && before.row == nil && before.shadow == nil
            rowBytes = rowIsSet ? encodedSet ?? JSONWriter.encodeObject(row) : JSONWriter.encodeObject(row)
        } else {
            rowBytes = nil
        }
        if let rowBytes {
            try transaction.put(key, rowBytes, in: rows)
        } else if before.row != nil {
            try transaction.delete(key, in: rows)
        }
        // The shadow is rewritten when it changes, and when it stops or starts
        // being stored as "same as the row" (a local edit of a record in step).
        let wasSameAsRow = before.shadow != nil && before.shadow == before.row
        let isSameAsRow = projection.shadow != nil && projection.shadow == projection.row
        if (before.shadow, before.version) != (projection.shadow, projection.version) || wasSameAsRow != isSameAsRow {
            let fields = projection.shadow.map { isSameAsRow ? Self.sameAsRow : JSONWriter.encodeObject($0) }
            try transaction.put(key, Self.encodeShadow(version: projection.version, encodedFields: fields), in: shadow)
        }
        switch (before.isPending, projection.isPending) {
        case (false, true): try transaction.put(key, [], in: outbox)
        case (true, false): try transaction.delete(key, in: outbox)
        default: break
        }
        try transaction.put(Keys.history(entity: event.entity, id: event.recordID), Self.historyEntry(event), in: history)
    }

    /// Applies events in record order (stable: log order within a record); see `EventLog.Appender.append(contentsOf:)`.
    func apply(sortedByRecord events: [(event: Event, encodedSet: [UInt8]?)], in transaction: Transaction) throws {
        // Sort light keys, not the events: comparing events would copy them.
        var order = events.indices.map { (id: events[$0].event.recordID, entity: events[$0].event.entity, index: $0) }
        order.sort { a, b in (a.id, a.entity, a.index) < (b.id, b.entity, b.index) }
        for (_, _, index) in order {
            try apply(events[index].event, in: transaction, encodedSet: events[index].encodedSet)
        }
    }

}
