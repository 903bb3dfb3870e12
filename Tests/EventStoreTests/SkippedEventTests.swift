import Foundation
import Testing
@testable import EventStore
import TestSupport

/// `skipped` events: a server record the store could not hold, in the log and the history index only.
@Suite("Skipped server records")
struct SkippedEventTests {
    private func skip(_ store: Store, _ records: [SkippedRecord], cursor: String) throws -> [SkippedRecord] {
        var batch = try store.makePullBatch()
        batch.append(RemotePage(records: [], skipped: records, cursor: RemoteCursor(cursor)))
        return try store.ingest(batch, entity: "Holiday", from: "server") { _, _ in }.skipped
    }

    @Test func aSkipIsLoggedOnceAndChangesNothingButHistory() throws {
        let directory = try TemporaryDirectory()
        let store = try Store(directory: directory.file("store"), create: true)
        try store.add("Holiday", id: "a", fields: ["name": "Mine", "date": "2026-01-01"])
        let deep = SkippedRecord(id: "a", version: RemoteVersion(5), reason: "it cannot be read (nesting deeper than 256)")
        let nameless = SkippedRecord(id: nil, version: RemoteVersion(6), reason: "it has no id")
        #expect(try skip(store, [deep, nameless], cursor: "6") == [deep, nameless])
        #expect(try store.pullCursor(remote: "server", entity: "Holiday") == RemoteCursor("6"), "the cursor moves past them")

        // Read again (a crash before the next commit, a restored server): the same skip is not logged twice.
        #expect(try skip(store, [deep], cursor: "6") == [])
        let history = try store.history(of: "a")
        #expect(history.map(\.kind) == [.created, .skipped])
        #expect(history.last?.reason == deep.reason && history.last?.version == deep.version)
        #expect(try store.lastEvents(1).first?.recordID == "", "no usable id: an empty one")

        // The local creation is still the one unacknowledged change: a skip is not the server's word on it.
        let status = try store.status()
        #expect(status.skippedRecords == 2)
        #expect(status.pendingRecords == 1 && status.unacknowledgedEvents == 1)
        #expect(try store.ingest { writer in try writer.unacknowledgedLocalStates(entity: "Holiday", id: "a") }
                == [["name": "Mine", "date": "2026-01-01"]])
        #expect(try store.record("Holiday", id: "a")?.fields == ["name": "Mine", "date": "2026-01-01"])
        #expect(try store.verifyViews().isEmpty)
    }
}
