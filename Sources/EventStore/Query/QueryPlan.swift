import Storage

/// How a query runs in one snapshot: by a range scan of an index when some of its conditions are on a field
/// the store indexes (the first sort key's if it is one, else the first such field; its conditions' ranges
/// intersected), by a scan of the table otherwise. Either way each record read is checked against every condition, so both
/// give the same records in the same order.
struct QueryPlan {
    let store: Store
    let schema: EntitySchema
    let conditions: [FieldCondition]
    let sortKeys: [SortKey]
    let limit: Int?
    let offset: Int
    let transaction: Transaction
    /// Rows read and decoded so far: what the index spares (tests check it, not a timing).
    private(set) var rowsRead = 0

    init<Value>(_ query: Query<Value>, schema: EntitySchema, store: Store, in transaction: Transaction) throws(StoreError) {
        let conditions = try query.resolvedConditions(schema)
        let known = Set(["id"] + schema.fieldNames)
        for field in conditions.map(\.field) + query.sortKeys.map(\.field) where !known.contains(field) {
            throw StoreError.wrap(schema.unknownField(field))
        }
        (self.store, self.schema, self.conditions, self.sortKeys) = (store, schema, conditions, query.sortKeys)
        (self.limit, self.offset, self.transaction) = (query.limit, query.offset, transaction)
    }

    /// The records the query returns, in order.
    mutating func records() throws -> [Record] {
        if let scan = try indexScan() {
            if sortKeys.first?.field == scan.index.field, limit != nil,
               let sorted = try inIndexOrder(scan, descending: sortKeys[0].descending) {
                return sorted
            }
            return window(try candidates(scan).filter(matches).sorted(by: inOrder))
        }
        return window(try scan().sorted(by: inOrder))
    }

    /// How many records the query returns.
    mutating func count() throws -> Int {
        let total: Int
        if let scan = try indexScan() {
            if scan.answersAll {
                total = scan.singleValues ? try entryCount(scan) : try keyParts(scan).count
            } else {
                total = try candidates(scan).filter(matches).count
            }
        } else {
            total = try scan().count
        }
        return max(0, min(total - offset, limit ?? .max))
    }

    func matches(_ record: Record) -> Bool {
        conditions.allSatisfy { $0.matches(record) }
    }

    private func inOrder(_ a: Record, _ b: Record) -> Bool { SortKey.areInOrder(a, b, by: sortKeys) }

    func window(_ records: [Record]) -> [Record] {
        let start = min(offset, records.count)
        return Array(records[start..<(start + min(records.count - start, limit ?? .max))])
    }

    /// What of an index a query reads: the ranges of values its conditions on that field allow.
    struct IndexScan {
        let index: IndexDefinition
        let ranges: [IndexKeys.ValueRange]
        /// Whether every entry in the ranges satisfies every condition: the query's conditions are all on this
        /// field and none has an operand as long as the values the index cuts (`IndexKeys.maxValueBytes`), so a count
        /// needs no record.
        let answersAll: Bool
        /// Whether the field holds single values, never arrays: each record is under one value at most, so a count
        /// needs no set of the records seen.
        let singleValues: Bool
    }

    /// The index scan that answers the query's conditions best; nil when no index does (or the store's indexes
    /// are behind its log).
    private func indexScan() throws -> IndexScan? {
        let indexes = try store.log.views.indexes.usable(for: schema.name, in: transaction, lastSeq: store.log.lastSeq(in: transaction))
        let answered = conditions.filter { $0.op != .notEqual && $0.op != .contains }
        let fields = answered.map(\.field).filter { field in indexes.contains { $0.reads(field, as: schema) } }
        guard let field = fields.first(where: { $0 == sortKeys.first?.field }) ?? fields.first,
              let index = indexes.first(where: { $0.reads(field, as: schema) }) else { return nil }
        // Several conditions on a field of single values are one range; on one that may hold arrays they are not
        // (`tags >= "x"` and `tags < "y"` may hold for two elements, none in between): the first one's ranges, then.
        let types = schema.types(of: field)
        let single = !types.isEmpty && !types.contains("array")
        let onField = single ? answered.filter { $0.field == field } : [answered.first { $0.field == field }].compactMap { $0 }
        let ranges = onField.dropFirst().reduce(IndexKeys.ranges(for: onField[0])) { IndexKeys.intersection($0, IndexKeys.ranges(for: $1)) }
        // A stored value cut in the index sorts by its first bytes: against an operand as long, it may sit on either side.
        let long = onField.contains { $0.operand.utf8.count >= IndexKeys.maxValueBytes }
        return IndexScan(index: index, ranges: ranges, answersAll: onField.count == conditions.count && !long, singleValues: single)
    }

    // MARK: Scans

    private mutating func scan() throws -> [Record] {
        var found: [Record] = []
        var count = 0
        try store.forEachRow(of: schema.name, in: transaction) { id, fields in
            count += 1
            let record = schema.record(id: id, fields: fields)
            if matches(record) { found.append(record) }
        }
        rowsRead += count
        return found
    }

