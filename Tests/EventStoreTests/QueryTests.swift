import Foundation
import Testing
@testable import EventStore
import TestSupport
import Storage

/// An entity of every kind of value, with a schema that indexes its fields and one that indexes none.
enum ItemSchemas {
    static func schema(indexed: Bool, dayRenamedFromDate: Bool = false) -> String {
        let date = dayRenamedFromDate
            ? #""day": {"type": "string", "x-evsync-renamed-from": "date"\#(indexed ? #", "x-evsync-index": true"# : "")}"#
            : #""date": {"type": "string"\#(indexed ? #", "x-evsync-index": true"# : "")}"#
        return """
        {"title": "Item", "type": "object",
         "properties": {"name": {"type": "string"}, \(date), "rank": {"type": ["integer", "number", "string"]},
                        "tags": {"type": "array"}, "flag": {"type": "boolean"}, "note": {"type": "string"}}
         \(indexed ? #", "x-evsync-index": ["rank", "tags", "flag", "name"]"# : "")}
        """
    }

    /// A registry with `Item` as `schema` gives it, in a directory of its own under `directory`.
    static func registry(in directory: URL, _ name: String, _ schema: String) throws -> SchemaRegistry {
        let path = directory.appendingPathComponent(name).path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try schema.write(toFile: path + "/item.schema.json", atomically: true, encoding: .utf8)
        return try SchemaRegistry(directory: path)
    }

    static let longPrefix = String(repeating: "p", count: 120)

    /// Records of mixed values: missing fields, numbers and strings in one field, arrays, Unicode
    /// spelled two ways, a zero byte, strings longer than an index keeps whole, sharing their first bytes.
    static func randomItems(_ count: Int, seed: UInt64) -> [(id: String, fields: JSONObject)] {
        var random = SplitMix64(seed: seed)
        let names: [JSONValue] = ["a", "b", "Ab", "é", "e\u{301}", "zeta", "a\u{0}b", "10", "9", "",
                                  .string(longPrefix + "a"), .string(longPrefix + "b"), .string(longPrefix)]
        let ranks: [JSONValue] = [-3, 0, 1, 2, 2.5, 10, "3", "abc", "10"]
        let tags: [JSONValue] = [["x", "y"], ["y"], [], [1, "x"], ["z", ["x"]]]
        return (0..<count).map { index in
            var fields: JSONObject = [:]
            if Int.random(in: 0..<8, using: &random) > 0 { fields["name"] = names.randomElement(using: &random) }
            if Int.random(in: 0..<8, using: &random) > 0 {
                fields["date"] = .string(String(format: "2026-%02d-%02d", Int.random(in: 1...12, using: &random), Int.random(in: 1...28, using: &random)))
            }
            if Int.random(in: 0..<4, using: &random) > 0 { fields["rank"] = ranks.randomElement(using: &random) }
            if Int.random(in: 0..<3, using: &random) == 0 { fields["tags"] = tags.randomElement(using: &random) }
            if Int.random(in: 0..<3, using: &random) > 0 { fields["flag"] = .bool(Bool.random(using: &random)) }
            if Int.random(in: 0..<2, using: &random) == 0 { fields["note"] = names.randomElement(using: &random) }
            return (String(format: "i%04d", index), fields)
        }
    }

    static let operands = ["é", "10", "2.5", "true", "x", "", "2026-06-15", longPrefix, longPrefix + "a", "[\"x\",\"y\"]", "a\u{0}b"]
}

@Suite("queries: operators, order, limit, count, indexes")
struct QueryTests {
    /// Two stores with the same records: one with every field indexed, one with none, read by scans.
    static func twinStores(in directory: URL, count: Int = 160) throws -> (indexed: Store, scanned: Store) {
        let indexed = try Store(directory: directory.appendingPathComponent("indexed").path,
                                schemas: ItemSchemas.registry(in: directory, "with", ItemSchemas.schema(indexed: true)), create: true)
        let scanned = try Store(directory: directory.appendingPathComponent("scanned").path,
                                schemas: ItemSchemas.registry(in: directory, "without", ItemSchemas.schema(indexed: false)), create: true)
        for store in [indexed, scanned] {
            try store.write { transaction in
                for item in ItemSchemas.randomItems(count, seed: 51) { try transaction.add("Item", id: item.id, fields: item.fields) }
            }
        }
        return (indexed, scanned)
    }

