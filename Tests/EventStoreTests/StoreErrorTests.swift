import Foundation
import Testing
@testable import EventStore
@testable import Storage
import TestSupport

/// The store's errors keep their causes (LMDB's code, the undecodable entry)
/// and tell a full map, a damaged store and a store cut short apart.
@Suite("Store errors")
struct StoreErrorTests {
    /// LMDB's return codes, from lmdb.h (the tests do not import the C module).
    enum LMDB {
        static let mapFull: Int32 = -30792
        static let corrupted: Int32 = -30796
    }

    static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    /// A file of `count` JSON Lines Holidays, open for reading.
    static func holidayLines(_ count: Int, in directory: URL) throws -> FileHandle {
        let url = directory.appendingPathComponent("holidays-\(UUID().uuidString).jsonl")
        let lines = (0..<count).map { #"{"name":"Holiday \#($0) \#(String(repeating: "x", count: 100))","date":"2026-01-01"}"# }
        try Data(lines.joined(separator: "\n").utf8).write(to: url)
        return try FileHandle(forReadingFrom: url)
    }

    @Test("a full map is .mapFull with LMDB's MDB_MAP_FULL, names the store and its map, and writes nothing")
    func mapFull() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("store").path
            do {
                let store = try Store(directory: path, create: true, mapSizes: [256 << 10])
                try store.add("Holiday", id: "first", fields: ["name": "First", "date": "2026-01-01"])
                let input = try Self.holidayLines(3000, in: directory)
                defer { try? input.close() }
                let error = try #require(throws: StoreError.self) { try store.importRecords("Holiday", from: input.fileDescriptor) }
                #expect(error.code == .mapFull)
                #expect(error.storageCode == LMDB.mapFull)
                #expect(error.directory == path)
                #expect(error.message == "the store at \(path) is full (its 256 KiB map): nothing was written; "
                    + "a store cannot grow past its map, so sync it, then start a new store and pull into it")
            }
            let reopened = try Store(directory: path)
            #expect(try reopened.lastSeq() == 1)
            #expect(try reopened.verifyViews().isEmpty)
        }
    }

    @Test("a data file cut short is .corrupt (MDB_CORRUPTED, with the reason) before LMDB maps it")
    func cutShort() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("store").path
            do {
                let store = try Store(directory: path, create: true)
                let input = try Self.holidayLines(2000, in: directory)
                defer { try? input.close() }
                _ = try store.importRecords("Holiday", from: input.fileDescriptor)
            }
            let data = path + "/data.mdb"
            let size = try #require(try FileManager.default.attributesOfItem(atPath: data)[.size] as? Int)
            let pages = size / Self.pageSize / 2
            #expect(truncate(data, off_t(pages * Self.pageSize)) == 0)
            let error = try #require(throws: StoreError.self) { try Store(directory: path) }
            #expect(error.code == .corrupt)
            #expect(error.storageCode == LMDB.corrupted)
            let cause = try #require(error.cause as? StorageError)
            #expect(cause.reason?.hasPrefix("data.mdb is cut short: it ends at page \(pages), but the store uses pages up to ") == true)
            #expect(error.message.hasPrefix("the store at \(path) is damaged (data.mdb is cut short"))
            #expect(error.message.hasSuffix(")"))
            #expect(error.remedy == .restoreFromBackup)
        }
    }

    /// The page numbers held in the free-page database (LMDB's database 0).
    static func freePages(_ store: Store) throws -> Set<Int> {
        try store.snapshot { transaction in
            var pages = Set<Int>()
            let cursor = try transaction.cursor(Database(dbi: 0, name: "free pages"))
            var entry = try cursor.first()
            while let current = entry {
                let words = current.value.count / 8
                let list = (0..<words).map { current.value.loadUnaligned(fromByteOffset: $0 * 8, as: UInt64.self) }
                if let count = list.first { pages.formUnion(list.dropFirst().prefix(Int(count)).map { Int($0) }) }
                entry = try cursor.next()
            }
            return pages
        }
    }

    @Test("a data file that ends before its free pages is sound: it opens, reads and takes writes")
    func freePagesPastTheEnd() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("store").path
            var cut: Int?
            do {
                let store = try Store(directory: path, create: true)
                let input = try Self.holidayLines(2000, in: directory)
                defer { try? input.close() }
                _ = try store.importRecords("Holiday", from: input.fileDescriptor)
                try store.add("Holiday", id: "h", fields: ["name": "H", "date": "2026-01-01"])
                // Each write copies the pages it changes and frees the old copies: soon after a checkpoint, when LMDB
                // may take pages freed before it (the journal pins the last one, 256 writes apart at most), the
                // last pages are free ones.
                for round in 0..<600 where cut == nil {
                    try store.edit("Holiday", id: "h", set: ["details": .string("round \(round)")])
                    let free = try Self.freePages(store)
                    var first = store.environment.lastPage + 1
                    while free.contains(first - 1) { first -= 1 }
                    if first <= store.environment.lastPage { cut = first }
                }
            }
            let pages = try #require(cut, "the last page never became free")
            // What LMDB itself does not write: pages a transaction took and freed again. Cut them off.
            #expect(truncate(path + "/data.mdb", off_t(pages * Self.pageSize)) == 0)
            let store = try Store(directory: path)
            #expect(try store.records("Holiday").count == 2001)
            #expect(try store.verifyViews().isEmpty)
            try store.add("Holiday", id: "after", fields: ["name": "After", "date": "2026-01-01"])
            #expect(try store.record("Holiday", id: "after") != nil)
        }
    }

    @Test("an event that does not parse is .corrupt with an EventDecodingError, not .invalidData")
    func undecodableEvent() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("store").path
            do {
                // Of format 1, JSON, which has no checksum: damage shows as JSON that does not parse.
                let store = try Store(directory: path, create: true)
                try store.appendAsFormat1([Event(eventID: "e", at: 0, entity: "Holiday", recordID: "h", kind: .created, origin: .local,
                                                 author: "me", set: ["name": "Christmas", "date": "2026-12-25"])])
            }
            #expect(try patchDataFile(ofStore: path, #"{"format":1,"seq":1,"#, #"{"format":1,"seq";1,"#) > 0)
            let store = try Store(directory: path)
            let error = try #require(throws: StoreError.self) { try store.history(of: "h") }
            #expect(error.code == .corrupt)
            let cause = try #require(error.cause as? EventDecodingError)
            #expect(!cause.inViews && !cause.isNewerFormat)
            #expect(error.message == "the store at \(path) is damaged (corrupt event 1 in the log: event is not valid JSON "
                + "(at byte 17: expected ':'))")
            #expect(error.remedy == .restoreFromBackup)
            #expect(try store.record("Holiday", id: "h") != nil, "the views still answer")
        }
    }

    @Test("a view entry that does not parse is .corrupt, says so, and rebuildViews repairs it")
    func undecodableView() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("store").path
            do {
                let store = try Store(directory: path, create: true)
                try store.add("Holiday", id: "h", fields: ["name": "Christmas", "date": "2026-12-25"])
                // A field removed, its row is no longer what events set: the view holds a copy of it.
                try store.edit("Holiday", id: "h", set: ["details": "d"])
                try store.edit("Holiday", id: "h", unset: ["details"])
            }
            #expect(try patchDataFile(ofStore: path, #"R{"date":"2026-12-25","name":"Christmas"}"#, #"R{"date":"2026-12-25","name":"Christmas"]"#) > 0)
            let store = try Store(directory: path)
            let error = try #require(throws: StoreError.self) { try store.record("Holiday", id: "h") }
            #expect(error.code == .corrupt)
            #expect((error.cause as? EventDecodingError)?.inViews == true)
            #expect(error.message.hasPrefix("the views of the store at \(path) are damaged (a view entry's fields are not valid JSON"))
            #expect(error.message.hasSuffix(")"))
            #expect(error.remedy == .rebuildViews)
            try store.rebuildViews()
            #expect(try store.record("Holiday", id: "h")?.fields["name"] == "Christmas")
        }
    }

    @Test("a store that has lost its log is .corrupt, not opened as a new, empty one")
    func lostLog() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("store").path
            do {
                let store = try Store(directory: path, create: true)
                try store.add("Holiday", id: "h", fields: ["name": "Christmas", "date": "2026-12-25"])
                try store.environment.write { try $0.drop(store.log.events) }
            }
            for create in [false, true] {
                let error = try #require(throws: StoreError.self) { try Store(directory: path, create: create) }
                #expect(error.code == .corrupt)
                #expect(error.message == "the store at \(path) is damaged (its events database is missing)")
                #expect(error.remedy == .restoreFromBackup)
            }
        }
    }
}
