import Storage
/// The databases derived from the log, and how one event updates them.
///
/// - `records`: `entity\0id` → the record's row (its fields here: the current
///   tables), its shadow (the server's fields as the log last heard them) and
///   the server's version; see `RecordEntry`.
/// - `outbox`: `entity\0id` → nothing; present exactly when row and shadow differ (what sync must push).
/// - `history`: `id\0entity` → sorted duplicates, one per event of the record (`seq`, kind, origin).
/// - `indexes`: the fields the schemas index, `entity\0field\0value id` → id (`IndexKeys`, `RecordIndexes`),
///   in a store that has it.
///
/// All are rebuilt from the log by `rebuild-views`; they hold nothing
/// the log does not say.
///
/// Reading takes a second transaction, `log`, for the rows stored by
/// reference to an event (`RecordEntry`): the views' own, except for views
/// replayed into a scratch environment, whose log is the store's.
struct ViewDatabases: Sendable {
    let records: Database
    let outbox: Database
    let history: Database
    /// The log the rows stored by reference are read from.
    let events: Database
    let indexes: RecordIndexes

    static let names = ["records", "outbox", "history"]

    /// - Parameter events: the log (of this environment or, for scratch views, of the store's).
    /// - Parameter indexes: the indexes' database, and where the list of them is kept.
    static func open(in environment: Environment, transaction: Transaction, create: Bool, events: Database,
                     indexes: RecordIndexes) throws -> ViewDatabases {
        let createFlag: Int32 = create ? MDBFlags.create : 0
        return ViewDatabases(
            records: try environment.openDatabase("records", flags: createFlag, in: transaction),
            outbox: try environment.openDatabase("outbox", flags: createFlag, in: transaction),
            history: try environment.openDatabase("history", flags: createFlag | MDBFlags.dupSort | MDBFlags.dupFixed, in: transaction),
            events: events,
            indexes: indexes
        )
    }

    /// These views with `indexes` instead.
    func with(_ indexes: RecordIndexes) -> ViewDatabases {
        ViewDatabases(records: records, outbox: outbox, history: history, events: events, indexes: indexes)
    }

    /// Reads what an event sets from the log, in `log`: the rows stored by reference.
    func sets(in log: Transaction) -> RecordEntry.SetReader {
        let events = events
        return { seq in
            do {
                guard let fields = try Keys.sequence(seq).withUnsafeBytes({ key in
                    try log.withValue(key, in: events) { try EventCoding.setFields(of: $0) }
                }) else {
                    throw EventDecodingError(reason: "a view entry names event \(seq), which the log does not have", inViews: true)
                }
                return fields
            } catch var error as EventDecodingError where !error.inViews {
                error.seq = seq
                throw error
            }
        }
    }

    /// The row of the record whose `records` entry is `entry`; nil if it has none.
    func row(in entry: UnsafeRawBufferPointer, log: Transaction) throws -> JSONObject? {
        try RecordEntry.row(in: entry, sets: sets(in: log))
    }

    /// Hands the row of the record under `key` to `read` with its fields where they are stored, so that
    /// only those `read` asks for are decoded (`JSONMembersInPlace`): a typed read. Returns false, calling
    /// nothing, if the record has no row here. A row that cannot be read in place (an event of format 1, an
    /// escaped key, bytes that do not parse) is read as `row(in:log:)` reads it, with its errors.
    func withRow(key: UnsafeRawBufferPointer, in transaction: Transaction, _ read: (any JSONMembers) throws -> Void) throws -> Bool {
        try transaction.withValue(key, in: records) { entry in
            guard let stored = try RecordEntry.storedRow(in: entry) else { return false }
            do {
                if try readInPlace(stored, log: transaction, read) { return true }
            } catch is EventDecodingError {
                // Damaged: read again below, which says what is wrong and where.
            } catch is JSONParseError {
            }
            guard let row = try RecordEntry.row(in: entry, sets: sets(in: transaction)) else { return false }
            try read(row)
            return true
        } ?? false
    }

    /// Reads a row's fields in place; false, having called nothing, when they cannot be.
    private func readInPlace(_ stored: RecordEntry.StoredRow, log: Transaction, _ read: (any JSONMembers) throws -> Void) throws -> Bool {
        switch stored {
        case .fields(let json):
            var members = JSONMembersInPlace()
            guard try members.layer(json) else { return false }
            try read(members)
            return true
        case .setsOf(let seqs):
            return try layer(seqs[...], onto: JSONMembersInPlace(), log: log, read)
        }
    }

