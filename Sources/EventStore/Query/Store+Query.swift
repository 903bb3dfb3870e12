/// Running a `Query`: in a read, in a write (its own changes included), or on the store as it was at a point
/// of its log (`asOf`, replayed from the log: the past has no index, so that is a scan).
extension StoreSnapshot {
    /// The records `query` selects, in its order, as the app's type.
    ///
    /// ```swift
    /// let next = try store.read { try $0.records(Holiday.where(\.date >= "2027-01-01").order(\.date).limit(10)) }
    /// ```
    public func records<Value: EntityRecord>(_ query: Query<Value>) throws(StoreError) -> [Value] {
        let coder = try store.coder(for: Value.self)
        var values: [Value] = []
        for record in try run(query).records { values.append(try coder.decode(Value.self, from: record)) }
        return values
    }

    /// The records `query` selects, in its order.
    public func records(_ query: Query<Record>) throws(StoreError) -> [Record] {
        try run(query).records
    }

    /// How many records `query` selects (its limit and offset applied). On an indexed field, a count reads no record.
    public func count<Value>(_ query: Query<Value>) throws(StoreError) -> Int {
        let schema = try store.entity(query.entity)
        return try using { transaction in
            var plan = try QueryPlan(query, schema: schema, store: store, in: transaction)
            return try plan.count()
        }
    }

    /// The records, and how many rows the query read to find them.
    func run<Value>(_ query: Query<Value>) throws(StoreError) -> (records: [Record], rowsRead: Int) {
        let schema = try store.entity(query.entity)
        return try using { transaction in
            var plan = try QueryPlan(query, schema: schema, store: store, in: transaction)
            return (try plan.records(), plan.rowsRead)
        }
    }
}

extension Store {
    /// The records `query` selects, now or as they were at `asOf`, as the app's type.
    public func records<Value: EntityRecord>(_ query: Query<Value>, asOf point: LogPoint? = nil) throws(StoreError) -> [Value] {
        let coder = try coder(for: Value.self)
        var values: [Value] = []
        for record in try records(of: query, asOf: point) { values.append(try coder.decode(Value.self, from: record)) }
        return values
    }

    /// The records `query` selects, now or as they were at `asOf`.
    public func records(_ query: Query<Record>, asOf point: LogPoint? = nil) throws(StoreError) -> [Record] {
        try records(of: query, asOf: point)
    }

    /// How many records `query` selects, now or at `asOf`.
    public func count<Value>(_ query: Query<Value>, asOf point: LogPoint? = nil) throws(StoreError) -> Int {
        guard point != nil else { return try readSnapshot { snapshot throws(StoreError) in try snapshot.count(query) } }
        return try records(of: query, asOf: point).count
    }

    private func records<Value>(of query: Query<Value>, asOf point: LogPoint?) throws(StoreError) -> [Record] {
        guard let point else { return try readSnapshot { snapshot throws(StoreError) in try snapshot.run(query).records } }
        let schema = try entity(query.entity)
        let past = try records(schema.name, asOf: point)
        return try snapshot { transaction in
            // The same plan, over the records replayed: its checks, order and window, no index.
            let plan = try QueryPlan(query, schema: schema, store: self, in: transaction)
            return plan.window(past.filter(plan.matches).sorted { SortKey.areInOrder($0, $1, by: plan.sortKeys) })
        }
    }

    /// `read`, with its errors as `StoreError`s.
    private func readSnapshot<T>(_ body: (StoreSnapshot) throws(StoreError) -> T) throws(StoreError) -> T {
        do { return try read { snapshot in try body(snapshot) } } catch { throw wrap(error) }
    }
}
