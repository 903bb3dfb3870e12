import Storage
/// The append-only log: `seq` (8 bytes, big-endian) → the event (`EventCoding`).
///
/// Appending assigns the next sequence number inside the write transaction
/// (LMDB allows one writer at a time, across processes), writes the event
/// and folds it into the views in that same transaction, so the log and the
/// views can never disagree after a crash.
struct EventLog: Sendable {
    let events: Database
    let views: ViewDatabases
    /// Where the compactions' seals are listed (`archivedRanges`): the gaps they leave are not damage.
    let meta: Database

    /// Appends events within one write transaction, numbering them as it goes.
    struct Appender {
        let log: EventLog
        let transaction: Transaction
        private(set) var nextSeq: UInt64
        /// The time of the last event: no event is stamped earlier than the one before it (a clock set
        /// back would otherwise give one time several points in the log); see `Store.seq(at:in:)`.
        private(set) var lastAt: Int64
        /// Where `appendServerCreation` encodes, kept from one event to the next.
        private var encoded: [UInt8] = []
        /// Where `appendServerCreation` builds the record's view entry, likewise.
        private var entry: [UInt8] = []
        /// The `lastAt` for which `runAhead` found no run: a clock set back stays behind every event this
        /// transaction appends after, and a pull appending thousands must not read the last 1,000 again for each.
        private var noRunAheadOf: Int64?

        init(log: EventLog, transaction: Transaction) throws {
            self.log = log
            self.transaction = transaction
            let last = try log.lastSeq(in: transaction)
            self.nextSeq = last + 1
            self.lastAt = try log.at(seq: last, in: transaction) ?? .min
        }

        /// `at`, or the last event's time if that is later: a clock set back never gives one time several
        /// points in the log. Unless the clock had run ahead instead: when the clock reads more than
        /// `clockTolerance` behind the last event but no earlier than the events before a short run of the
        /// last ones, it is that run whose times are wrong (made while the clock ran ahead, since put right).
        /// The run is marked misstamped (`MisstampedEvents`) and `at` is kept: one event stamped a year ahead
        /// must not stamp every later event a year ahead too.
        mutating func stamp(_ at: Int64) throws -> Int64 {
            guard at < lastAt else { return at }
            guard lastAt - at > Self.clockTolerance, noRunAheadOf != lastAt else { return lastAt }
            guard let run = try runAhead(of: at) else {
                noRunAheadOf = lastAt
                return lastAt
            }
            var misstamped = try log.misstamped(in: transaction)
            misstamped.insert(run.seqs)
            try log.setMisstamped(misstamped, in: transaction)
            lastAt = run.before
            return at
        }

        /// How far behind the last event the clock may read and still be the one that is wrong (set back a
        /// little, stepped by NTP): the events keep their times and the new one takes the last one's.
        static let clockTolerance: Int64 = 600_000

        /// The most events a run made while the clock ran ahead may hold; a longer one is taken for a clock
        /// set back now (whose events are then stamped as the last one), since only a short run is looked at.
        static let longestRunAhead: UInt64 = 1000

        /// The last events stamped after `now`, when the event before them is not: their seqs and that event's time.
        private func runAhead(of now: Int64) throws -> (seqs: ClosedRange<UInt64>, before: Int64)? {
            let last = nextSeq - 1
            let misstamped = try log.misstamped(in: transaction)
            var seq = last
            while seq > 0, last - seq < Self.longestRunAhead {
                let at = try log.effectiveTime(of: seq, misstamped: misstamped) { try log.at(seq: $0, in: transaction) }
                // An archived event (no time here) ends the search: nothing is marked.
                guard let at else { return nil }
                if at <= now { return seq < last ? ((seq + 1)...last, at) : nil }
                seq -= 1
            }
            return nil
        }

        /// Appends `event` (its `seq` is assigned here) and returns it as stored.
        /// - Parameter current: the record's projection, if the caller read it in this transaction.
        @discardableResult
        mutating func append(_ event: Event, current: RecordProjection? = nil) throws -> Event {
            var event = event
            event.seq = nextSeq
            event.at = try stamp(event.at)
            lastAt = event.at
            // The fields are encoded once, for the event and (for a creation) the view row.
            let encodedSet = event.set.isEmpty ? nil : JSONWriter.encodeObject(event.set)
            try transaction.put(Keys.sequence(event.seq), EventCoding.encode(event, encodedSet: encodedSet), in: log.events, append: true)
            try log.views.apply(event, in: transaction, current: current, encodedSet: encodedSet)
            nextSeq += 1
            return event
        }