    /// Layers the `set` of each event in `seqs` onto `members`, each looked up inside the lookup of the one
    /// before (where its bytes are valid), then reads them.
    private func layer(_ seqs: ArraySlice<UInt64>, onto members: JSONMembersInPlace, log: Transaction,
                       _ read: (any JSONMembers) throws -> Void) throws -> Bool {
        guard let seq = seqs.first else {
            try read(members)
            return true
        }
        // The log's key (`Keys.sequence`) in place rather than in an array: a lookup for every record read.
        let layered = try withUnsafeBytes(of: seq.bigEndian) { key in
            try log.withValue(key, in: events) { event in
                guard let set = try EventCoding.encodedSet(of: event) else { return false }
                var members = members
                if !set.isEmpty { guard try members.layer(set) else { return false } }
                return try layer(seqs.dropFirst(), onto: members, log: log, read)
            }
        }
        return layered ?? false
    }

    var all: [Database] { [records, outbox, history] + (indexes.database.map { [$0] } ?? []) }

    // MARK: Reading

    func projection(entity: String, id: String, in transaction: Transaction) throws -> RecordProjection {
        try projection(key: Keys.record(entity: entity, id: id), in: transaction)
    }

    /// - Parameter log: where the log is read (default: `transaction`).
    func projection(key: [UInt8], in transaction: Transaction, log: Transaction? = nil) throws -> RecordProjection {
        try transaction.withValue(key, in: records) { try RecordEntry.decode($0, sets: sets(in: log ?? transaction)) } ?? RecordProjection()
    }

