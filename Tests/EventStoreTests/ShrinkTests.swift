import Foundation
import Testing
@testable import EventStore
import TestSupport

/// `Store.shrinkDataFile` right after a compaction in the same process, and what crashes leave in the directory.
@Suite("shrinking the data file")
struct ShrinkTests {
    static func leftovers(in directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix(".data.mdb") }
    }

    /// The compaction plans half its records on a thread of its own, which held the `Store` a moment after the
    /// compaction returned: the shrink then found the store still open in this process and refused (9 of 25
    /// `log compact` runs after a kill). The thread now gives the store back before it says it is done.
    @Test("a shrink right after each of many compactions in one process finds the store closed, every time")
    func shrinkRightAfterCompaction() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("store").path
            for round in 0..<20 {
                try {
                    let store = try Store(directory: path, create: true)
                    for index in 0..<30 {
                        try store.add("Holiday", id: "r\(round)-\(index)", fields: ["name": "H", "date": "2027-01-01"])
                    }
                    _ = try store.compact(before: .seq(try store.lastSeq()))
                }()
                let shrink = try Store.shrinkDataFile(in: path)
                #expect(shrink.shrunk, "round \(round)")
            }
            let store = try Store(directory: path)
            #expect(try store.records("Holiday").count == 600)
            #expect(try store.verifyLog().damage == nil)
        }
    }

    @Test("what a killed shrink or a killed store creation left is removed, and nothing is left after a shrink")
    func leftoversRemoved() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("store").path
            // A creation killed before it linked its file in: the next one makes the store and removes it.
            try FileManager.default.createDirectory(atPath: path + "/.data.mdb.creating-killed", withIntermediateDirectories: true)
            try Data(count: 8192).write(to: URL(fileURLWithPath: path + "/.data.mdb.creating-killed/data.mdb"))
            try { _ = try Store(directory: path, create: true).add("Holiday", id: "a", fields: ["name": "A", "date": "2027-01-01"]) }()
            #expect(try Self.leftovers(in: path).isEmpty)
            // A shrink killed while its copy's data file was being made.
            try FileManager.default.createDirectory(atPath: path + "/.data.mdb.shrinking-killed/.data.mdb.creating-killed",
                                                    withIntermediateDirectories: true)
            #expect(try Store.shrinkDataFile(in: path).shrunk)
            #expect(try Self.leftovers(in: path).isEmpty)
            #expect(try FileManager.default.contentsOfDirectory(atPath: path).sorted() == ["data.mdb", "lock.mdb"])
            #expect(try Store(directory: path).record("Holiday", id: "a") != nil)
        }
    }
}