        /// Appends the creation of a record the store has never heard of, as
        /// the server holds it: no fold, its fields are already in canonical
        /// form, and they become both its row and its shadow (stored by
        /// reference to the event). The bulk of a first pull.
        /// - Returns: false, having appended nothing, when the store has the
        ///   record (it has an entry in the views): the caller folds it the general way.
        mutating func appendServerCreation(_ event: Event, fields: UnsafeRawBufferPointer) throws -> Bool {
            guard let version = event.version, event.kind == .created, event.origin == .remote else { return false }
            entry.removeAll(keepingCapacity: true)
            RecordEntry.appendInStep(version: version, seq: nextSeq, to: &entry)
            let (views, seq, transaction) = (log.views, nextSeq, transaction)
            guard try entry.withUnsafeBytes({
                try views.insertInStep(entity: event.entity, id: event.recordID, entry: $0, fields: fields, seq: seq, in: transaction)
            }) else { return false }
            var stored = event
            stored.seq = nextSeq
            stored.at = try stamp(event.at)
            lastAt = stored.at
            encoded.removeAll(keepingCapacity: true)
            EventCoding.write(stored, encodedSet: fields, to: &encoded)
            try encoded.withUnsafeBytes { value in
                try withUnsafeBytes(of: nextSeq.bigEndian) { try transaction.put($0, value, in: log.events, append: true) }
            }
            nextSeq += 1
            return true
        }

        /// Appends local creations encoded ahead of time, numbered from
        /// `nextSeq` on: to the log in order, then to the views in record
        /// order (see `ViewDatabases.apply(_:in:)`).
        /// - Returns: the first creation, in input order, whose record already
        ///   exists (in the store or earlier in `creations`), which the views
        ///   skipped: the caller must then abort the transaction.
        mutating func append(_ creations: EncodedCreations) throws -> EncodedCreations.Entry? {
            try creations.bytes.withUnsafeBytes { bytes in
                for entry in creations.entries {
                    precondition(entry.seq == nextSeq, "a creation encoded as event \(entry.seq) appended as \(nextSeq)")
                    try withUnsafeBytes(of: nextSeq.bigEndian) { key in
                        try transaction.put(key, UnsafeRawBufferPointer(rebasing: bytes[entry.event]), in: log.events, append: true)
                    }
                    nextSeq += 1
                }
            }
            return try log.views.apply(creations, in: transaction).map { creations.entries[$0] }
        }
    }

    func lastSeq(in transaction: Transaction) throws -> UInt64 {
        let cursor = try transaction.cursor(events)
        guard let last = try cursor.last() else { return 0 }
        return Keys.sequence(from: last.key)
    }

    /// Event `seq`'s time, read without decoding the rest of it; nil if there is no such event.
    func at(seq: UInt64, in transaction: Transaction) throws -> Int64? {
        guard seq > 0 else { return nil }
        return try Keys.sequence(seq).withUnsafeBytes { key in
            try transaction.withValue(key, in: events) { value in try Self.decoding(seq: seq) { try EventCoding.at(of: value) } }
        }
    }

    /// Calls `body` with each event's seq and time, oldest first, until it returns false, reading no more of each.
    func forEachTime(in transaction: Transaction, _ body: (UInt64, Int64) -> Bool) throws {
        let cursor = try transaction.cursor(events)
        var entry = try cursor.first()
        while let current = entry {
            let seq = Keys.sequence(from: current.key)
            guard body(seq, try Self.decoding(seq: seq) { try EventCoding.at(of: current.value) }) else { return }
            entry = try cursor.next()
        }
    }

    /// `decode`, with an `EventDecodingError` naming event `seq`.
    private static func decoding<T>(seq: UInt64, _ decode: () throws -> T) throws -> T {
        do {
            return try decode()
        } catch var error as EventDecodingError {
            error.seq = seq
            throw error
        }
    }

