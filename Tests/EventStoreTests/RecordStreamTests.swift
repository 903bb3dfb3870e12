import Testing
@testable import EventStore
import TestSupport

/// `forEachRecord`: what `list` streams, in the order `records` returns.
@Suite("Streaming records")
struct RecordStreamTests {
    @Test("records arrive in id order, long ids (keyed by their hash) merged in, and stop when asked")
    func orderAndEarlyStop() throws {
        try withTemporaryStore { store, _ in
            // Ids past 128 bytes are keyed by their hash (`#…`, before every other key): they come from servers.
            let long = ["m" + String(repeating: "x", count: 200), "a" + String(repeating: "y", count: 200), "zz" + String(repeating: "z", count: 200)]
            var batch = try store.makePullBatch()
            batch.append(RemotePage(records: long.enumerated().map { index, id in
                RemoteRecord(id: id, version: RemoteVersion(Int64(10 + index)), fields: ["name": "long", "date": "2026-01-01"])
            }, cursor: RemoteCursor("12")))
            _ = try store.ingest(batch, entity: "Holiday", from: "server") { _, _ in }
            for id in ["b", "n", "c", "z", "0"] {
                try store.add("Holiday", id: id, fields: ["name": .string(id), "date": "2026-01-01"])
            }
            try store.add("Birthday", id: "other", fields: ["name": "Ada", "date": "1815-12-10"])

            var streamed: [Record] = []
            try store.forEachRecord("holiday") { streamed.append($0); return true }
            #expect(streamed == (try store.records("Holiday")))
            #expect(streamed.map(\.id) == (["b", "n", "c", "z", "0"] + long).sorted())

            var calls = 0
            try store.forEachRecord("Holiday") { _ in calls += 1; return calls < 3 }
            #expect(calls == 3, "returning false stops the walk")
            calls = 0
            try store.forEachRecord("Holiday") { _ in calls += 1; return false }
            #expect(calls == 1, "a long id held back is not passed after a stop")
        }
    }
}
