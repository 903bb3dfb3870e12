import Foundation
import Testing
@testable import EventStore
import TestSupport

/// The `records` view keeps a record's row, shadow and version in one value
/// (`RecordEntry`); and stores written with layout 1, which kept them in two
/// databases, are upgraded on opening.
@Suite("Record entries and layout upgrade")
struct RecordEntryTests {
    static let projections: [RecordProjection] = [
        RecordProjection(row: ["name": "Local"]),                                              // created here, never pushed
        RecordProjection(row: ["name": "Same"], shadow: ["name": "Same"], version: 7),        // in step
        RecordProjection(row: ["name": "Mine", "n": 1], shadow: ["name": "Theirs"], version: 8),  // edited here
        RecordProjection(row: [:], shadow: ["name": "S"], version: 9),                        // an empty row differs from the shadow
        RecordProjection(row: nil, shadow: ["name": "Gone here"], version: 10),              // deleted here, on the server
        RecordProjection(row: nil, shadow: nil, version: 11),                                 // deleted on the server
        RecordProjection(row: ["name": "Re-created"], shadow: nil, version: 12),              // re-created here after that
        // Versions that are not integers (a CouchDB revision, an ETag): the token follows the layout byte.
        RecordProjection(row: ["name": "Same"], shadow: ["name": "Same"], version: RemoteVersion("3-917fa238")),
        RecordProjection(row: ["name": "Mine"], shadow: ["name": "Theirs"], version: RemoteVersion("\"W/é\"")),
        RecordProjection(row: nil, shadow: nil, version: RemoteVersion("")),
        RecordProjection(row: nil, shadow: ["name": "Gone here"], version: RemoteVersion("007")),
    ]

    /// Rows stored by reference are read through this: event `seq` set `["seq": seq]`.
    static func sets(_ seq: UInt64) -> JSONObject { ["seq": .number(JSONNumber(Int64(seq)))] }