    @Test("each operator on each field gives by its index what a scan gives: the same records, in the same order, and counts")
    func indexAgreesWithScan() throws {
        try withTemporaryDirectory { directory in
            let (indexed, scanned) = try Self.twinStores(in: directory)
            var usedIndex = 0
            for field in ["name", "date", "rank", "tags", "flag", "note", "id"] {
                for op in FieldCondition.Operator.allCases {
                    for operand in ItemSchemas.operands {
                        let base = Query("Item").where(field, op, operand)
                        for query in [base, base.order("-\(field)"), base.order(field, "-name").limit(7, offset: 2), base.limit(3, offset: 1)] {
                            let byIndex = try indexed.read { try $0.run(query) }
                            let byScan = try scanned.read { try $0.run(query) }
                            #expect(byIndex.records.map(\.id) == byScan.records.map(\.id), "\(field)\(op.rawValue)\(operand) \(query.sortKeys)")
                            #expect(byIndex.records == byScan.records)
                            if byIndex.rowsRead < byScan.rowsRead { usedIndex += 1 }
                        }
                        #expect(try indexed.count(base) == scanned.count(base), "count \(field)\(op.rawValue)\(operand)")
                        #expect(try indexed.count(base.limit(4, offset: 1)) == scanned.count(base.limit(4, offset: 1)))
                    }
                }
            }
            // Two conditions on one field: a range, except on a field that may hold arrays.
            for (field, low, high) in [("rank", "0", "3"), ("tags", "x", "y"), ("name", "a", "b"), ("date", "2026-03", "2026-07")] {
                for (lowOp, highOp) in [(FieldCondition.Operator.atLeast, FieldCondition.Operator.less), (.greater, .atMost)] {
                    let query = Query("Item").where(field, lowOp, low).where(field, highOp, high).order(field)
                    #expect(try indexed.records(query) == scanned.records(query), "\(field) \(lowOp.rawValue)\(low) \(highOp.rawValue)\(high)")
                    #expect(try indexed.count(query) == scanned.count(query))
                }
            }
            #expect(usedIndex > 300, "the indexed store read fewer rows for most queries: \(usedIndex)")
            // The scanned store's answers follow the comparison rules, checked on their own.
            let all = try scanned.records("Item")
            let rule = FieldCondition("rank", .atLeast, "2")
            #expect(try scanned.records(Query("Item").where(rule)).map(\.id) == all.filter { rule.matches($0.fields["rank"]) }.map(\.id))
        }
    }

    @Test("a range of an indexed field reads only the records it returns; a count reads none; another field is scanned")
    func indexedRangeReadsWhatItReturns() throws {
        try withTemporaryDirectory { directory in
            let store = try Store(directory: directory.appendingPathComponent("store").path,
                                  schemas: ItemSchemas.registry(in: directory, "with", ItemSchemas.schema(indexed: true)), create: true)
            try store.write { transaction in
                for day in 0..<1_000 {
                    let date = Timestamp.iso8601(milliseconds: Int64(day) * 86_400_000).prefix(10)
                    try transaction.add("Item", id: String(format: "d%04d", day), fields: ["date": .string(String(date)), "note": "n"])
                }
            }
            let range = Query("Item").where("date", .atLeast, "1970-04-11").where("date", .less, "1970-07-20").order("date")
            let (records, rowsRead) = try store.read { try $0.run(range.limit(100)) }
            #expect(records.map(\.id) == (100..<200).map { String(format: "d%04d", $0) })
            #expect(rowsRead == 100)
            let descending = try store.read { try $0.run(Query("Item").where("date", .atLeast, "1970-04-11").order("-date").limit(10)) }
            #expect(descending.records.map(\.id) == (990..<1_000).reversed().map { String(format: "d%04d", $0) })
            #expect(descending.rowsRead == 10)
            #expect(try store.count(Query("Item").where("date", .atLeast, "1970-04-11").where("date", .less, "1970-07-20")) == 100)
            #expect(try store.records(range.limit(.max, offset: 99)).map(\.id) == ["d0199"])
            #expect(try store.records(range.limit(0)).isEmpty)
            // Records of one date come in id order: the window ends in the middle of them.
            try store.write { transaction in
                for index in 0..<50 { try transaction.add("Item", id: String(format: "same%02d", 49 - index), fields: ["date": "2030-01-01"]) }
            }
            let ties = try store.read { try $0.run(Query("Item").where("date", .atLeast, "2030-01-01").order("date").limit(10, offset: 5)) }
            #expect(ties.records.map(\.id) == (5..<15).map { String(format: "same%02d", $0) })
            #expect(ties.rowsRead == 15)
            #expect(try store.read { try $0.run(Query("Item").where("note", .equal, "n").limit(5)) }.rowsRead == 1_050)
        }
    }

