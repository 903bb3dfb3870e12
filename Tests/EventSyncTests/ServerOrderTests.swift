@testable import EventStore
@testable import EventSync
import TestSupport
import Foundation
import Synchronization
import Testing

/// What a server that contradicts itself does to the log: a record twice in
/// one page, versions going backwards, a write answered with another record.
/// Through the engine, with `InMemoryRemote` behind a wrapper that says what
/// a misbehaving server would.
struct ServerOrderTests {
    /// `InMemoryRemote`, except that pulls of Holiday return `pages` when set, and each
    /// applied write is answered with `answer(sent)` (the server then holds that).
    final class MisbehavingRemote: SyncRemote, Sendable {
        let inner = InMemoryRemote(pageSize: 10)
        private let script = Mutex<(pages: [RemotePage]?, answer: (@Sendable (JSONObject) -> JSONObject)?)>((nil, nil))
        var pages: [RemotePage]? {
            get { script.withLock { $0.pages } }
            set { script.withLock { $0.pages = newValue } }
        }
        var answer: (@Sendable (JSONObject) -> JSONObject)? {
            get { script.withLock { $0.answer } }
            set { script.withLock { $0.answer = newValue } }
        }

        var address: String { inner.address }
        func batchLimit() throws -> Int { inner.batchLimit() }
        func isVersion(_ version: RemoteVersion, olderThan other: RemoteVersion) -> Bool {
            inner.isVersion(version, olderThan: other)
        }

        func changes(of entity: EntitySchema, since: RemoteCursor?, onPage: (RemotePage) throws -> Bool) throws {
            guard let pages, entity.name == "Holiday" else { return try inner.changes(of: entity, since: since, onPage: onPage) }
            for page in pages { guard try onPage(page) else { return } }
        }

        func push(_ operations: [RemoteOperation], of entity: EntitySchema) throws -> [RemoteOutcome] {
            let outcomes = inner.push(operations, of: entity)
            guard let answer else { return outcomes }
            return zip(operations, outcomes).map { operation, outcome in
                guard case .applied = outcome, let sent = operation.sentState.fields else { return outcome }
                let version = inner.put(operation.id, answer(sent), in: entity.name)
                return .appliedDifferently(current: RemoteRecord(id: operation.id, version: version, fields: answer(sent)))
            }
        }
    }

    private func record(_ id: String, _ version: String, _ name: String) -> RemoteRecord {
        RemoteRecord(id: id, version: RemoteVersion(version), fields: holiday(name))
    }

    @Test func aRecordTwiceInOnePageKeepsItsNewestVersion() throws {
        let directory = try TemporaryDirectory()
        let store = try Store(directory: directory.file("store"), create: true)
        let remote = MisbehavingRemote()
        let engine = SyncEngine(store: store) { remote }
        remote.pages = [RemotePage(records: [record("a", "v7", "Newest"), record("a", "v5", "Older"),
                                             record("b", "v3", "Old b"), record("b", "v8", "New b")], cursor: RemoteCursor("v8"))]
        _ = try engine.syncBlocking()
        #expect(try store.record("Holiday", id: "a")?.fields == holiday("Newest"))
        #expect(try store.record("Holiday", id: "b")?.fields == holiday("New b"))
        let history = try store.history(of: "a")
        #expect(history.map(\.version) == [RemoteVersion("v7")], "\(history)")
        #expect(try store.verifyViews().isEmpty)
    }

    @Test func aServerGoingBackwardsNeverTakesARecordBackToAnOlderVersion() throws {
        let directory = try TemporaryDirectory()
        let store = try Store(directory: directory.file("store"), create: true)
        let remote = MisbehavingRemote()
        let engine = SyncEngine(store: store) { remote }
        remote.pages = [RemotePage(records: [record("a", "v7", "Newest")], cursor: RemoteCursor("v7"))]
        _ = try engine.syncBlocking()
        let events = try store.lastSeq()
        remote.pages = [RemotePage(records: [record("a", "v5", "Older"), RemoteRecord(id: "a", version: RemoteVersion("v6"), fields: nil)],
                                   cursor: RemoteCursor("v9"))]
        let report = try engine.syncBlocking()
        #expect(report.pulled == 0 && report.deletedHere == 0, "\(report)")
        #expect(try store.record("Holiday", id: "a")?.fields == holiday("Newest"))
        #expect(try store.lastSeq() == events, "nothing logged for versions older than the log's")
    }

    @Test func aWriteAnsweredWithAnotherRecordIsFoldedInNeverAcknowledgedAsOurs() throws {
        let directory = try TemporaryDirectory()
        let store = try Store(directory: directory.file("store"), create: true)
        let remote = MisbehavingRemote()
        let engine = SyncEngine(store: store) { remote }
        try store.add("Holiday", id: "a", fields: holiday("Mine"))
        // The server keeps what was sent and adds a field of its own.
        remote.answer = { sent in sent.merging(["details": "added by the server"]) { $1 } }
        let report = try engine.syncBlocking()
        let events = try store.history(of: "a")
        #expect(!events.contains { $0.kind == .acknowledged && $0.server == .present(holiday("Mine")) }, "\(events)")
        #expect(events.last?.kind == .created && events.last?.origin == .remote, "the server's state, as pulled: \(events)")
        #expect(try store.record("Holiday", id: "a")?.fields == holiday("Mine", details: "added by the server"))
        #expect(try store.status().pendingRecords == 0)
        #expect(report.pulled == 1 && report.pushed == 0, "\(report)")

        // Answered with a field changed from what was sent: a conflict, as the policy settles it.
        try store.edit("Holiday", id: "a", set: ["name": "Mine again"])
        remote.answer = { sent in sent.merging(["name": "The server's name"]) { $1 } }
        _ = try engine.syncBlocking()
        let conflict: Event = try #require(try store.history(of: "a").last { $0.kind == .conflict })
        #expect(conflict.local?.fields?["name"] == "Mine again")
        #expect(conflict.server?.fields?["name"] == "The server's name")
        #expect(try store.record("Holiday", id: "a")?.fields["name"] == "The server's name")
        #expect(try store.verifyViews().isEmpty)
    }
}
