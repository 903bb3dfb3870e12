/// Observing a query: its records, then its records again with what changed in them, only when a commit
/// changed them (GRDB's `ValueObservation` with `removeDuplicates`).
extension Store {
    /// The records `query` selects, now and after each commit (in this process or another) that changed them,
    /// with what changed: `changes.inserted` the records that entered the result, `updated` those in it whose
    /// fields changed, `deleted` the ids of those that left it (deleted, or no longer matching, or pushed out
    /// of its `limit`). The first element has every record in `changes.inserted`.
    ///
    /// ```swift
    /// for try await next in store.observe(Holiday.where(\.date >= today).order(\.date).limit(10)) {
    ///     show(next.records)
    /// }
    /// ```
    ///
    /// A commit that touched none of the query's entity wakes nothing; one that touched its records reads
    /// those records (not the table) and runs the query again only if one of them was in the result or now
    /// matches its conditions; an element is yielded only if the result differs. Woken by commits as
    /// `logChanges` is (`every`: where inotify cannot be had).
    public func observe<Value: EntityRecord>(_ query: Query<Value>,
                                             every interval: Duration = .milliseconds(200)) -> AsyncThrowingStream<ObservedRecords<Value>, any Error> {
        let records = observeRecords(of: query, every: interval)
        return Self.taskStream { [self] continuation in
            let coder = try self.coder(for: Value.self)
            func decode(_ records: [Record]) throws(StoreError) -> [Value] {
                try records.map { record throws(StoreError) in try coder.decode(Value.self, from: record) }
            }
            for try await observed in records {
                continuation.yield(ObservedRecords(records: try decode(observed.records), changes: RecordChanges(
                    inserted: try decode(observed.changes.inserted), updated: try decode(observed.changes.updated),
                    deleted: observed.changes.deleted, seq: observed.changes.seq)))
            }
        }
    }

    /// `observe(_:every:)` with the records as `Record`s.
    public func observe(_ query: Query<Record>, every interval: Duration = .milliseconds(200)) -> AsyncThrowingStream<ObservedRecords<Record>, any Error> {
        observeRecords(of: query, every: interval)
    }

    private func observeRecords<Value>(of query: Query<Value>, every interval: Duration) -> AsyncThrowingStream<ObservedRecords<Record>, any Error> {
        let commits = logChanges(every: interval)
        return Self.taskStream { [self] continuation in
            let schema = try entity(query.entity)
            var (current, seen) = try snapshot { transaction in
                var plan = try QueryPlan(query, schema: schema, store: self, in: transaction)
                return (try plan.records(), try log.lastSeq(in: transaction))
            }
            continuation.yield(ObservedRecords(records: current, changes: RecordChanges(inserted: current, seq: seen)))
            for try await newest in commits where newest > seen {
                let (next, through) = try snapshot { transaction -> ([Record]?, UInt64) in
                    let last = try log.lastSeq(in: transaction)
                    let touched = try log.recordIDs(of: schema.name, after: seen, in: transaction)
                    guard !touched.isEmpty else { return (nil, last) }
                    var plan = try QueryPlan(query, schema: schema, store: self, in: transaction)
                    let inResult = Set(current.map(\.id))
                    let relevant = try touched.contains { id in
                        if inResult.contains(id) { return true }
                        guard let row = try log.views.projection(entity: schema.name, id: id, in: transaction).row else { return false }
                        return plan.matches(schema.record(id: id, fields: row))
                    }
                    return (relevant ? try plan.records() : nil, last)
                }
                seen = through
                guard let next, next != current else { continue }
                continuation.yield(ObservedRecords(records: next, changes: Self.difference(from: current, to: next, seq: through)))
                current = next
            }
        }
    }

    /// What changed from one result of a query to the next, by id.
    static func difference(from old: [Record], to new: [Record], seq: UInt64) -> RecordChanges<Record> {
        let before = Dictionary(old.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let after = Set(new.map(\.id))
        var changes = RecordChanges<Record>(seq: seq)
        for record in new {
            switch before[record.id] {
            case nil: changes.inserted.append(record)
            case let previous? where previous != record: changes.updated.append(record)
            default: break
            }
        }
        changes.deleted = old.map(\.id).filter { !after.contains($0) }
        return changes
    }
}
