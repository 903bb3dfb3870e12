import Foundation
import Testing
@testable import EventStore
import TestSupport

@Suite("Store API")
struct StoreTests {
    static let newYear: JSONObject = ["name": "New Year", "date": "2027-01-01"]

    @Test("add, edit, delete and read back")
    func lifecycle() throws {
        try withTemporaryStore { store, _ in
            let created = try store.add("Holiday", id: "ny", fields: Self.newYear)
            #expect(created.seq == 1)
            #expect(created.kind == .created)
            #expect(created.origin == .local)
            #expect(created.entity == "Holiday")
            #expect(created.recordID == "ny")
            #expect(created.set == Self.newYear)
            #expect(try store.record("Holiday", id: "ny") == Record(entity: "Holiday", id: "ny", fields: Self.newYear))
            // Entity names are matched in any case, and stored as the schema spells them.
            #expect(try store.record("holiday", id: "ny")?.entity == "Holiday")

            let edited = try #require(try store.edit("HOLIDAY", id: "ny", set: ["details": "Fireworks", "name": "New Year"]))
            #expect(edited.seq == 2)
            #expect(edited.kind == .updated)
            #expect(edited.set == ["details": "Fireworks"], "unchanged fields are not recorded")
            #expect(try store.record("Holiday", id: "ny")?.fields == ["name": "New Year", "date": "2027-01-01", "details": "Fireworks"])

            let unset = try #require(try store.edit("Holiday", id: "ny", unset: ["details", "image"]))
            #expect(unset.unset == ["details"], "only fields that are there are recorded as removed")
            #expect(try store.record("Holiday", id: "ny")?.fields == Self.newYear)

            let deleted = try store.delete("Holiday", id: "ny")
            #expect(deleted.seq == 4)
            #expect(deleted.kind == .deleted)
            #expect(try store.record("Holiday", id: "ny") == nil)
            #expect(try store.records("Holiday").isEmpty)
            #expect(try store.lastSeq() == 4)
            // The id can be used again once the record is gone.
            try store.add("Holiday", id: "ny", fields: ["name": "Again", "date": "2028-01-01"])
            #expect(try store.record("Holiday", id: "ny")?.fields["name"] == "Again")
        }
    }

    @Test("add without an id makes a new UUID")
    func generatedIDs() throws {
        try withTemporaryStore { store, _ in
            let first = try store.add("Birthday", fields: ["name": "Ada", "date": "1815-12-10"]).recordID
            let second = try store.add("Birthday", fields: ["name": "Ada", "date": "1815-12-10"]).recordID
            #expect(first != second)
            #expect(UUID(uuidString: first) != nil)
            #expect(first == first.lowercased())
            #expect(try store.records("Birthday").map(\.id) == [first, second].sorted())
        }
    }

    @Test("an edit that changes nothing writes nothing")
    func noChange() throws {
        try withTemporaryStore { store, _ in
            try store.add("Holiday", id: "a", fields: Self.newYear)
            #expect(try store.edit("Holiday", id: "a", set: ["name": "New Year"]) == nil)
            #expect(try store.edit("Holiday", id: "a", unset: ["details"]) == nil)
            #expect(try store.edit("Holiday", id: "a", set: ["date": "2027-01-01"], unset: ["image"]) == nil)
            #expect(try store.lastSeq() == 1)
        }
    }