    /// Whether the record under `key` has a row here, not just a shadow or a version.
    private func hasRow(_ key: UnsafeRawBufferPointer, in transaction: Transaction) throws -> Bool {
        try transaction.withValue(key, in: records) { try RecordEntry.hasRow($0) } ?? false
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

    /// A kind's byte in history entries: its position among `Event.Kind`'s cases (new kinds go last).
    static let kindCodes = Dictionary(uniqueKeysWithValues: Event.Kind.allCases.enumerated().map { ($1, UInt8($0)) })

    // MARK: Writing

    /// Folds one event into the views, in the transaction that appends it.
    /// - Parameter current: the record's projection, when the caller has just read it in this transaction.
    /// - Parameter encodedSet: `event.set` encoded, which is the new row of a local creation.
    /// - Parameter log: where the log is read (default: `transaction`).
    func apply(_ event: Event, in transaction: Transaction, current: RecordProjection? = nil, encodedSet: [UInt8]? = nil,
               log: Transaction? = nil) throws {
        if event.kind.isNote {
            // Only `history` knows of a skipped record or a refused push; a skipped one without a usable id has no entry to ask for.
            if !event.recordID.isEmpty {
                try transaction.put(Keys.history(entity: event.entity, id: event.recordID), Self.historyEntry(event), in: history)
            }
            return
        }
        let key = Keys.record(entity: event.entity, id: event.recordID)
        var projection = try current ?? projection(key: key, in: transaction, log: log)
        let before = projection
        projection.apply(event)

        if projection.row != before.row {
            try indexes.update(recordKey: key, before: before.row, after: projection.row, in: transaction)
        }
        if projection != before {
            // A creation's row is its `set`, and so is a baseline's (of a record that exists).
            let rowIsSet = before.row == nil && before.shadow == nil
                && (event.kind == .created || (event.kind == .baseline && event.local != .absent))
            let references = rowIsSet ? [event.seq] : try rowReferences(after: event, key: key, before: before, now: projection, in: transaction)
            if let entry = RecordEntry.encode(projection, encodedRow: rowIsSet ? encodedSet : nil, rowIsSetsOf: references) {
                try transaction.put(key, entry, in: records)
            } else {
                try transaction.delete(key, in: records)
            }
        }
        switch (before.isPending, projection.isPending) {
        case (false, true): try transaction.put(key, [], in: outbox)
        case (true, false): try transaction.delete(key, in: outbox)
        default: break
        }
        try transaction.put(Keys.history(entity: event.entity, id: event.recordID), Self.historyEntry(event), in: history)
    }

    /// The events whose `set`s, folded, are the record's row after `event`
    /// (see `RecordEntry`); none if its row is to be stored as a copy. A
    /// creation's row is its `set`; a row stored by reference stays so when
    /// `event` leaves it as it was, or when `event` only sets fields on it.
    private func rowReferences(after event: Event, key: [UInt8], before: RecordProjection, now: RecordProjection,
                               in transaction: Transaction) throws -> [UInt64] {
        guard let row = now.row, let previous = before.row else { return [] }
        let unchanged = row == previous
        guard unchanged || (event.kind == .updated && event.unset.isEmpty && !event.set.isEmpty) else { return [] }
        guard let references = try transaction.withValue(key, in: records, { try RecordEntry.rowReferences(in: $0) }) ?? nil else { return [] }
        if unchanged { return references }
        guard references.count < RecordEntry.maxReferences, row == previous.merging(event.set, uniquingKeysWith: { _, set in set }) else { return [] }
        return references + [event.seq]
    }

    /// Adds a record the store has never heard of, in step with the server:
    /// its entry and its first history entry, what folding its remote creation would write.
    /// - Parameter entry: its `RecordEntry` (`RecordEntry.appendInStep`).
    /// - Returns: false, having written nothing, when the store has an entry for it.
    /// - Parameter fields: its fields' JSON, read only when its entity has indexes.
    func insertInStep(entity: String, id: String, entry: UnsafeRawBufferPointer, fields: UnsafeRawBufferPointer, seq: UInt64,
                      in transaction: Transaction) throws -> Bool {
        // The insertion both checks that the record is new and adds it: one tree search, not two.
        let key = Keys.record(entity: entity, id: id)
        guard try key.withUnsafeBytes({ try transaction.insert($0, entry, in: records) }) else {
            return false
        }
        if try indexes.hasIndexes(entityKey: Keys.entityPrefix(entity).dropLast(), in: transaction) {
            try indexes.update(recordKey: key, before: nil, after: RecordEntry.decodeFields(fields), in: transaction)
        }
        try transaction.put(Keys.history(entity: entity, id: id), Self.historyEntry(seq: seq, kind: .created, origin: .remote),
                            in: history)
        return true
    }

    /// Folds local creations in, in record order (a sweep, as above). A
    /// creation of a record new to the store needs no decoding: its entry is
    /// encoded already, and it is pending. One of a record deleted here but
    /// still on the server takes the general fold, which compares with the shadow.
    /// - Returns: the index of the first creation (in input order) whose
    ///   record already exists; such creations are skipped.
    func apply(_ creations: EncodedCreations, in transaction: Transaction) throws -> Int? {
        let noValue = UnsafeRawBufferPointer(start: nil, count: 0)
        // Looked up once: an import folds a chunk of thousands of creations here.
        let indexed = try indexes.definitions(in: transaction)
        return try creations.bytes.withUnsafeBytes { bytes in
            func part(_ range: Range<Int>) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[range]) }
            var firstTaken: Int?
            for index in Keys.sortedIndices(of: creations.entries.map(\.key), in: bytes) {
                let entry = creations.entries[index]
                let key = part(entry.key)
                if try transaction.insert(key, part(entry.entry), in: records) {
                    try transaction.put(key, noValue, in: outbox)
                    if !indexed.isEmpty, let zero = key.firstIndex(of: 0), indexed[String(decoding: key[..<zero], as: UTF8.self)] != nil {
                        try indexes.update(recordKey: key, before: nil, after: EventCoding.setFields(of: part(entry.event)), in: transaction)
                    }
                    try Self.historyEntry(seq: entry.seq, kind: .created, origin: .local).withUnsafeBytes {
                        try transaction.put(part(entry.historyKey), $0, in: history)
                    }
                } else if try !hasRow(key, in: transaction) {
                    var encodedSet: [UInt8]?
                    let event = try EventCoding.decode(part(entry.event), encodedSet: &encodedSet)
                    try apply(event, in: transaction, encodedSet: encodedSet)
                } else {
                    firstTaken = min(firstTaken ?? index, index)
                }
            }
            return firstTaken
        }
    }

    /// Applies events in record order (stable: log order within a record); see `EventLog.Appender.append(contentsOf:)`.
    /// - Parameter log: where the log is read (default: `transaction`).
    func apply(sortedByRecord events: [(event: Event, encodedSet: [UInt8]?)], in transaction: Transaction, log: Transaction? = nil) throws {
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
            try apply(events[index].event, in: transaction, encodedSet: events[index].encodedSet, log: log)
        }
    }

}