    func event(seq: UInt64, in transaction: Transaction) throws -> Event? {
        try Keys.sequence(seq).withUnsafeBytes { key in
            try transaction.withValue(key, in: events) { value in
                var encodedSet: [UInt8]?
                return try Self.decode(key: key, value: value, expecting: seq, encodedSet: &encodedSet)
            }
        }
    }

    /// Calls `body` with each event from `seq` on, in order, until it returns false.
    /// - Throws: `EventDecodingError` naming the first event that is damaged or missing.
    func forEach(from seq: UInt64 = 1, in transaction: Transaction, _ body: (Event) throws -> Bool) throws {
        let cursor = try transaction.cursor(events)
        var entry = try cursor.seek(atLeast: Keys.sequence(seq))
        var expected = try expectation(from: seq, in: transaction)
        var encodedSet: [UInt8]?
        while let current = entry {
            guard try body(try Self.decode(key: current.key, value: current.value, expecting: expected.next(current.key), encodedSet: &encodedSet))
            else { return }
            entry = try cursor.next()
        }
    }

    /// Calls `body` with each event of `kind`, in order, decoding only those
    /// (`EventCoding.kind(of:)`): a scan for conflicts reads the header of the rest.
    /// - Throws: `EventDecodingError` naming the first event that is damaged or missing.
    func forEach(kind: Event.Kind, in transaction: Transaction, _ body: (Event) throws -> Void) throws {
        let cursor = try transaction.cursor(events)
        var entry = try cursor.seek(atLeast: Keys.sequence(1))
        var expectation = try expectation(from: 1, in: transaction)
        var encodedSet: [UInt8]?
        while let current = entry {
            // Its key first, so that a gap in the log is found whatever the kinds.
            let expected = expectation.next(current.key)
            let seq = try Self.checkKey(current.key, expecting: expected)
            let matches: Bool
            do {
                matches = try EventCoding.kind(of: current.value) == kind
            } catch var error as EventDecodingError {
                error.seq = seq
                throw error
            }
            if matches {
                try body(try Self.decode(key: current.key, value: current.value, expecting: expected, encodedSet: &encodedSet))
            }
            entry = try cursor.next()
        }
    }

    /// The seq ranges that compactions moved to archive segments, from `meta` (`Store.archiveSeals`).
    func archivedRanges(in transaction: Transaction) throws -> ArchivedRanges {
        guard let bytes = try transaction.get(Array(ArchivedRanges.metaKey.utf8), in: meta) else { return ArchivedRanges() }
        return ArchivedRanges(decoding: bytes)
    }

    /// The seq each event from `seq` on should have, allowing for what compactions archived.
    func expectation(from seq: UInt64, in transaction: Transaction) throws -> LogExpectation {
        LogExpectation(next: seq, archived: try archivedRanges(in: transaction))
    }

    /// Decodes the event stored under `key`, checking that it is the one
    /// expected there: its key is `expected` (the log has no gap), and the
    /// event says it is that event.
    /// - Throws: `EventDecodingError` naming the damaged (or missing) event's seq.
    static func decode(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, expecting expected: UInt64?,
                       encodedSet: inout [UInt8]?) throws -> Event {
        let seq = try checkKey(key, expecting: expected)
        let event: Event
        do {
            event = try EventCoding.decode(value, encodedSet: &encodedSet)
        } catch var error as EventDecodingError {
            error.seq = seq
            throw error
        }
        guard event.seq == seq else {
            throw EventDecodingError(reason: "event stored as \(seq) says it is event \(event.seq)", seq: seq)
        }
        return event
    }

    /// The seq a log key spells, checked to be `expected` (the log has no gap) when given.
    @discardableResult
    static func checkKey(_ key: UnsafeRawBufferPointer, expecting expected: UInt64?) throws(EventDecodingError) -> UInt64 {
        guard key.count == 8 else {
            throw EventDecodingError(reason: "the log has a key of \(key.count) bytes, not 8", seq: expected)
        }
        let seq = Keys.sequence(from: key)
        if let expected, seq != expected {
            throw EventDecodingError(reason: seq > expected ? "event is missing (the log goes on at event \(seq))"
                                                            : "event is missing (the log has event \(seq) in its place)",
                                     seq: expected)
        }
        return seq
    }

