import Storage
/// Questions about the past, answered from the log: who set each field (`blame`), what changed between
/// two points (`diff`), every conflict and whether it was decided again (`conflicts`), and why a record
/// is pending (`whyPending`). Each is a fold of the record's events (`RecordProjection.apply`), read
/// through the `history` index, so it costs what the record holds; only `diff` and `conflicts` walk the
/// log, and only the part they are asked about.
extension Store {
    // MARK: Points

    /// The point `last-sync` names: the log as it was when the last sync began, before its changes.
    /// - Throws: `.notFound` when no sync has run, or the last one was recorded by an evsync that did
    ///   not note where it began.
    public func lastSyncPoint() throws(StoreError) -> LogPoint {
        guard let last = try lastSync() else { throw StoreError(.notFound, "no sync has run on this store yet") }
        guard let seq = last.startedAfter else {
            throw StoreError(.notFound, "the last sync was recorded by an older evsync, which did not note where it began: give an event number or a time")
        }
        return .seq(seq)
    }

    /// The number of the last event at `point` (0: before the first): the one rule every reading of
    /// the past uses (`record(asOf:)`, `records(asOf:)`, `diff`, `revert`).
    ///
    /// A time names the log up to the first event stamped after it. Events are stamped no earlier than
    /// the one before them (`EventLog.Appender.stamp`), so times only go up and that point is found by
    /// bisection. A store written by an evsync before that rule may hold a clock that jumped back; there
    /// the log is read from the start to the first later event, so that a time still names one point.
    func seq(at point: LogPoint, in transaction: Transaction) throws -> UInt64 {
        let last = try log.lastSeq(in: transaction)
        switch point {
        case .seq(let seq):
            return min(seq, last)
        case .time(let time) where try meta(MetaKey.stampsInOrder, in: transaction) != nil:
            var (low, high) = (UInt64(0), last)
            let reader = try archiveReader(in: transaction)
            // An event stamped while the clock ran ahead is taken at the time of the one before it (`MisstampedEvents`).
            let misstamped = try log.misstamped(in: transaction)
            while low < high {
                let middle = low + (high - low + 1) / 2
                let at = try log.effectiveTime(of: middle, misstamped: misstamped) { try self.time(of: $0, reader: reader, in: transaction) }
                if let at, at <= time { low = middle } else { high = middle - 1 }
            }
            return low
        case .time(let time):
            var through: UInt64 = 0
            let misstamped = try log.misstamped(in: transaction)
            var before = Int64.min
            try log.forEachTime(in: transaction) { seq, at in
                let effective = misstamped.range(holding: seq) == nil ? at : before
                guard effective <= time else { return false }
                if misstamped.range(holding: seq) == nil { before = at }
                through = seq
                return true
            }
            return through
        }
    }

    /// The time of event `seq`, from the archive if it was moved there; with its segment missing, the time
    /// of the next live event, so that a time inside an archived range names a point no later than the
    /// archive would (a reading before the cut then says which segment it needs).
    private func time(of seq: UInt64, reader: ArchiveReader, in transaction: Transaction) throws -> Int64? {
        if let at = try log.at(seq: seq, in: transaction) { return at }
        guard let sealed = reader.archived.sealed.first(where: { $0.archive.first <= seq && seq <= $0.archive.last }) else { return nil }
        if let event = try? reader.events([seq], sealedBy: sealed.seal)?.first { return event.at }
        let cursor = try transaction.cursor(log.events)
        guard let next = try cursor.seek(atLeast: Keys.sequence(seq)) else { return nil }
        return try log.at(seq: Keys.sequence(from: next.key), in: transaction)
    }

    /// The record's events of `entity`, oldest first (through the `history` index), read through its
    /// current schema: blame, diff, why and conflicts show a renamed field under its new name. Baselines are
    /// expanded from the archive where it is present (`ArchiveReader`): an answer that needs a point before
    /// `point` checks `reader.missing`; one that can be given from the baselines does not.
    private func events(entity: String, id: String, before point: UInt64 = 0, reader: ArchiveReader,
                        in transaction: Transaction) throws -> [Event] {
        let schema = try? self.entity(entity)
        let events = try log.history(of: id, in: transaction).filter { $0.entity == entity }
        return try reader.expand(events, before: point).map { schema?.upcast($0) ?? $0 }
    }

    /// The event that last set `field`, as `event` (a baseline: the archived event it remembers) says it.
    private static func setter(of field: String, in event: Event) -> Event {
        event.baseline?.setters[field]?.event(entity: event.entity, recordID: event.recordID) ?? event
    }

    // MARK: Blame

