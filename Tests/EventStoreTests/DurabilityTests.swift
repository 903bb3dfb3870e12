import Foundation
import Testing
@testable import EventStore
import TestSupport

/// `Store.Configuration.durability`: what a power cut may take back under `.normal`, and that it
/// never leaves a damaged store.
@Suite("Durability")
struct DurabilityTests {
    /// The two meta pages of the data file in `store`, as they are now (in the page cache: what a disk
    /// holding every flushed write, and nothing else, would hold of them after a power cut).
    static func metaPages(_ store: String) throws -> Data {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: store + "/data.mdb"))
        let pageSize = Int(bytes[40]) | Int(bytes[41]) << 8
        return bytes.prefix(2 * pageSize)
    }

    @Test("under .normal, a power cut that loses the last commit's meta page leaves the store as before that commit, sound")
    func normalLosesTheLastCommitOnly() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("store").path
            var configuration = Store.Configuration(create: true, durability: .normal)
            configuration.author = "test@host"
            var before = Data()
            do {
                let store = try Store(directory: path, configuration: configuration)
                #expect(store.durability == .normal)
                for i in 0..<50 { try store.add("Holiday", id: "h\(i)", fields: ["name": "Holiday \(i)", "date": "2027-01-01"]) }
                // Each commit's pages are flushed before its meta page is written (and that with the next
                // commit's pages): what a power cut after the next commit's pages may leave is this.
                before = try Self.metaPages(path)
                try store.write { tx in
                    try tx.add("Holiday", id: "last", fields: ["name": "Last", "date": "2027-12-31"])
                    try tx.edit("Holiday", id: "h0", set: ["name": "Edited"])
                }
                #expect(try store.lastSeq() == 52)
            }
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path + "/data.mdb"))
            try handle.write(contentsOf: before)
            try handle.close()

            let store = try Store(directory: path, configuration: configuration)
            #expect(try store.lastSeq() == 50)
            #expect(try store.records("Holiday").count == 50)
            #expect(try store.record("Holiday", id: "h0")?.fields["name"] == "Holiday 0")
            #expect(try store.record("Holiday", id: "last") == nil)
            #expect(try store.verifyLog().damage == nil)
            #expect(try store.verifyViews().isEmpty)
            // And it takes writes again.
            try store.add("Holiday", id: "after", fields: ["name": "After", "date": "2028-01-01"])
            #expect(try store.lastSeq() == 51)
        }
    }

    @Test("the durability a Store was configured with is its own, whatever other Stores on the file say")
    func perStore() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("store").path
            let normal = try Store(directory: path, configuration: Store.Configuration(create: true, durability: .normal))
            let full = try Store(directory: path, configuration: Store.Configuration())
            #expect(normal.durability == .normal)
            #expect(full.durability == .full)
            try normal.add("Holiday", id: "a", fields: ["name": "A", "date": "2027-01-01"])
            try full.add("Holiday", id: "b", fields: ["name": "B", "date": "2027-01-01"])
            #expect(try full.records("Holiday").count == 2)
            #expect(try normal.records("Holiday").count == 2)
        }
    }
}