    /// The key parts (ids as keys spell them) of the records in the scan's ranges, each once.
    private func keyParts(_ scan: IndexScan) throws -> Set<[UInt8]> {
        var parts: Set<[UInt8]> = []
        try forEachEntry(scan, descending: false) { _, keyPart in parts.insert(Array(keyPart)); return true }
        return parts
    }

    /// How many entries the scan's ranges hold: the number of records of each value, as LMDB keeps it.
    private func entryCount(_ scan: IndexScan) throws -> Int {
        guard let database = store.log.views.indexes.database else { return 0 }
        let prefix = IndexKeys.prefix(entity: scan.index.entity, field: scan.index.field)
        let cursor = try transaction.cursor(database)
        var total = 0
        for range in scan.ranges {
            let upper = prefix + range.upper
            var entry = try cursor.seek(atLeast: prefix + range.lower)
            while let current = entry, current.key.lexicographicallyPrecedes(upper) {
                total += try cursor.duplicateCount()
                entry = try cursor.nextKey()
            }
        }
        return total
    }

    /// The records the index's ranges name, not yet checked against the conditions.
    private mutating func candidates(_ scan: IndexScan) throws -> [Record] {
        try keyParts(scan).compactMap { try record(keyPart: $0) }
    }

    /// The record whose key part is `keyPart`, read; nil if it has no row (an index never names one, but a damaged one might).
    private mutating func record(keyPart: some Collection<UInt8>) throws -> Record? {
        let prefix = Keys.entityPrefix(schema.name)
        let views = store.log.views
        guard let row = try transaction.withValue(prefix + keyPart, in: views.records, { try views.row(in: $0, log: transaction) }) ?? nil
        else { return nil }
        rowsRead += 1
        let id = try store.log.recordID(keyPart: String(decoding: keyPart, as: UTF8.self),
                                        entityKey: String(decoding: prefix.dropLast(), as: UTF8.self), in: transaction)
        return schema.record(id: id, fields: row)
    }

    /// Calls `body` with each entry of the scan's ranges (its value's bytes and the record's key part),
    /// in key order or its reverse, until it returns false.
    private func forEachEntry(_ scan: IndexScan, descending: Bool,
                              _ body: (_ value: UnsafeRawBufferPointer, _ keyPart: UnsafeRawBufferPointer) throws -> Bool) throws {
        guard let database = store.log.views.indexes.database else { return }
        let prefix = IndexKeys.prefix(entity: scan.index.entity, field: scan.index.field)
        for range in descending ? scan.ranges.reversed() : scan.ranges {
            let (lower, upper) = (prefix + range.lower, prefix + range.upper)
            let cursor = try transaction.cursor(database)
            var entry: Cursor.Entry?
            if descending {
                entry = try cursor.seek(atLeast: upper) != nil ? try cursor.previous() : try cursor.last()
            } else {
                entry = try cursor.seek(atLeast: lower)
            }
            while let current = entry {
                let inRange = descending ? !current.key.lexicographicallyPrecedes(lower) : current.key.lexicographicallyPrecedes(upper)
                guard inRange else { break }
                let value = UnsafeRawBufferPointer(rebasing: current.key[prefix.count...])
                guard try body(value, current.value) else { return }
                entry = descending ? try cursor.previous() : try cursor.next()
            }
        }
    }

    /// The query's window read in the index's order, the query's first sort key being the indexed field: each run of
    /// records under one value read, checked and sorted by the other keys, until the window is full. Nil, to be run
    /// otherwise, when a record holds an array there: it is indexed under each element, out of the table's order.
    private mutating func inIndexOrder(_ scan: IndexScan, descending: Bool) throws -> [Record]? {
        let wanted = limit.map { offset.addingReportingOverflow($0) }.map { $0.overflow ? .max : $0.partialValue } ?? .max
        var found: [Record] = []
        var run: [[UInt8]] = []
        var runValue: [UInt8] = []
        var unordered = false
        func flush(_ plan: inout QueryPlan) throws {
            var records = try run.compactMap { try plan.record(keyPart: $0) }
            if records.contains(where: { if case .array = $0.fields[scan.index.field] { true } else { false } }) { unordered = true }
            records = records.filter(plan.matches).sorted(by: plan.inOrder)
            found += records
            run.removeAll()
        }
        // Ascending on this field alone, records of one value come in id order (their keys' order), but for
        // long ids (hashed, `#`, first) and values cut in the index: otherwise a run can stop at the window's end.
        let idOrder = !descending && sortKeys.count == 1
        var runInIDOrder = true
        var plan = self
        try forEachEntry(scan, descending: descending) { value, keyPart in
            if !value.elementsEqual(runValue) {
                try flush(&plan)
                if unordered || found.count >= wanted { return false }
                runValue = Array(value)
                runInIDOrder = idOrder && !IndexKeys.isCut(value)
            }
            run.append(Array(keyPart))
            if keyPart.first == Keys.hashedIDMark { runInIDOrder = false }
            if runInIDOrder, found.count + run.count >= wanted {
                try flush(&plan)
                if unordered || found.count >= wanted { return false }
            }
            return true
        }
        if !unordered, !run.isEmpty { try flush(&plan) }
        rowsRead = plan.rowsRead
        guard !unordered else { return nil }
        return window(found)
    }
}