    @Test("an index is kept through edits and deletes, rebuilt by rebuildViews, checked by verifyViews, and kept by a compaction")
    func indexThroughRebuildAndCompaction() throws {
        try withTemporaryDirectory { directory in
            let (indexed, scanned) = try Self.twinStores(in: directory, count: 80)
            for store in [indexed, scanned] {
                try store.write { transaction in
                    for index in stride(from: 0, to: 80, by: 3) { try transaction.edit("Item", id: String(format: "i%04d", index), set: ["date": "2026-06-15", "rank": 7]) }
                    for index in stride(from: 1, to: 80, by: 5) { try transaction.delete("Item", id: String(format: "i%04d", index)) }
                    for index in stride(from: 2, to: 80, by: 5) { try transaction.edit("Item", id: String(format: "i%04d", index), unset: ["date", "tags"]) }
                }
            }
            func agree(_ label: String) throws {
                for (field, operand) in [("date", "2026-06-15"), ("rank", "7"), ("tags", "x"), ("name", "b")] {
                    for op in [FieldCondition.Operator.equal, .atLeast, .less] {
                        let query = Query("Item").where(field, op, operand).order(field)
                        #expect(try indexed.records(query) == scanned.records(query), "\(label): \(field)\(op.rawValue)\(operand)")
                    }
                }
            }
            try agree("after edits")
            #expect(try indexed.verifyViews() == [])
            #expect(try indexed.read { try $0.run(Query("Item").where("date", .equal, "2026-06-15")) }.rowsRead
                        == indexed.count(Query("Item").where("date", .equal, "2026-06-15")))
            // A damaged index is found, and a rebuild repairs it.
            let database = try #require(indexed.log.views.indexes.database)
            let removed = try indexed.environment.write { transaction in
                let key = IndexKeys.prefix(entity: "Item", field: "date") + IndexKeys.encode(.string("2026-06-15"))
                let before = try transaction.entries(of: database)
                try key.withUnsafeBytes { key in
                    try Array("i0000".utf8).withUnsafeBytes { try transaction.delete(key, value: $0, in: database) }
                }
                return before - (try transaction.entries(of: database))
            }
            #expect(removed == 1)
            #expect(try indexed.verifyViews().map(\.view) == ["index-entries"])
            try indexed.rebuildViews()
            #expect(try indexed.verifyViews() == [])
            try agree("after rebuild-views")
            let report = try indexed.compact(before: .seq(try indexed.lastSeq()))
            _ = try scanned.compact(before: .seq(try scanned.lastSeq()))
            #expect(report.records > 0 && report.archivedEvents > 0, "\(report)")
            #expect(try indexed.verifyViews() == [])
            try agree("after compaction")
        }
    }

    @Test("indexes an earlier evsync kept (a key per entry, in `indexes`) are rebuilt as the store opens, and their database dropped")
    func indexesOfTheEarlierLayout() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("store").path
            let schemas = try ItemSchemas.registry(in: directory, "with", ItemSchemas.schema(indexed: true))
            try {
                let store = try Store(directory: path, schemas: schemas, create: true)
                try store.write { transaction in
                    for item in ItemSchemas.randomItems(120, seed: 9) { try transaction.add("Item", id: item.id, fields: item.fields) }
                }
                // What the earlier evsync left: its own database and mark, none of this layout's.
                try store.environment.write { transaction in
                    let legacy = try store.environment.openDatabase(RecordIndexes.legacyDatabaseName, flags: MDBFlags.create, in: transaction)
                    try transaction.put(Array("Item\0date\0x".utf8), Array("x".utf8), in: legacy)
                    try transaction.put(RecordIndexes.legacyThroughKey, Array("120".utf8), in: store.log.meta)
                    try transaction.delete(RecordIndexes.throughKey, in: store.log.meta)
                    try transaction.drop(try #require(store.log.views.indexes.database))
                }
            }()
            let store = try Store(directory: path, schemas: schemas)
            let names = try store.environment.read { try store.environment.databaseNames(in: $0) }
            #expect(names.contains(RecordIndexes.databaseName) && !names.contains(RecordIndexes.legacyDatabaseName))
            #expect(try store.environment.read { try $0.get(RecordIndexes.legacyThroughKey, in: store.log.meta) } == nil)
            let query = Query("Item").where("name", .equal, "b")
            let run = try store.read { try $0.run(query) }
            #expect(run.rowsRead == run.records.count && run.records.count > 0)
            #expect(try store.count(query) == run.records.count)
            #expect(try store.verifyViews() == [])
        }
    }

    @Test("an index the schema gains is built as the store opens, and one it drops goes with a rebuild")
    func addingAndDroppingAnIndex() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("store").path
            let plain = try ItemSchemas.registry(in: directory, "without", ItemSchemas.schema(indexed: false))
            let withIndexes = try ItemSchemas.registry(in: directory, "with", ItemSchemas.schema(indexed: true))
            try {
                let store = try Store(directory: path, schemas: plain, create: true)
                try store.write { transaction in
                    for item in ItemSchemas.randomItems(100, seed: 7) { try transaction.add("Item", id: item.id, fields: item.fields) }
                }
                #expect(try store.read { try $0.run(Query("Item").where("name", .equal, "b")) }.rowsRead == 100)
            }()
            let store = try Store(directory: path, schemas: withIndexes)
            let query = Query("Item").where("name", .equal, "b")
            let run = try store.read { try $0.run(query) }
            #expect(run.rowsRead == run.records.count && run.records.count > 0)
            #expect(try store.verifyViews() == [])
            // A process opened with the schema without indexes keeps them as it writes: it may not drop them.
            let other = try Store(directory: path, schemas: plain)
            try other.add("Item", id: "new", fields: ["name": "b"])
            #expect(try store.records(query).map(\.id).contains("new"))
            #expect(try store.read { try $0.run(query) }.rowsRead == run.records.count + 1)
            // Its rebuild keeps the indexes its schemas declare: none.
            try other.rebuildViews()
            #expect(try store.read { try $0.run(query) }.rowsRead == 101)
            #expect(try store.records(query).count == run.records.count + 1)
            #expect(try other.verifyViews() == [])
        }
    }

    @Test("an indexed field renamed in the schema is indexed under its new name, old records and new")
    func renamedIndexedField() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("store").path
            try {
                let store = try Store(directory: path, schemas: ItemSchemas.registry(in: directory, "v1", ItemSchemas.schema(indexed: true)), create: true)
                for month in 1...9 { try store.add("Item", id: "m\(month)", fields: ["date": .string("2026-0\(month)-01")]) }
            }()
            let store = try Store(directory: path, schemas: ItemSchemas.registry(in: directory, "v2", ItemSchemas.schema(indexed: true, dayRenamedFromDate: true)))
            try store.edit("Item", id: "m2", set: ["day": "2026-12-01"])
            try store.add("Item", id: "new", fields: ["day": "2026-07-15"])
            let query = Query("Item").where("day", .atLeast, "2026-07-01").order("day")
            let run = try store.read { try $0.run(query) }
            #expect(run.records.map(\.id) == ["m7", "new", "m8", "m9", "m2"])
            #expect(run.rowsRead == 5)
            #expect(try store.verifyViews() == [])
            try store.rebuildViews()
            #expect(try store.read { try $0.run(query) } == run)
        }
    }

    @Test("a schema's x-evsync-index must be true/false on a field, or a list of its fields")
    func indexKeyword() throws {
        #expect(try EntitySchema(json: ItemSchemas.schema(indexed: true), source: "s").indexedFields == ["date", "flag", "name", "rank", "tags"])
        let bad = [#"{"title": "T", "properties": {"a": {"x-evsync-index": "yes"}}}"#: "'x-evsync-index' must be true or false",
                   #"{"title": "T", "properties": {"a": {}}, "x-evsync-index": ["b"]}"#: "names 'b', which is not among the properties",
                   #"{"title": "T", "properties": {"a": {}}, "x-evsync-index": "a"}"#: "must be an array of field names"]
        for (json, message) in bad {
            #expect { try EntitySchema(json: json, source: "s") } throws: { "\($0)".contains(message) }
        }
    }
}