    /// Who set each field of a record's current row, and when: for each field, the event that last
    /// changed its value here (a local change, a remote one with the server's version, or a conflict).
    /// - Returns: nil when the record does not exist now.
    public func blame(_ entityName: String, id: String) throws(StoreError) -> Blame? {
        let schema = try entity(entityName)
        try Self.checkID(id, fromServer: true)
        return try snapshot { transaction in
            var projection = RecordProjection()
            var setters: [String: Event] = [:]
            for event in try events(entity: schema.name, id: id, reader: try archiveReader(in: transaction), in: transaction) {
                let before = projection.row
                projection.apply(event)
                for field in Self.changedFields(from: before, to: projection.row) { setters[field] = Self.setter(of: field, in: event) }
            }
            guard let row = projection.row else { return nil }
            let fields = row.keys.sorted().compactMap { field in
                setters[field].map { FieldOrigin(field: field, value: row[field] ?? .null, event: $0) }
            }
            return Blame(record: Record(entity: schema.name, id: id, fields: row), fields: fields)
        }
    }

    /// The fields whose values differ between two rows (all of them when one side is absent).
    static func changedFields(from old: JSONObject?, to new: JSONObject?) -> [String] {
        let old = old ?? [:], new = new ?? [:]
        return Set(old.keys).union(new.keys).filter { old[$0] != new[$0] }.sorted()
    }

    // MARK: Diff

    /// The records added, changed and deleted between two points, handed to `body` one at a time.
    ///
    /// Streams: each event between the points is read once, and a record is compared (its own
    /// events, through the index) at its last change in the range, so memory holds one record at a time
    /// whatever the range. Records come in the order of their last change in the range.
    /// - Parameters:
    ///   - from: the earlier point.
    ///   - to: the later point; nil for now.
    ///   - entityName: only this entity's records; nil for every entity.
    ///   - body: called with each record's difference.
    /// - Returns: the event numbers the points stand for.
    @discardableResult
    public func diff(from: LogPoint, to: LogPoint? = nil, entity entityName: String? = nil,
                     _ body: (RecordDiff) throws -> Void) throws(StoreError) -> (from: UInt64, to: UInt64) {
        let only = try entityName.map { name throws(StoreError) in try entity(name).name }
        return try snapshot { transaction in
            let start = try seq(at: from, in: transaction)
            let end = try to.map { try seq(at: $0, in: transaction) } ?? log.lastSeq(in: transaction)
            guard start < end else { return (start, end) }
            let reader = try archiveReader(in: transaction)
            // One fold of the record's events gives both states: at `start`, then at `end`.
            func compare(entity: String, id: String) throws {
                var projection = RecordProjection()
                var before: JSONObject?
                var last: Event.Kind?
                for earlier in try events(entity: entity, id: id, before: start, reader: reader, in: transaction) {
                    let position = reader.position(of: earlier)
                    guard position <= end else { break }
                    projection.apply(earlier)
                    if !earlier.kind.isNote { last = earlier.kind }
                    if position <= start { before = projection.row }
                }
                try Self.requireArchives(reader, for: "diffing from event \(start)")
                if let change = RecordDiff(entity: entity, id: id, old: before, new: projection.row, left: last == .left) { try body(change) }
            }
            func isChange(_ event: Event) -> Bool {
                !event.kind.isNote && event.kind != .baseline && (only == nil || event.entity == only)
            }
            let archived = reader.archived.segments(neededBefore: start).filter { $0.archive.first <= end }
            guard !archived.isEmpty else {
                // Streams: a record is compared at its last change in the range.
                let history = try transaction.cursor(log.views.history)
                try log.forEach(from: start + 1, in: transaction) { event in
                    guard event.seq <= end else { return false }
                    if isChange(event), try isLastChange(event, before: end, cursor: history) { try compare(entity: event.entity, id: event.recordID) }
                    return true
                }
                return (start, end)
            }
            // Part of the range is archived: the records changed in it are gathered from the segments and the
            // live log, then compared in the order of their last change, as above.
            var lastChange: [RecordKey: UInt64] = [:]
            func note(_ event: Event) -> Bool {
                guard event.seq <= end else { return false }
                if event.seq > start, isChange(event) { lastChange[RecordKey(entity: event.entity, id: event.recordID)] = event.seq }
                return true
            }
            for segment in archived where try !reader.forEach(sealedBy: segment.seal, note) {
                try Self.requireArchives(reader, for: "diffing from event \(start)")
            }
            try log.forEach(from: start + 1, in: transaction, note)
            for (record, _) in lastChange.sorted(by: { $0.value < $1.value }) { try compare(entity: record.entity, id: record.id) }
            return (start, end)
        }
    }

