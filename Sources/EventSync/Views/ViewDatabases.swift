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
        var bytes: [UInt8] = []
        bytes.reserveCapacity(8 + (encodedFields?.count ?? 0))
        withUnsafeBytes(of: UInt64(bitPattern: version ?? -1).bigEndian) { bytes.append(contentsOf: $0) }
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
        historyEntry(seq: event.seq, kind: event.kind, origin: event.origin)
    }

    static func historyEntry(seq: UInt64, kind: Event.Kind, origin: Event.Origin) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(10)
        withUnsafeBytes(of: seq.bigEndian) { bytes.append(contentsOf: $0) }
        bytes.append(kindCodes[kind] ?? 0)
        bytes.append(origin == .local ? 0 : 1)
        return bytes
    }

    /// A kind's byte in history entries: its position among `Event.Kind`'s cases.
    private static let kindCodes = Dictionary(uniqueKeysWithValues: Event.Kind.allCases.enumerated().map { ($1, UInt8($0)) })

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

    /// Adds a record the store has never heard of, in step with the server:
    /// its row, its shadow ("same as the row") and its first history entry,
    /// what folding its remote creation would write.
    /// - Returns: false, having written nothing, when the store has a row or a shadow for it.
    func insertInStep(entity: String, id: String, fields: UnsafeRawBufferPointer, version: Int64, seq: UInt64,
                      in transaction: Transaction) throws -> Bool {
        let key = Keys.record(entity: entity, id: id)
        // Each insertion both checks that the entry is new and adds it: one tree search, not two.
        let inStep = Self.encodeShadow(version: version, encodedFields: Self.sameAsRow)
        guard try key.withUnsafeBytes({ key in try inStep.withUnsafeBytes { try transaction.insert(key, $0, in: shadow) } }) else {
            return false
        }
        guard try key.withUnsafeBytes({ try transaction.insert($0, fields, in: rows) }) else {
            // A row without a shadow: created here, and perhaps pushed by a sync that died.
            _ = try transaction.delete(key, in: shadow)
            return false
        }
        try transaction.put(Keys.history(entity: entity, id: id), Self.historyEntry(seq: seq, kind: .created, origin: .remote),
                            in: history)
        return true
    }

    /// Folds local creations in, in record order (a sweep, as above). A
    /// creation of a record new to the store needs no decoding: its row is
    /// its encoded fields, and it is pending. One of a record deleted here but
    /// still on the server takes the general fold, which compares with the shadow.
    /// - Returns: the index of the first creation (in input order) whose
    ///   record already exists; such creations are skipped.
    func apply(_ creations: EncodedCreations, in transaction: Transaction) throws -> Int? {
        // A store that never synced has no shadow to look records up in.
        let shadowIsEmpty = try transaction.cursor(shadow).first() == nil
        let noValue = UnsafeRawBufferPointer(start: nil, count: 0)
        return try creations.bytes.withUnsafeBytes { bytes in
            func part(_ range: Range<Int>) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[range]) }
            var firstTaken: Int?
            for index in Keys.sortedIndices(of: creations.entries.map(\.key), in: bytes) {
                let entry = creations.entries[index]
                let key = part(entry.key)
                if !shadowIsEmpty, try transaction.withValue(key, in: shadow, { _ in true }) != nil {
                    guard try transaction.withValue(key, in: rows, { _ in true }) == nil else {
                        firstTaken = min(firstTaken ?? index, index)
                        continue
                    }
                    var encodedSet: [UInt8]?
                    let event = try EventCoding.decode(part(entry.event), encodedSet: &encodedSet)
                    try apply(event, in: transaction, encodedSet: encodedSet)
                } else if try transaction.insert(key, part(entry.row), in: rows) {
                    try transaction.put(key, noValue, in: outbox)
                    try Self.historyEntry(seq: entry.seq, kind: .created, origin: .local).withUnsafeBytes {
                        try transaction.put(part(entry.historyKey), $0, in: history)
                    }
                } else {
                    firstTaken = min(firstTaken ?? index, index)
                }
            }
            return firstTaken
        }
    }

    /// Applies events in record order (stable: log order within a record); see `EventLog.Appender.append(contentsOf:)`.
    func apply(sortedByRecord events: [(event: Event, encodedSet: [UInt8]?)], in transaction: Transaction) throws {
        // Sort keys, not the events: comparing events would copy them.
        var keys: [UInt8] = []
        var ranges: [Range<Int>] = []
        ranges.reserveCapacity(events.count)
        for (event, _) in events {
            let start = keys.count
            keys.append(contentsOf: Keys.record(entity: event.entity, id: event.recordID))
            ranges.append(start..<keys.count)
        }
        for index in keys.withUnsafeBytes({ Keys.sortedIndices(of: ranges, in: $0) }) {
            try apply(events[index].event, in: transaction, encodedSet: events[index].encodedSet)
        }
    }

}
