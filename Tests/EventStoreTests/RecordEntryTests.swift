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

    @Test("every projection survives encoding, and the row is found without decoding", arguments: projections)
    func roundTrip(projection: RecordProjection) throws {
        let entry = try #require(RecordEntry.encode(projection))
        try entry.withUnsafeBytes { bytes in
            #expect(try RecordEntry.decode(bytes) == projection)
            let row = try RecordEntry.row(in: bytes).map { try RecordEntry.decodeFields($0) }
            #expect(row == projection.row)
        }
    }

    @Test("a record the store knows nothing of has no entry")
    func nothingKnown() {
        #expect(RecordEntry.encode(RecordProjection()) == nil)
    }

    @Test("a pending creation and a record in step are written as encode would write them")
    func startedEntries() throws {
        let fields = JSONWriter.encodeObject(["name": "A", "date": "2026-01-01"])
        var pending: [UInt8] = []
        RecordEntry.startPendingCreation(in: &pending)
        pending += fields
        #expect(pending == RecordEntry.encode(RecordProjection(row: ["name": "A", "date": "2026-01-01"])))
        var inStep: [UInt8] = []
        RecordEntry.startInStep(version: 42, in: &inStep)
        inStep += fields
        #expect(inStep == RecordEntry.encode(RecordProjection(row: ["name": "A", "date": "2026-01-01"],
                                                              shadow: ["name": "A", "date": "2026-01-01"], version: 42)))
    }

    /// The 8 bytes that say a version's token follows the layout byte.
    static let tokenMarker: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE]

    @Test("damaged entries are refused, not misread", arguments: [
        [UInt8](),                                           // empty
        Array(repeating: 0xFF, count: 8),                    // no layout byte
        Array(repeating: 0xFF, count: 8) + [UInt8(ascii: "?")] + Array("{}".utf8),  // unknown layout
        Array(repeating: 0xFF, count: 8) + [UInt8(ascii: "D"), 0, 0, 0, 9] + Array("{}{}".utf8),  // row longer than the entry
        Array(repeating: 0xFF, count: 8) + [UInt8(ascii: "R")] + Array("[1]".utf8),  // fields not an object
        Self.tokenMarker + [UInt8(ascii: "-"), 0],           // a token's length cut short
        Self.tokenMarker + [UInt8(ascii: "-"), 0, 5, 0x61],  // a token shorter than its length
        [0x80, 0, 0, 0, 0, 0, 0, 0, UInt8(ascii: "-")],      // a version past Int64
    ] as [[UInt8]])
    func damaged(bytes: [UInt8]) {
        #expect(throws: EventDecodingError.self) { try bytes.withUnsafeBytes { _ = try RecordEntry.decode($0) } }
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
                let projection = try RecordEntry.decode(current.value)
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
                          try (ids + ["local"]).map { id in try store.read { try store.log.views.projection(entity: "Holiday", id: id, in: $0) } })
                // In step, edited here, deleted here, deleted there, created here: all five layouts.
                #expect(before.projections.map(\.isPending) == [false, true, true, false, true])
                try Self.downgradeToLayout1(store)
            }

            // Read-only commands open the store too: the first opening upgrades it.
            let store = try Store(directory: path)
            #expect(try store.recordMap("Holiday") == before.records)
            #expect(try store.status() == before.status)
            let projections = try (ids + ["local"]).map { id in try store.read { try store.log.views.projection(entity: "Holiday", id: id, in: $0) } }
            #expect(projections == before.projections)
            #expect(try store.verifyViews().isEmpty)
            let (rows, shadow, layout) = try store.read { transaction in
                (try store.environment.existingDatabase("rows", in: transaction),
                 try store.environment.existingDatabase("shadow", in: transaction),
                 try store.meta("layout", in: transaction))
            }
            #expect(rows == nil && shadow == nil, "layout 1's databases are gone")
            #expect(layout == Store.layoutVersion)
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

    @Test func sha256MatchesTheStandardVectors() {
        #expect(SHA256.hex(Array("".utf8)) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hex(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(SHA256.hex([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }
}