/// The typed face: key paths, `Date` values written as the field's format, in `read`, `write` and `asOf`.
@Suite("typed queries")
struct TypedQueryTests {
    struct Holiday: EntityRecord, Equatable {
        static let entityName = "Holiday"
        var id = Store.newRecordID()
        var name: String
        var date: Date
        var details: String?
    }

    static func day(_ text: String) throws -> Date { try #require(RecordCoder.date(from: text)) }

    @Test("where, order, limit and count by key path, in a read, a write and as of a point in the log")
    func typedQueries() throws {
        try withTemporaryDirectory { directory in
            let store = try Store(directory: directory.appendingPathComponent("store").path, create: true)
            let names = ["New Year", "Kings' Day", "Easter", "Liberation Day", "Christmas"]
            let dates = ["2027-01-01", "2027-04-27", "2027-03-28", "2026-05-05", "2026-12-25"]
            for (name, date) in zip(names, dates) { try store.add(Holiday(id: name.lowercased().filter(\.isLetter), name: name, date: try Self.day(date))) }
            let before = try store.lastSeq()
            let next = Holiday.where(\.date >= "2027-01-01").order(\.date)
            #expect(try store.read { try $0.records(next) }.map(\.name) == ["New Year", "Easter", "Kings' Day"])
            #expect(try store.records(next.limit(1, offset: 1)).map(\.name) == ["Easter"])
            #expect(try store.records(Holiday.where(\.date < (try Self.day("2027-01-01"))).order(\.name, descending: true)).map(\.name)
                        == ["Liberation Day", "Christmas"])
            #expect(try store.records(Holiday.where(\.name == "Easter")).map(\.name) == ["Easter"])
            #expect(try store.records(Holiday.all.where(\.name, contains: "DAY").order(\.date)).map(\.name) == ["Liberation Day", "Kings' Day"])
            #expect(try store.records(Holiday.where(\.details == nil)).count == 0, "a missing field equals nothing, null included")
            #expect(try store.count(Holiday.where(\.date >= "2027-01-01")) == 3)
            // In a write, its own changes are seen.
            let seen = try store.write { transaction in
                try transaction.add(Holiday(id: "ascension", name: "Ascension", date: try Self.day("2027-05-06")))
                return try transaction.records(next).map(\.name)
            }
            #expect(seen == ["New Year", "Easter", "Kings' Day", "Ascension"])
            #expect(try store.records(next, asOf: .seq(before)).map(\.name) == ["New Year", "Easter", "Kings' Day"])
            #expect(try store.count(next, asOf: .seq(before)) == 3)
            // By name, as `Record`s, the same.
            #expect(try store.records(Query("Holiday").where("date", .atLeast, "2027-01-01").order("date")).map(\.id)
                        == ["newyear", "easter", "kingsday", "ascension"])
        }
    }

    @Test("a key path that names no stored field, or a field the schema lacks, fails the query with what was wrong")
    func badKeyPaths() throws {
        try withTemporaryDirectory { directory in
            let store = try Store(directory: directory.appendingPathComponent("store").path, create: true)
            #expect { try store.records(Holiday.where(\.name.count >= 3)) } throws: { "\($0)".contains("must name one stored property") }
            #expect { try store.records(Query("Holiday").where("nmae", .equal, "x")) } throws: { "\($0)".contains("did you mean 'name'") }
            #expect { try store.records(Query("Holiday").order("-dat")) } throws: { "\($0)".contains("has no field 'dat'") }
        }
    }
}