    /// The ids of the records of `entity` that have events after `seq`, each
    /// once, in the order of their first such event. Decodes only that
    /// entity's events (see `EventCoding.isEvent`), so other entities' cost next to nothing.
    func recordIDs(of entity: String, after seq: UInt64, in transaction: Transaction) throws -> [String] {
        let name = Array(entity.utf8)
        var scratch: [UInt8] = []
        var encodedSet: [UInt8]?
        var ids: [String] = []
        var seen: Set<String> = []
        let cursor = try transaction.cursor(events)
        var entry = try cursor.seek(atLeast: Keys.sequence(seq + 1))
        while let current = entry {
            do {
                if try EventCoding.isEvent(current.value, of: name, scratch: &scratch) {
                    let event = try Self.decode(key: current.key, value: current.value, expecting: nil, encodedSet: &encodedSet)
                    if !event.recordID.isEmpty, seen.insert(event.recordID).inserted { ids.append(event.recordID) }
                }
            } catch var error as EventDecodingError {
                error.seq = Keys.sequence(from: current.key)
                throw error
            }
            entry = try cursor.next()
        }
        return ids
    }

    /// Whether an event after `seq` is of `entity`, looking at no more of
    /// each event than its envelope's first members (see `EventCoding.isEvent`)
    /// and stopping at the first one that is.
    func hasEvent(of entity: String, after seq: UInt64, in transaction: Transaction) throws -> Bool {
        let name = Array(entity.utf8)
        var scratch: [UInt8] = []
        let cursor = try transaction.cursor(events)
        var entry = try cursor.seek(atLeast: Keys.sequence(seq + 1))
        while let current = entry {
            do {
                if try EventCoding.isEvent(current.value, of: name, scratch: &scratch) { return true }
            } catch var error as EventDecodingError {
                error.seq = Keys.sequence(from: current.key)
                throw error
            }
            entry = try cursor.next()
        }
        return false
    }

    /// The last `count` events, oldest first.
    func last(_ count: Int, in transaction: Transaction) throws -> [Event] {
        guard count > 0 else { return [] }
        let cursor = try transaction.cursor(events)
        var result: [Event] = []
        var entry = try cursor.last()
        var encodedSet: [UInt8]?
        let archived = try archivedRanges(in: transaction)
        while let current = entry, result.count < count {
            // Walking back from the last event, each one must be one before the previous (or before what was archived).
            let expected = result.last.flatMap { archived.before($0.seq) }
            result.append(try Self.decode(key: current.key, value: current.value, expecting: expected, encodedSet: &encodedSet))
            entry = try cursor.previous()
        }
        return result.reversed()
    }

    /// The newest event of one record, found through the history index.
    func lastEvent(entity: String, id: String, in transaction: Transaction) throws -> Event? {
        let cursor = try transaction.cursor(views.history)
        guard try cursor.seek(exactly: Keys.history(entity: entity, id: id)) != nil,
              let last = try cursor.lastDuplicate() else { return nil }
        return try event(seq: Keys.sequence(from: last.value), in: transaction)
    }

    /// The record id that a view key's id part stands for: the part itself,
    /// or for a hashed one (`Keys.appendID`) the id its first event names.
    /// - Parameter entityKey: the key's entity part (lower-cased).
    func recordID(keyPart: String, entityKey: String, in transaction: Transaction) throws -> String {
        guard keyPart.utf8.first == Keys.hashedIDMark else { return keyPart }
        let cursor = try transaction.cursor(views.history)
        // The key's first duplicate: its oldest event.
        guard let first = try cursor.seek(exactly: Array(keyPart.utf8) + [0] + Array(entityKey.utf8)),
              let event = try event(seq: Keys.sequence(from: first.value), in: transaction)
        else { return keyPart }
        return event.recordID
    }

    /// Every event of record `id` (of any entity), oldest first, found through the history index.
    func history(of id: String, in transaction: Transaction) throws -> [Event] {
        let prefix = Keys.historyPrefix(id: id)
        let cursor = try transaction.cursor(views.history)
        var seqs: [UInt64] = []
        var entry = try cursor.seek(atLeast: prefix)
        while let current = entry, current.key.starts(with: prefix) {
            seqs.append(Keys.sequence(from: current.value))
            entry = try cursor.next()
        }
        // A hashed key (a long id) names its record's events only.
        return try seqs.sorted().compactMap { try event(seq: $0, in: transaction) }.filter { $0.recordID == id }
    }
}
