import Foundation
import Testing
@testable import EventStore
import TestSupport

/// What the views keep besides the log: for a record that events set, not a second copy of its fields.
@Suite("Footprint of the views")
struct FootprintTests {
    static let details = String(repeating: "A long description of the holiday. ", count: 8)

    /// The bytes of every value of the `records` view, and how many there are.
    static func recordsView(_ store: Store) throws -> (bytes: Int, entries: Int) {
        try store.snapshot { transaction in
            var total = (0, 0)
            let cursor = try transaction.cursor(store.log.views.records)
            var entry = try cursor.first()
            while let current = entry {
                total.0 += current.value.count
                total.1 += 1
                entry = try cursor.next()
            }
            return total
        }
    }

    @Test("imported, pulled and pulled-then-edited records take a few bytes each in the records view, not their fields")
    func viewsHoldNoCopy() throws {
        try withTemporaryDirectory { directory in
            let store = try Store(directory: directory.appendingPathComponent("store").path, create: true)
            let input = directory.appendingPathComponent("in.jsonl")
            let lines = (1...20).map { #"{"id":"i\#($0)","name":"Imported \#($0)","date":"2026-01-01","details":"\#(Self.details)"}"# }
            try Data(lines.joined(separator: "\n").utf8).write(to: input)
            #expect(try StoreTests.withDescriptor(input) { try store.importRecords("Holiday", from: $0) } == 20)
            var batch = try store.makePullBatch()
            batch.append(RemotePage(records: (1...20).map {
                RemoteRecord(id: "p\($0)", version: RemoteVersion(Int64($0)), fields: ["name": .string("Pulled \($0)"), "date": "2026-01-01",
                                                                                    "details": .string(Self.details)])
            }, cursor: RemoteCursor("20")))
            #expect(try store.ingest(batch, entity: "Holiday", from: "server") { _, _ in }.created == 20)
            try store.ingest { writer in
                for index in 1...20 {
                    let id = "p\(index)"
                    try writer.append(Event(eventID: "edit-\(index)", at: 0, entity: "Holiday", recordID: id, kind: .updated, origin: .remote,
                                            author: "server", set: ["details": .string("Edited: " + Self.details)], version: RemoteVersion(Int64(100 + index))),
                                      current: try writer.projection(entity: "Holiday", id: id))
                }
            }
            let view = try Self.recordsView(store)
            #expect(view.entries == 40)
            #expect(view.bytes <= 40 * 24, "\(view.bytes) bytes for 40 records of ~\(Self.details.utf8.count + 50) bytes of fields each")
            #expect(try store.record("Holiday", id: "p3")?.fields["details"] == .string("Edited: " + Self.details))
            #expect(try store.record("Holiday", id: "i3")?.fields["details"] == .string(Self.details))
        }
    }
}