@Suite("observing a query")
struct QueryObservationTests {
    @Test("an observed query's next result, made from its current one and the records a commit touched, is the query's own, or nil")
    func nextResultFromTheTouchedRecords() throws {
        try withTemporaryDirectory { directory in
            let store = try Store(directory: directory.appendingPathComponent("store").path,
                                  schemas: ItemSchemas.registry(in: directory, "with", ItemSchemas.schema(indexed: true)), create: true)
            let items = ItemSchemas.randomItems(120, seed: 5)
            try store.write { transaction in for item in items { try transaction.add("Item", id: item.id, fields: item.fields) } }
            let queries = [Query("Item").where("rank", .atLeast, "1").order("name", "-date").limit(7),
                           Query("Item").where("date", .less, "2026-07-01").order("-rank").limit(40),
                           Query("Item").where("name", .atMost, "b").order("date"),
                           Query("Item").order("flag", "note").limit(5), Query("Item").order("rank").limit(3, offset: 2)]
            var random = SplitMix64(seed: 11)
            var (answered, rerun) = (0, 0)
            for round in 0..<60 {
                let query = queries[round % queries.count]
                let current = try store.records(query)
                // A commit touching a few records: edits moving them in and out, a deletion, a new one.
                let replacements = ItemSchemas.randomItems(4, seed: UInt64(round) + 100)
                var touched: Set<String> = []
                try store.write { transaction in
                    for replacement in replacements.prefix(3) {
                        let id = items[Int.random(in: 0..<items.count, using: &random)].id
                        touched.insert(id)
                        if try transaction.record("Item", id: id) == nil {
                            try transaction.add("Item", id: id, fields: replacement.fields)
                        } else if Int.random(in: 0..<5, using: &random) == 0 {
                            try transaction.delete("Item", id: id)
                        } else {
                            let old = try transaction.record("Item", id: id)?.fields ?? [:]
                            _ = try transaction.edit("Item", id: id, set: replacement.fields,
                                                     unset: old.keys.filter { replacement.fields[$0] == nil }.sorted())
                        }
                    }
                    let fresh = "new\(round)"
                    touched.insert(fresh)
                    try transaction.add("Item", id: fresh, fields: replacements[3].fields)
                }
                let expected = try store.records(query)
                let next = try store.snapshot { transaction in
                    let plan = try QueryPlan(query, schema: try store.entity("Item"), store: store, in: transaction)
                    let matching = try touched.compactMap { try store.record("Item", id: $0) }.filter(plan.matches)
                    return Store.nextResult(current, touched: touched, matching: matching, plan: plan)
                }
                if let next { answered += 1; #expect(next == expected, "round \(round)") } else { rerun += 1 }
            }
            #expect(answered > 30 && rerun > 0, "answered \(answered), left to a run \(rerun)")
        }
    }

    @Test("an observed query yields its records, then only when a commit changed them, with what entered, changed and left")
    func observedQuery() async throws {
        let directory = try TemporaryDirectory("query-observation")
        let store = try Store(directory: directory.file("store"), create: true)
        for month in 1...5 {
            try store.add("Holiday", id: "y27m\(month)", fields: ["name": "H", "date": .string("2027-0\(month)-01")])
            try store.add("Holiday", id: "y26m\(month)", fields: ["name": "H", "date": .string("2026-0\(month)-01")])
        }
        let query = TypedQueryTests.Holiday.where(\.date >= "2027-01-01").order(\.date)
        var observed = store.observe(query, every: .milliseconds(10)).makeAsyncIterator()
        let first = try #require(try await observed.next())
        #expect(first.records.map(\.id) == (1...5).map { "y27m\($0)" })
        #expect(first.changes.inserted.count == 5)
        // Writes that leave the result as it was: other records of the entity, and another entity.
        for index in 0..<20 { try store.add("Holiday", id: "other\(index)", fields: ["name": "O", "date": "2025-01-01"]) }
        try store.edit("Holiday", id: "y26m1", set: ["name": "Renamed"])
        try store.add("Birthday", id: "ann", fields: ["name": "Ann", "date": "1990-01-01"])
        // The next element is the first commit that changed the result.
        let added = try store.add("Holiday", id: "y27m6", fields: ["name": "H", "date": "2027-06-01"])
        let second = try #require(try await observed.next())
        #expect(second.changes.inserted.map(\.id) == ["y27m6"] && second.changes.updated.isEmpty && second.changes.deleted.isEmpty)
        #expect(second.changes.seq == added.seq)
        #expect(second.records.count == 6)
        try await store.write { transaction in
            try transaction.edit("Holiday", id: "y27m2", set: ["name": "Changed"])
            try transaction.edit("Holiday", id: "y27m3", set: ["date": "2026-12-31"])
        }
        let third = try #require(try await observed.next())
        #expect(third.changes.updated.map(\.name) == ["Changed"])
        #expect(third.changes.deleted == ["y27m3"] && third.changes.inserted.isEmpty)
        #expect(third.records.map(\.id) == ["y27m1", "y27m2", "y27m4", "y27m5", "y27m6"])
    }
}
