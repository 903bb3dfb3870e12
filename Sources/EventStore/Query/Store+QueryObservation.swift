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
    /// those records (not the table), and when one of them was in the result or now matches its conditions,
    /// makes the next result from the current one and them, running the query again only where that cannot
    /// tell (an offset, or a full window a record left); an element is yielded only if the result differs. Woken by commits as
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
                    var matching: [Record] = []
                    for id in Set(touched) {
                        guard let row = try log.views.projection(entity: schema.name, id: id, in: transaction).row else { continue }
                        let record = schema.record(id: id, fields: row)
                        if plan.matches(record) { matching.append(record) }
                    }
                    guard !matching.isEmpty || touched.contains(where: inResult.contains) else { return (nil, last) }
                    return (try Self.nextResult(current, touched: Set(touched), matching: matching, plan: plan) ?? plan.records(), last)
                }
                seen = through
                guard let next, next != current else { continue }
                continuation.yield(ObservedRecords(records: next, changes: Self.difference(from: current, to: next, seq: through)))
                current = next
            }
        }
    }

    /// The result after a commit, from `current` and the records the commit touched (`matching`: those of them
    /// that now match): nil where only running the query can tell. Without a limit, or with a window not full,
    /// every record that matches is in one or the other. With a full window, the records past it were never read,
    /// and each comes after its old last record: the new result is known as far as that record.
    static func nextResult(_ current: [Record], touched: Set<String>, matching: [Record], plan: QueryPlan) -> [Record]? {
        guard plan.offset == 0 else { return nil }
        let inOrder = { (a: Record, b: Record) in SortKey.areInOrder(a, b, by: plan.sortKeys) }
        let next = (current.filter { !touched.contains($0.id) } + matching).sorted(by: inOrder)
        guard let limit = plan.limit, current.count >= limit, let boundary = current.last else {
            return plan.limit.map { Array(next.prefix($0)) } ?? next
        }
        let known = next.prefix { !inOrder(boundary, $0) }
        return known.count >= limit ? Array(known.prefix(limit)) : nil
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