    @Test("every projection survives encoding", arguments: projections)
    func roundTrip(projection: RecordProjection) throws {
        let entry = try #require(RecordEntry.encode(projection))
        try entry.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) throws in
            #expect(try RecordEntry.decode(bytes, sets: Self.sets) == projection)
            #expect(try RecordEntry.row(in: bytes, sets: Self.sets) == projection.row)
            #expect(try RecordEntry.hasRow(bytes) == (projection.row != nil))
            #expect(try RecordEntry.rowReferences(in: bytes) == nil)
        }
    }

    @Test("a row that is what one event set is stored as a reference to that event, in a few bytes", arguments: [
        RecordProjection(row: ["seq": 300]),                                       // created here, never pushed
        RecordProjection(row: ["seq": 300], shadow: ["seq": 300], version: 7),     // in step
        RecordProjection(row: ["seq": 300], shadow: ["seq": 300], version: RemoteVersion("3-917fa238")),
    ])
    func byReference(projection: RecordProjection) throws {
        let entry = try #require(RecordEntry.encode(projection, rowIsSetsOf: [300]))
        #expect(entry.count <= RecordEntry.headerSize + 2 + 2 + 10, "no copy of the fields: \(entry.count) bytes")
        try entry.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) throws in
            #expect(try RecordEntry.decode(bytes, sets: Self.sets) == projection)
            #expect(try RecordEntry.row(in: bytes, sets: Self.sets) == projection.row)
            #expect(try RecordEntry.hasRow(bytes))
            #expect(try RecordEntry.rowReferences(in: bytes) == [300])
        }
    }

    @Test("a row that differs from its shadow is never stored by reference")
    func differentRowIsCopied() throws {
        let projection = RecordProjection(row: ["seq": 300], shadow: ["seq": 1], version: 7)
        #expect(RecordEntry.encode(projection, rowIsSetsOf: [300]) == RecordEntry.encode(projection))
    }

    @Test("a pending creation and a record in step are written as encode would write them")
    func startedEntries() throws {
        var pending: [UInt8] = []
        RecordEntry.appendPendingCreation(seq: 300, to: &pending)
        #expect(pending == RecordEntry.encode(RecordProjection(row: ["seq": 300]), rowIsSetsOf: [300]))
        var inStep: [UInt8] = []
        RecordEntry.appendInStep(version: 42, seq: 300, to: &inStep)
        #expect(inStep == RecordEntry.encode(RecordProjection(row: ["seq": 300], shadow: ["seq": 300], version: 42), rowIsSetsOf: [300]))
    }

    /// The 8 bytes that say a version's token follows the layout byte.
    static let tokenMarker: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE]

    @Test("damaged entries are refused, not misread", arguments: [
        [UInt8](),                                           // empty
        Array(repeating: 0xFF, count: 8),                    // no layout byte
        Array(repeating: 0xFF, count: 8) + [UInt8(ascii: "?")] + Array("{}".utf8),  // unknown layout
        Array(repeating: 0xFF, count: 8) + [UInt8(ascii: "D"), 0, 0, 0, 9] + Array("{}{}".utf8),  // row longer than the entry
        Array(repeating: 0xFF, count: 8) + [UInt8(ascii: "R")] + Array("[1]".utf8),  // fields not an object
        Array(repeating: 0xFF, count: 8) + [UInt8(ascii: "r")],         // a reference missing
        Array(repeating: 0xFF, count: 8) + [UInt8(ascii: "e"), 0x80],   // a reference cut short
        Self.tokenMarker + [UInt8(ascii: "-"), 0],           // a token's length cut short
        Self.tokenMarker + [UInt8(ascii: "-"), 0, 5, 0x61],  // a token shorter than its length
        [0x80, 0, 0, 0, 0, 0, 0, 0, UInt8(ascii: "-")],      // a version past Int64
    ] as [[UInt8]])
    func damaged(bytes: [UInt8]) {
        #expect(throws: EventDecodingError.self) { try bytes.withUnsafeBytes { _ = try RecordEntry.decode($0, sets: Self.sets) } }
    }

    // MARK: Layout 1

    /// A store as layout 1 wrote it: `rows` (`key` → fields) and `shadow`
    /// (`key` → version, then nothing, `=` for "same as the row", or the fields).
    static func downgradeToLayout1(_ store: Store) throws {
        try store.environment.write { transaction in
            let rows = try store.environment.openDatabase("rows", flags: MDBFlags.create, in: transaction)
            let shadow = try store.environment.openDatabase("shadow", flags: MDBFlags.create, in: transaction)
            let cursor = try transaction.cursor(store.log.views.records)
            var entry = try cursor.first()
            while let current = entry {
                let key = Array(current.key)
                let projection = try RecordEntry.decode(current.value, sets: store.log.views.sets(in: transaction))
                if let row = projection.row { try transaction.put(key, JSONWriter.encodeObject(row), in: rows) }
                if projection.version != nil || projection.shadow != nil {
                    var value = Keys.sequence(UInt64(bitPattern: projection.version?.integer ?? -1))
                    if let fields = projection.shadow {
                        value += fields == projection.row ? Array("=".utf8) : JSONWriter.encodeObject(fields)
                    }
                    try transaction.put(key, value, in: shadow)
                }
                entry = try cursor.next()
            }
            try transaction.drop(store.log.views.records)
            try transaction.put(Array("layout".utf8), Array("1".utf8), in: store.meta)
        }
    }

    @Test("a layout 1 store is upgraded on opening, from the log, with every state kept")
    func upgradesLayout1() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("store").path
            let ids = ["kept", "edited", "gone-here", "gone-there"]
            let before: (records: [String: JSONObject], status: StoreStatus, projections: [RecordProjection])
            do {
                let store = try Store(directory: path, create: true)
                // What a sync logs: four records pulled, then one deleted on the server.
                var batch = try store.makePullBatch()
                batch.append(RemotePage(records: ids.enumerated().map { index, id in
                    RemoteRecord(id: id, version: RemoteVersion(Int64(1_001 + index)), fields: ["name": .string(id), "date": "2026-01-01"])
                }, cursor: RemoteCursor("1004")))
                #expect(try store.ingest(batch, entity: "Holiday", from: "server") { _, _ in }.created == 4)
                try store.ingest { writer in
                    let current = try writer.projection(entity: "Holiday", id: "gone-there")
                    try writer.append(Event(eventID: "deletion", at: 0, entity: "Holiday", recordID: "gone-there", kind: .deleted,
                                            origin: .remote, author: "server", version: 1_005), current: current)
                }
                try store.edit("Holiday", id: "edited", set: ["details": "here"])
                try store.delete("Holiday", id: "gone-here")
                try store.add("Holiday", id: "local", fields: ["name": "Local", "date": "2026-02-02"])
                before = (try store.recordMap("Holiday"), try store.status(),
                          try (ids + ["local"]).map { id in try store.snapshot { try store.log.views.projection(entity: "Holiday", id: id, in: $0) } })
                // In step, edited here, deleted here, deleted there, created here: all five layouts.
                #expect(before.projections.map(\.isPending) == [false, true, true, false, true])
                try Self.downgradeToLayout1(store)
            }

            // Read-only commands open the store too: the first opening upgrades it.
            let store = try Store(directory: path)
            #expect(try store.recordMap("Holiday") == before.records)
            #expect(try store.status() == before.status)
            let projections = try (ids + ["local"]).map { id in try store.snapshot { try store.log.views.projection(entity: "Holiday", id: id, in: $0) } }
            #expect(projections == before.projections)
            #expect(try store.verifyViews().isEmpty)
            let (rows, shadow, layout) = try store.snapshot { transaction in
                (try store.environment.existingDatabase("rows", in: transaction),
                 try store.environment.existingDatabase("shadow", in: transaction),
                 try store.meta("layout", in: transaction))
            }
            #expect(rows == nil && shadow == nil, "layout 1's databases are gone")
            #expect(layout == Store.layoutVersion)
        }
    }

    // MARK: Layout 4: rows by reference

    /// A store as layout 3 wrote it: every row a copy of its fields, never a reference.
    static func downgradeToLayout3(_ store: Store) throws {
        try store.environment.write { transaction in
            let sets = store.log.views.sets(in: transaction)
            var entries: [([UInt8], [UInt8])] = []
            let cursor = try transaction.cursor(store.log.views.records)
            var entry = try cursor.first()
            while let current = entry {
                let projection = try RecordEntry.decode(current.value, sets: sets)
                entries.append((Array(current.key), try #require(RecordEntry.encode(projection))))
                entry = try cursor.next()
            }
            for (key, value) in entries { try transaction.put(key, value, in: store.log.views.records) }
            try transaction.put(Array("layout".utf8), Array("3".utf8), in: store.meta)
        }
    }

    /// How many `records` entries hold a row by reference, and how many in all.
    static func referenceCount(_ store: Store) throws -> (byReference: Int, all: Int) {
        try store.snapshot { transaction in
            var counts = (0, 0)
            let cursor = try transaction.cursor(store.log.views.records)
            var entry = try cursor.first()
            while let current = entry {
                if try RecordEntry.rowReferences(in: current.value) != nil { counts.0 += 1 }
                counts.1 += 1
                entry = try cursor.next()
            }
            return counts
        }
    }

    @Test("imported, pulled and edited records keep no copy of their fields in the views: their rows are the events'")
    func importedAndPulledRowsAreReferences() throws {
        try withTemporaryDirectory { directory in
            let store = try Store(directory: directory.appendingPathComponent("store").path, create: true)
            let input = directory.appendingPathComponent("in.jsonl")
            try Data((1...50).map { #"{"id":"i\#($0)","name":"Imported \#($0)","date":"2026-01-01"}"# }.joined(separator: "\n").utf8)
                .write(to: input)
            #expect(try StoreTests.withDescriptor(input) { try store.importRecords("Holiday", from: $0) } == 50)
            var batch = try store.makePullBatch()
            batch.append(RemotePage(records: (1...50).map { RemoteRecord(id: "p\($0)", version: RemoteVersion(Int64($0)), fields: ["name": .string("Pulled \($0)"), "date": "2026-01-01"]) },
                                    cursor: RemoteCursor("50")))
            #expect(try store.ingest(batch, entity: "Holiday", from: "server") { _, _ in }.created == 50)
            try store.add("Holiday", id: "added", fields: ["name": "Added", "date": "2026-01-02"])
            try store.edit("Holiday", id: "i1", set: ["details": "edited"])
            try store.ingest { writer in
                let current = try writer.projection(entity: "Holiday", id: "p2")
                try writer.append(Event(eventID: "remote-edit", at: 0, entity: "Holiday", recordID: "p2", kind: .updated,
                                        origin: .remote, author: "server", set: ["details": "there"], version: 51), current: current)
            }
            try store.edit("Holiday", id: "i2", set: ["details": "added"])
            try store.edit("Holiday", id: "i2", unset: ["details"])
            // Every row is what its creation set, and the edits after it set, but i2's: an edit removed a field.
            #expect(try Self.referenceCount(store) == (100, 101))
            #expect(try store.snapshot { try store.log.views.projection(entity: "Holiday", id: "p2", in: $0) }
                    == RecordProjection(row: ["name": "Pulled 2", "date": "2026-01-01", "details": "there"],
                                        shadow: ["name": "Pulled 2", "date": "2026-01-01", "details": "there"], version: 51))
            #expect(try store.recordMap("Holiday")["i2"] == ["name": "Imported 2", "date": "2026-01-01"])
            let records = try store.recordMap("Holiday")
            #expect(records["i7"] == ["name": "Imported 7", "date": "2026-01-01"])
            #expect(records["p7"] == ["name": "Pulled 7", "date": "2026-01-01"])
            #expect(records["i1"] == ["name": "Imported 1", "date": "2026-01-01", "details": "edited"])
            #expect(try store.snapshot { try store.log.views.projection(entity: "Holiday", id: "p7", in: $0) }
                    == RecordProjection(row: ["name": "Pulled 7", "date": "2026-01-01"], shadow: ["name": "Pulled 7", "date": "2026-01-01"], version: 7))
            #expect(try store.status().pendingRecords == 51)
            try store.rebuildViews()
            #expect(try Self.referenceCount(store) == (100, 101))
            #expect(try store.verifyViews().isEmpty)
            #expect(try store.snapshot { try store.meta("layout", in: $0) } == Store.layoutVersion)
        }
    }

    @Test("a store written before rows by reference (layout 3) opens and reads as it did, verifies sound, and is marked with the current layout when written")
    func layout3StoreReadsIdentically() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("store").path
            let before: (records: [String: JSONObject], status: StoreStatus, history: [Event])
            do {
                let store = try Store(directory: path, create: true)
                var batch = try store.makePullBatch()
                batch.append(RemotePage(records: ["kept", "edited", "gone-here"].enumerated().map { index, id in
                    RemoteRecord(id: id, version: RemoteVersion(Int64(1_001 + index)), fields: ["name": .string(id), "date": "2026-01-01"])
                }, cursor: RemoteCursor("1003")))
                _ = try store.ingest(batch, entity: "Holiday", from: "server") { _, _ in }
                try store.edit("Holiday", id: "edited", set: ["details": "here"])
                try store.delete("Holiday", id: "gone-here")
                try store.add("Holiday", id: "local", fields: ["name": "Local", "date": "2026-02-02"])
                before = (try store.recordMap("Holiday"), try store.status(), try store.history(of: "kept"))
                try Self.downgradeToLayout3(store)
                #expect(try Self.referenceCount(store).byReference == 0)
            }
            let store = try Store(directory: path)
            #expect(try store.snapshot { try store.meta("layout", in: $0) } == "3", "opening changes nothing")
            #expect(try store.recordMap("Holiday") == before.records)
            #expect(try store.status() == before.status)
            #expect(try store.history(of: "kept") == before.history)
            #expect(try store.verifyViews().isEmpty, "rows copied and rows by reference say the same")
            try store.add("Holiday", id: "later", fields: ["name": "Later", "date": "2026-03-03"])
            #expect(try store.snapshot { try store.meta("layout", in: $0) } == Store.layoutVersion)
            #expect(try Self.referenceCount(store).byReference == 1)
            // Rebuilt, its rows are references wherever they can be, and read the same.
            try store.rebuildViews()
            #expect(try Self.referenceCount(store).byReference == 3)
            var expected = before.records
            expected["later"] = ["name": "Later", "date": "2026-03-03"]
            #expect(try store.recordMap("Holiday") == expected)
            #expect(try store.verifyViews().isEmpty)
        }
    }

    @Test("a layout this evsync does not know is refused, and left alone")
    func unknownLayout() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("store").path
            do {
                let store = try Store(directory: path, create: true)
                try store.add("Holiday", id: "a", fields: ["name": "A", "date": "2026-01-01"])
                try store.environment.write { try $0.put(Array("layout".utf8), Array("99".utf8), in: store.meta) }
            }
            let error = try #require(throws: StoreError.self) { try Store(directory: path) }
            #expect(error.code == .corrupt)
            #expect(error.message.contains("layout 99"))
            #expect(throws: StoreError.self) { try Store(directory: path, create: true) }
            // Left alone: its layout mark and its log are as they were.
            let environment = try Environment(directory: path, mapSize: 1 << 30, maxDatabases: 16)
            try environment.read { transaction in
                let meta = try environment.openDatabase("meta", in: transaction)
                #expect(try transaction.get(Array("layout".utf8), in: meta) == Array("99".utf8))
                let events = try environment.openDatabase("events", in: transaction)
                #expect(try transaction.cursor(events).last().map { Keys.sequence(from: $0.key) } == 1)
            }
        }
    }
}