    /// Whether `event` is its record's last event at or before `end`.
    private func isLastChange(_ event: Event, before end: UInt64, cursor: Cursor) throws -> Bool {
        guard try cursor.seek(exactly: Keys.history(entity: event.entity, id: event.recordID)) != nil else { return true }
        var entry = try cursor.lastDuplicate()
        while let current = entry {
            let seq = Keys.sequence(from: current.value)
            if seq <= end { return seq == event.seq }
            entry = try cursor.previousDuplicate()
        }
        return true
    }

    struct RecordKey: Hashable {
        let entity: String
        let id: String
    }

    // MARK: Conflicts

    /// Every conflict the log holds, oldest first: the fields both sides changed, each side's value and
    /// which won, and the `resolve` that decided it again, if any.
    /// - Parameter openOnly: leave out the conflicts a later `resolve` decided.
    public func conflicts(openOnly: Bool = false) throws(StoreError) -> [Conflict] {
        try snapshot { transaction in
            var conflicts: [Conflict] = []
            try forEachConflict(openOnly: openOnly, in: transaction) { event, resolution, events in
                conflicts.append(conflict(event, resolvedBy: resolution, among: events))
            }
            return conflicts
        }
    }

    /// Each conflict event, oldest first, with the `resolve` that decided it again (the latest) and its record's events.
    func forEachConflict(openOnly: Bool, in transaction: Transaction, _ body: (Event, Event?, [Event]) throws -> Void) throws {
        let reader = try archiveReader(in: transaction)
        // Only conflict events are decoded; what resolves one is a later change of the same record.
        try log.forEach(kind: .conflict, in: transaction) { event in
            let events = try events(entity: event.entity, id: event.recordID, reader: reader, in: transaction)
            let resolution = events.last { $0.resolves == event.seq }  // the latest decision stands
            if openOnly, resolution != nil { return }
            try body(event, resolution, events)
        }
    }

    /// A conflict event, read with the server state its merge was based on (the shadow before it).
    func conflict(_ event: Event, resolvedBy resolution: Event?, in transaction: Transaction) throws -> Conflict {
        conflict(event, resolvedBy: resolution,
                 among: try events(entity: event.entity, id: event.recordID, reader: try archiveReader(in: transaction), in: transaction))
    }

    /// The same, from the record's events.
    private func conflict(_ event: Event, resolvedBy resolution: Event?, among events: [Event]) -> Conflict {
        var base = RecordProjection()
        for earlier in events where earlier.seq < event.seq {
            base.apply(earlier)
        }
        return Conflict(event: event, base: base.shadow, resolvedBy: resolution)
    }

    // MARK: Why

    /// Why a record is pending, or that it is in step with the server.
    /// - Returns: nil when the log holds no event of the record.
    public func whyPending(_ entityName: String, id: String) throws(StoreError) -> PendingReason? {
        let schema = try entity(entityName)
        try Self.checkID(id, fromServer: true)
        let remote = try rememberedRemote()
        return try snapshot { transaction in
            let events = try events(entity: schema.name, id: id, reader: try archiveReader(in: transaction), in: transaction)
            guard !events.isEmpty else { return nil }
            var projection = RecordProjection()
            var setters: [String: Event] = [:]
            var pendingSince: Event?
            var lastPush: Event?
            // The refusal that holds the record back: a `rejected` event with nothing but notes after it.
            var refusal: Event?
            for event in events {
                if event.kind == .rejected { refusal = event } else if !event.kind.isNote { refusal = nil }
                let before = projection
                projection.apply(event)
                for field in Self.changedFields(from: before.row, to: projection.row) { setters[field] = Self.setter(of: field, in: event) }
                if !before.isPending, projection.isPending { pendingSince = event }
                if !projection.isPending { pendingSince = nil }
                if let baseline = event.baseline {
                    lastPush = baseline.lastExchange?.event(entity: event.entity, recordID: event.recordID)
                } else if [.acknowledged, .conflict, .rejected].contains(event.kind) {
                    lastPush = event
                }
            }
            let last = events[events.count - 1]
            let lastEvent = last.baseline?.lastEvent.event(entity: last.entity, recordID: last.recordID) ?? last
            let fields = projection.isPending
                ? Self.changedFields(from: projection.shadow, to: projection.row).map { field in
                    PendingField(field: field, local: projection.row?[field], server: projection.shadow?[field], since: setters[field])
                }
                : []
            return PendingReason(entity: schema.name, id: id, projection: projection, fields: fields,
                                 pendingSince: pendingSince, lastExchange: lastPush, lastEvent: lastEvent,
                                 isHeld: projection.isPending && refusal != nil && refusal?.author == remote)
        }
    }
}