    @Test("a field both set and removed in one edit is refused, whether or not it is there")
    func setAndUnsetTheSameField() throws {
        try withTemporaryStore { store, _ in
            try store.add("Holiday", id: "with", fields: ["name": "A", "date": "2026-01-01", "details": "old"])
            try store.add("Holiday", id: "without", fields: ["name": "B", "date": "2026-01-01"])
            for id in ["with", "without"] {
                let before = try store.record("Holiday", id: id)
                let error = try #require(throws: StoreError.self, "\(id)") {
                    try store.edit("Holiday", id: id, set: ["details": "new"], unset: ["details"])
                }
                #expect(error.code == .invalidData)
                #expect(error.message.contains("details"))
                #expect(try store.record("Holiday", id: id) == before)
            }
            #expect(try store.lastSeq() == 2)
        }
    }

    @Test("random values, long and precise number literals included, come back from the log and the views byte for byte")
    func randomValuesRoundTrip() throws {
        try withTemporaryDirectory { directory in
            let schema = #"{"title": "Thing", "properties": {"v": {}, "w": {}}}"#
            try schema.write(to: directory.appendingPathComponent("thing.schema.json"), atomically: true, encoding: .utf8)
            try withTemporaryStore(schemas: try SchemaRegistry(directory: directory.path)) { store, _ in
                var random = SplitMix64(seed: 0x11)
                var expected: [String: JSONObject] = [:]
                for index in 0..<200 {
                    let fields: JSONObject = ["v": RandomJSON.value(depth: 0, using: &random), "w": .number(RandomJSON.number(using: &random))]
                    try store.add("Thing", id: "t\(index)", fields: fields)
                    expected["t\(index)"] = fields
                }
                for check in [false, true] {
                    if check { #expect(try store.rebuildViews() == 200) }
                    for record in try store.records("Thing") {
                        #expect(JSONWriter.encodeObject(record.fields) == JSONWriter.encodeObject(try #require(expected[record.id])))
                    }
                }
                for event in try store.lastEvents(200) {
                    #expect(JSONWriter.encodeObject(event.set) == JSONWriter.encodeObject(try #require(expected[event.recordID])))
                }
            }
        }
    }

    @Test("values nested past the limit are refused, in any field: they could not be read back")
    func tooDeepValues() throws {
        // NaN and infinity cannot even be made: JSON cannot hold them.
        #expect(JSONNumber(Double.nan) == nil && JSONNumber(Double.infinity) == nil)
        func nested(_ levels: Int) -> JSONValue { (0..<levels).reduce(JSONValue.null) { inner, _ in [inner] } }
        let limit = JSONValue.maxFieldNesting
        try withTemporaryDirectory { directory in
            let schema = #"{"title": "Book", "properties": {"title": {"type": "string"}, "rating": {"type": "number"}, "extra": {}}}"#
            try schema.write(to: directory.appendingPathComponent("book.schema.json"), atomically: true, encoding: .utf8)
            try withTemporaryStore(schemas: try SchemaRegistry(directory: directory.path)) { store, _ in
                try store.add("Book", id: "ok", fields: ["title": "Fine", "rating": 4.5, "extra": ["n": [1, 2.5]]])
                try store.edit("Book", id: "ok", set: ["extra": nested(limit)])
                let values: [JSONValue] = [nested(limit + 1), ["deep": nested(limit)], [1, nested(limit)]]
                for value in values {
                    for field in ["extra"] {
                        let add = try #require(throws: StoreError.self, "\(field) = \(value)") {
                            try store.add("Book", fields: ["title": "Bad", field: value])
                        }
                        #expect(add.code == .invalidData)
                        let edit = try #require(throws: StoreError.self, "\(field) = \(value)") {
                            try store.edit("Book", id: "ok", set: [field: value])
                        }
                        #expect(edit.code == .invalidData)
                    }
                }
                // The log is intact and readable.
                #expect(try store.lastSeq() == 2)
                #expect(try store.lastEvents(10).count == 2)
                #expect(try store.records("Book").map(\.id) == ["ok"])
                #expect(try store.record("Book", id: "ok")?.fields["extra"] == nested(limit))
                #expect(try store.rebuildViews() == 2)
                #expect(try store.verifyViews().isEmpty)
            }
        }
    }

    @Test("bad input is refused with invalidData and writes nothing")
    func invalidData() throws {
        try withTemporaryStore { store, _ in
            try store.add("Holiday", id: "a", fields: Self.newYear)
            let attempts: [(String, () throws -> Void)] = [
                ("unknown entity", { try store.add("Unicorn", fields: ["name": "x"]) }),
                ("missing required", { try store.add("Holiday", fields: ["name": "x"]) }),
                ("bad date", { try store.add("Holiday", fields: ["name": "x", "date": "2026-02-30"]) }),
                ("date-time for a date", { try store.add("Holiday", fields: ["name": "x", "date": "2026-02-03T00:00:00Z"]) }),
                ("wrong type", { try store.add("Holiday", fields: ["name": 1, "date": "2026-02-03"]) }),
                ("empty name", { try store.add("Holiday", fields: ["name": "", "date": "2026-02-03"]) }),
                ("bad URL", { try store.add("Holiday", fields: ["name": "x", "date": "2026-02-03", "wikipediaLink": "not a url"]) }),
                ("relative URL", { try store.add("Holiday", fields: ["name": "x", "date": "2026-02-03", "wikipediaLink": "/wiki/X"]) }),
                ("bad base64", { try store.add("Holiday", fields: ["name": "x", "date": "2026-02-03", "image": "@@not base64@@"]) }),
                ("bad array item", { try store.add("Holiday", fields: ["name": "x", "date": "2026-02-03", "observedBy": [1]]) }),
                ("unknown field", { try store.add("Holiday", fields: ["name": "x", "date": "2026-02-03", "colour": "red"]) }),
                ("reserved field", { try store.add("Holiday", fields: ["name": "x", "date": "2026-02-03", "id": "b"]) }),
                ("bad id", { try store.add("Holiday", id: "a/b", fields: Self.newYear) }),
                ("dotted id", { try store.add("Holiday", id: "../x", fields: Self.newYear) }),
                ("empty id", { try store.add("Holiday", id: "", fields: Self.newYear) }),
                ("existing id", { try store.add("Holiday", id: "a", fields: Self.newYear) }),
                ("edit: bad value", { try store.edit("Holiday", id: "a", set: ["date": "tomorrow"]) }),
                ("edit: unknown field", { try store.edit("Holiday", id: "a", set: ["colour": "red"]) }),
                ("edit: unset unknown field", { try store.edit("Holiday", id: "a", unset: ["colour"]) }),
                ("edit: unset required field", { try store.edit("Holiday", id: "a", unset: ["name"]) }),
                ("edit: bad id", { try store.edit("Holiday", id: "a/b", set: ["name": "x"]) }),
                ("delete: bad id", { try store.delete("Holiday", id: "../a") }),
                ("record: bad id", { _ = try store.record("Holiday", id: "a b") }),
                ("history: bad id", { _ = try store.history(of: "a/b") }),
                ("records: unknown entity", { _ = try store.records("Unicorn") }),
            ]
            for (name, attempt) in attempts {
                let error = try #require(throws: StoreError.self, "\(name)") { try attempt() }
                #expect(error.code == .invalidData, "\(name): \(error)")
            }
            #expect(try store.lastSeq() == 1)
            #expect(try store.record("Holiday", id: "a")?.fields == Self.newYear)
        }
    }

    @Test("missing records are notFound")
    func notFound() throws {
        try withTemporaryStore { store, _ in
            try store.add("Holiday", id: "a", fields: Self.newYear)
            try store.delete("Holiday", id: "a")
            for attempt in [
                { try store.edit("Holiday", id: "a", set: ["name": "x"]) } as () throws -> Void,
                { try store.delete("Holiday", id: "a") },
                { try store.edit("Holiday", id: "never", set: ["name": "x"]) },
                { try store.delete("Birthday", id: "never") },
            ] {
                let error = try #require(throws: StoreError.self) { try attempt() }
                #expect(error.code == .notFound)
            }
            #expect(try store.record("Holiday", id: "a") == nil)
            #expect(try store.lastSeq() == 2)
        }
    }

    @Test("opening a missing store is notFound unless asked to create it")
    func missingStore() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("nothing-here").path
            let error = try #require(throws: StoreError.self) { try Store(directory: path) }
            #expect(error.code == .notFound)
            #expect(!FileManager.default.fileExists(atPath: path))
            // An empty directory is not a store either.
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            #expect(throws: StoreError.self) { try Store(directory: path) }
            // A file is not a directory.
            let file = directory.appendingPathComponent("file").path
            _ = FileManager.default.createFile(atPath: file, contents: Data("x".utf8))
            let fileError = try #require(throws: StoreError.self) { try Store(directory: file, create: true) }
            #expect(fileError.code == .invalidData)
        }
    }

    @Test("the log and views persist across reopening")
    func reopen() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("store").path
            do {
                let store = try Store(directory: path, create: true)
                try store.add("Holiday", id: "a", fields: Self.newYear)
                try store.add("Birthday", id: "b", fields: ["name": "Ada", "date": "1815-12-10"])
                try store.edit("Holiday", id: "a", set: ["details": "x"])
            }
            let store = try Store(directory: path)
            #expect(try store.lastSeq() == 3)
            #expect(try store.record("Holiday", id: "a")?.fields["details"] == "x")
            #expect(try store.records("Birthday").map(\.id) == ["b"])
            #expect(try store.lastEvents(10).map(\.seq) == [1, 2, 3])
            #expect(try store.verifyViews().isEmpty)
        }
    }

    @Test("lastEvents and events(after:) page through the log")
    func paging() throws {
        try withTemporaryStore { store, _ in
            #expect(try store.lastEvents(5).isEmpty)
            #expect(try store.lastSeq() == 0)
            for index in 0..<12 {
                try store.add("Holiday", id: "h\(index)", fields: ["name": .string("H\(index)"), "date": "2026-01-01"])
            }
            #expect(try store.lastEvents(3).map(\.seq) == [10, 11, 12])
            #expect(try store.lastEvents(0).isEmpty)
            #expect(try store.lastEvents(100).map(\.seq) == Array(1...12))
            #expect(try store.events(after: 0).map(\.seq) == Array(1...12))
            #expect(try store.events(after: 10).map(\.seq) == [11, 12])
            #expect(try store.events(after: 4, limit: 3).map(\.seq) == [5, 6, 7])
            #expect(try store.events(after: 12).isEmpty)
            #expect(try store.lastEvents(1).first?.recordID == "h11")
        }
    }

    @Test("status counts events, records and what is pending")
    func status() throws {
        try withTemporaryStore { store, _ in
            #expect(try store.status() == StoreStatus(events: 0, records: ["Holiday": 0, "Birthday": 0], pendingRecords: 0, unacknowledgedEvents: 0))
            try store.add("Holiday", id: "a", fields: Self.newYear)
            try store.edit("Holiday", id: "a", set: ["details": "x"])
            try store.add("Holiday", id: "b", fields: Self.newYear)
            try store.add("Birthday", id: "a", fields: ["name": "Ada", "date": "1815-12-10"])
            try store.add("Birthday", id: "gone", fields: ["name": "Bob", "date": "1990-01-01"])
            try store.delete("Birthday", id: "gone")
            let status = try store.status()
            #expect(status.events == 6)
            #expect(status.records == ["Holiday": 2, "Birthday": 1])
            // A record created and deleted before any sync has nothing to push.
            #expect(status.pendingRecords == 3)
            #expect(status.unacknowledgedEvents == 4)
        }
    }

    @Test("import reads JSON Lines from a descriptor, all or nothing")
    func importRecords() throws {
        try withTemporaryStore { store, directory in
            let good = directory.deletingLastPathComponent().appendingPathComponent("good.jsonl")
            let lines = [
                #"{"id":"x1","name":"One","date":"2026-01-01"}"#,
                "",
                "   \t",
                #"{"name":"Two","date":"2026-01-02","observedBy":["A"]}"# + "\r",
                #"  {"id":"x3","name":"Three","date":"2026-01-03"}  "#,
            ]
            try Data(lines.joined(separator: "\n").utf8).write(to: good)
            let count = try Self.withDescriptor(good) { try store.importRecords("holiday", from: $0) }
            #expect(count == 3)
            let records = try store.records("Holiday")
            #expect(records.count == 3)
            #expect(Set(records.map(\.id)).isSuperset(of: ["x1", "x3"]))
            #expect(records.first { $0.fields["name"] == "Two" }?.fields["observedBy"] == ["A"])
            #expect(try store.lastEvents(3).allSatisfy { $0.kind == .created && $0.origin == .local && $0.entity == "Holiday" })

            let bad = directory.deletingLastPathComponent().appendingPathComponent("bad.jsonl")
            for (contents, line) in [
                (#"{"id":"y1","name":"A","date":"2026-01-01"}"# + "\n" + #"{"id":"y2","name":"B","date":"nope"}"#, 2),
                (#"{"id":"y1","name":"A","date":"2026-01-01"}"# + "\n\n" + #"{"id":"y1","name":"B","date":"2026-01-01"}"#, 3),
                (#"{"id":"x1","name":"A","date":"2026-01-01"}"#, 1),
                ("\n" + #"{"id":5,"name":"A","date":"2026-01-01"}"#, 2),
                (#"{"id":"a/b","name":"A","date":"2026-01-01"}"#, 1),
                ("[1,2]", 1),
                (#"{"name":"A","date":"2026-01-01""#, 1),
            ] {
                try Data(contents.utf8).write(to: bad)
                let error = try #require(throws: StoreError.self) {
                    try Self.withDescriptor(bad) { try store.importRecords("Holiday", from: $0) }
                }
                #expect(error.code == .invalidData)
                #expect(error.message.hasPrefix("line \(line):"), "\(error.message)")
                #expect(try store.lastSeq() == 3)
            }
            let unknown = try #require(throws: StoreError.self) {
                try Self.withDescriptor(good) { try store.importRecords("Unicorn", from: $0) }
            }
            #expect(unknown.code == .invalidData)
            #expect(try store.lastSeq() == 3)
        }
    }

    @Test("import from a pipe spools it first: same records, same line numbers, nothing left behind")
    func importFromPipe() throws {
        try withTemporaryStore { store, directory in
            func line(_ n: Int) -> String { #"{"id":"p\#(n)","name":"Piped \#(n)","date":"2026-01-01"}"# }
            // More than a spool block and a pipe's buffer, in two writes a moment apart.
            let lines = (0..<20_000).map(line)
            let count = try Self.withPipe([lines[..<10_000].joined(separator: "\n") + "\n", lines[10_000...].joined(separator: "\n")]) {
                try store.importRecords("Holiday", from: $0)
            }
            #expect(count == 20_000)
            #expect(try store.records("Holiday").count == 20_000)

            var bad = (0..<50).map { line($0 + 100_000) }
            bad[36] = #"{"id":"q","name":"Bad","date":"2026-02-30"}"#
            let error = try #require(throws: StoreError.self) {
                try Self.withPipe([bad.joined(separator: "\n")]) { try store.importRecords("Holiday", from: $0) }
            }
            #expect(error.code == .invalidData)
            #expect(error.message.hasPrefix("line 37:"), "\(error.message)")
            #expect(try store.lastSeq() == 20_000)
            // The spool file was unlinked as soon as it was made.
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["data.mdb", "lock.mdb"])
        }
    }

    /// Calls `body` with the read end of a pipe that a thread writes `parts`
    /// to, pausing between them, then closes.
    static func withPipe<T>(_ parts: [String], _ body: (Int32) throws -> T) throws -> T {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        let (reader, writer) = (ends[0], ends[1])
        defer { close(reader) }
        let done = DispatchSemaphore(value: 0)
        Thread {
            for (index, part) in parts.enumerated() {
                if index > 0 { usleep(100_000) }
                var bytes = Array(part.utf8)[...]
                while !bytes.isEmpty {
                    let written = bytes.withUnsafeBytes { write(writer, $0.baseAddress, $0.count) }
                    if written <= 0 { break }
                    bytes = bytes.dropFirst(written)
                }
            }
            close(writer)
            done.signal()
        }.start()
        defer { done.wait() }
        return try body(reader)
    }

    /// The worker reports a bad record as it reads it; ids already taken are
    /// found later, when the chunk is written. Whichever comes first in the
    /// input is the one named.
    @Test("import names the first bad line, whatever its fault")
    func importNamesTheFirstBadLine() throws {
        try withTemporaryStore { store, directory in
            try store.add("Holiday", id: "taken", fields: ["name": "Taken", "date": "2026-01-01"])
            func line(_ id: String) -> String { #"{"id":"\#(id)","name":"N","date":"2026-01-01"}"# }
            let file = directory.deletingLastPathComponent().appendingPathComponent("first-bad.jsonl")
            for (lines, first) in [
                // Two ids repeated: the later repeat sorts first by id, the earlier one is named.
                ([line("m"), line("z"), line("a"), line("z"), line("m"), "{broken"], 4),
                ([line("b"), line("taken"), line("c"), #"{"id":"d","name":"N","date":"nope"}"#], 2),
                ([line("b"), #"{"id":"d","name":"N","date":"nope"}"#, line("taken")], 2),
            ] {
                try Data(lines.joined(separator: "\n").utf8).write(to: file)
                let error = try #require(throws: StoreError.self) {
                    try Self.withDescriptor(file) { try store.importRecords("Holiday", from: $0) }
                }
                #expect(error.message.hasPrefix("line \(first):"), "\(error.message)")
                #expect(try store.lastSeq() == 1)
            }
        }
    }

    @Test("the line reader splits lines across any block size")
    func lineReader() throws {
        try withTemporaryDirectory { directory in
            var random = SplitMix64(seed: 7)
            let pool = Array("abcé😀 {}\":,\t\r")
            var lines: [String] = []
            for _ in 0..<200 {
                lines.append(String((0..<Int.random(in: 0...40, using: &random)).map { _ in pool[Int.random(in: 0..<pool.count, using: &random)] }))
            }
            lines.append("last")
            let file = directory.appendingPathComponent("lines.txt")
            for trailingNewline in [false, true] {
                let text = lines.joined(separator: "\n") + (trailingNewline ? "\n" : "")
                try Data(text.utf8).write(to: file)
                for blockSize in [1, 2, 3, 7, 64, 1 << 22] {
                    var read: [String] = []
                    try Self.withDescriptor(file) { descriptor in
                        try LineReader(descriptor: descriptor, blockSize: blockSize).forEachLine { read.append(String(decoding: $0, as: UTF8.self)) }
                    }
                    #expect(read == lines, "block size \(blockSize), trailing newline \(trailingNewline)")
                }
            }
        }
    }

    @Test("verifyViews can run again and again")
    func repeatedVerification() throws {
        try withTemporaryStore { store, _ in
            try store.add("Holiday", id: "a", fields: Self.newYear)
            for _ in 0..<25 {
                #expect(try store.verifyViews().isEmpty)
            }
            #expect(try store.rebuildViews() == 1)
            #expect(try store.verifyViews().isEmpty)
        }
    }

    @Test("Store is usable from many tasks at once")
    func concurrentTasks() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("evsync-tests-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Store(directory: directory.path, create: true)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<4 {
                group.addTask {
                    for index in 0..<50 {
                        try store.add("Holiday", id: "t\(task)-\(index)", fields: ["name": "T", "date": "2026-01-01"])
                        _ = try store.records("Holiday")
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try store.lastSeq() == 200)
        #expect(try store.records("Holiday").count == 200)
        #expect(try store.events(after: 0).map(\.seq) == Array(1...200))
        #expect(try store.verifyViews().isEmpty)
    }

    static func withDescriptor<T>(_ url: URL, _ body: (Int32) throws -> T) throws -> T {
        let descriptor = open(url.path, O_RDONLY)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        return try body(descriptor)
    }
}