/// View keys of record ids: unchanged up to 128 bytes, hashed beyond.
@Suite("Record keys")
struct RecordKeyTests {
    @Test func shortIdsKeepTheirKeysAndLongOnesAreHashed() {
        let id128 = String(repeating: "a", count: 128)
        #expect(Keys.record(entity: "Holiday", id: id128) == Array("holiday\0\(id128)".utf8))
        #expect(Keys.history(entity: "Holiday", id: id128) == Array("\(id128)\0holiday".utf8))
        let id129 = id128 + "b"
        let hashed = "#" + SHA256.hex(Array(id129.utf8))
        #expect(Keys.record(entity: "Holiday", id: id129) == Array("holiday\0\(hashed)".utf8))
        #expect(Keys.history(entity: "Holiday", id: id129) == Array("\(hashed)\0holiday".utf8))
        #expect(Keys.historyPrefix(id: id129) == Array("\(hashed)\0".utf8))
        #expect(Keys.record(entity: "Holiday", id: String(repeating: "z", count: 65_536)).count == 8 + 65)
    }

    /// Names lower-cased by hand where they are ASCII, by `lowercased()` where not; the id as it is.
    @Test func namesAreLowerCased() {
        #expect(Keys.record(entity: "ZBirthDay_@[`{9", id: "Ab-9_Z") == Array("zbirthday_@[`{9\0Ab-9_Z".utf8))
        #expect(Keys.record(entity: "Fête", id: "X") == Array("fête\0X".utf8))
        #expect(Keys.record(entity: "ÉTÉ", id: "x") == Array("été\0x".utf8))
        #expect(Keys.record(entity: "", id: "") == [0])
        for name in ["Holiday", "Fête", "a"] {
            #expect(Keys.record(entity: name, id: "id") == Keys.entityPrefix(name) + Array("id".utf8))
        }
        // The key a read lends from the stack is the same.
        for (name, id) in [("Holiday", "Ab-9"), ("Fête", "x"), ("HOLIDAY", String(repeating: "z", count: 128)),
                           ("Holiday", String(repeating: "z", count: 129)), ("", "")] {
            #expect(Keys.withRecordKey(entity: name, id: id) { Array($0) } == Keys.record(entity: name, id: id))
        }
    }

    @Test func sha256MatchesTheStandardVectors() {
        #expect(SHA256.hex(Array("".utf8)) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hex(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(SHA256.hex([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test("fed in pieces of any size, across block edges, and as a collection that is not contiguous: the same digest")
    func sha256FedInPieces() {
        let message = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        var hasher = SHA256()
        var offset = 0
        for size in [1, 63, 64, 65, 0, 127, 128, 129, 1_000, 3] {
            hasher.update(message[offset..<offset + size])
            offset += size
        }
        hasher.update(message[offset..<offset + 100].reversed())  // all "a": the same bytes, not contiguous
        hasher.update(message[(offset + 100)...])
        #expect(hasher.finalize() == SHA256.digest(message))
        #expect(SHA256.hex(message) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }
}
