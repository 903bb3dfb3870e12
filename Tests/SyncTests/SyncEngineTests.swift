@testable import EventStore
@testable import EventSync
@testable import KintoAdapter
import TestSupport
import Foundation
import Synchronization
import Testing

/// The engine through the library: status updates, and the sync algorithm
/// against `InMemoryRemote` (no server needed).
struct SyncEngineTests {
    private func makeStore(_ directory: TemporaryDirectory, _ name: String = "store") throws -> Store {
        try Store(directory: directory.file(name), create: true)
    }

    // MARK: 15: status updates

    @Test func statusUpdatesYieldInProgressThenTheFinishedReport() async throws {
        let directory = try TemporaryDirectory()
        let store = try makeStore(directory)
        let remote = InMemoryRemote(pageSize: 2)
        for n in 0..<5 { remote.put("r\(n)", holiday("Remote \(n)"), in: "Holiday") }
        try store.add("Holiday", id: "local", fields: holiday("Local"))
        let engine = SyncEngine(store: store) { remote }

        let updates = engine.statusUpdates()
        async let collected: [SyncStatus] = {
            var statuses: [SyncStatus] = []
            for await status in updates {
                statuses.append(status)
                if case .finished = status { break }
            }
            return statuses
        }()
        let report = try await engine.sync()
        let statuses = await collected

        #expect(report.pulled == 5)
        #expect(report.pushed == 1)
        #expect(report.result == .newData)
        #expect(statuses.first == .inProgress(nil))
        #expect(statuses.last == .finished(report))
        let steps = statuses.dropFirst().dropLast()
        #expect(steps.allSatisfy { if case .inProgress(_?) = $0 { true } else { false } })
        #expect(steps.contains(.inProgress(SyncProgress(phase: .pulling, entity: "Holiday", records: 5, pages: 3, total: 5))))
        #expect(steps.contains { if case .inProgress(let step?) = $0 { step.phase == .pushing && step.records == 1 } else { false } })
        #expect(remote.records(in: "Holiday")["local"] == holiday("Local"))
    }

    @Test func aFailedSyncStillFinishesItsStatusUpdatesAndWritesNothing() async throws {
        let directory = try TemporaryDirectory()
        let store = try makeStore(directory)
        try store.add("Holiday", id: "local", fields: holiday("Local"))
        let before = try store.status()
        let engine = SyncEngine(store: store) { throw SyncError(.unavailable, "no network in this test") }
        let updates = engine.statusUpdates()
        async let last: SyncStatus? = {
            for await status in updates { if case .finished = status { return status } }
            return nil
        }()
        await #expect(throws: SyncError.self) { try await engine.sync() }
        guard case .finished(let report)? = await last else {
            Issue.record("no .finished status")
            return
        }
        #expect(report.result == .failed)
        #expect(report.error == "no network in this test")
        #expect(try store.status() == before)
    }

    @Test func syncLockIsExclusiveUntilReleased() throws {
        let directory = try TemporaryDirectory()
        var lock: SyncLock? = try SyncLock(directory: directory.path)
        #expect(lock != nil)
        do {
            _ = try SyncLock(directory: directory.path)
            Issue.record("a second lock was granted")
        } catch {
            #expect(error.code == .busy)
            #expect(error.message == "sync already in progress")
        }
        // The engine takes the same lock: a sync while it is held is refused.
        let store = try makeStore(directory, "store")
        let storeLock = try SyncLock(directory: store.directory)
        let engine = SyncEngine(store: store) { InMemoryRemote() }
        #expect { _ = try engine.syncBlocking() } throws: { ($0 as? SyncError)?.code == .busy }
        withExtendedLifetime(storeLock) {}
        lock = nil
        #expect(throws: Never.self) { _ = try SyncLock(directory: directory.path) }
    }

    // MARK: import into a store that has synced

    /// Import's fast path inserts only records the store has no entry for;
    /// here records deleted locally but still on the server, or deleted on
    /// the server, are re-created through the general fold, and the views
    /// still equal a replay of the log.
    @Test func importOverRecordsDeletedHereOrOnTheServer() throws {
        let directory = try TemporaryDirectory()
        let store = try makeStore(directory)
        let remote = InMemoryRemote()
        remote.put("kept", holiday("Kept"), in: "Holiday")
        remote.put("gone", holiday("Gone"), in: "Holiday")
        remote.put("dropped", holiday("Dropped"), in: "Holiday")
        let engine = SyncEngine(store: store) { remote }
        #expect(try engine.syncBlocking().pulled == 3)
        remote.put("dropped", nil, in: "Holiday")
        _ = try engine.syncBlocking()
        #expect(try store.record("Holiday", id: "dropped") == nil)
        try store.delete("Holiday", id: "gone")
        try store.delete("Holiday", id: "kept")
        #expect(try store.status().pendingRecords == 2)

        let lines = [
            #"{"id":"gone","name":"Gone","date":"2026-05-01"}"#,           // as the server has it: in step again
            #"{"id":"kept","name":"Kept anew","date":"2026-05-01"}"#,      // differs from the server: pending
            #"{"id":"dropped","name":"Dropped anew","date":"2026-05-03"}"#,  // the server has a tombstone: pending
            #"{"id":"fresh","name":"Fresh","date":"2026-05-02"}"#,
        ]
        let file = directory.file("import.jsonl")
        try Data(lines.joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: file))
        let descriptor = open(file, O_RDONLY)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        #expect(try store.importRecords("Holiday", from: descriptor) == 4)

        #expect(try store.record("Holiday", id: "gone")?.fields == holiday("Gone"))
        #expect(try store.record("Holiday", id: "dropped")?.fields["name"] == "Dropped anew")
        #expect(try store.status().pendingRecords == 3)
        #expect(try store.verifyViews().isEmpty)
        let report = try engine.syncBlocking()
        #expect(report.pushed == 3)
        #expect(remote.records(in: "Holiday")["kept"]?["name"] == "Kept anew")
        #expect(remote.records(in: "Holiday")["dropped"]?["name"] == "Dropped anew")
        #expect(remote.records(in: "Holiday")["fresh"]?["name"] == "Fresh")
        #expect(try store.status().pendingRecords == 0)
    }

    // MARK: 15: random edits on two stores and the server converge

    /// Two stores and a web app make random changes to a few shared ids while
    /// the stores sync now and then under random policies. Once the edits
    /// stop, a sync of A, B and A again must leave both stores equal to the
    /// server's live records with nothing pending, and a further sync of
    /// each must find nothing to do.
    @Test(arguments: 1...40 as ClosedRange<UInt64>)
    func randomEditsOnTwoStoresAndTheServerConverge(seed: UInt64) async throws {
        let directory = try TemporaryDirectory()
        let remote = InMemoryRemote(pageSize: 3)
        var world = try RandomWorld(seed: seed, stores: [makeStore(directory, "a"), makeStore(directory, "b")],
                                    server: InMemoryServer(remote: remote)) { remote }
        try await world.run(steps: 80)
    }
}

/// The web side of the random test: who else edits the server.
protocol WebSide: Sendable {
    func put(_ id: String, _ fields: JSONObject?, in collection: String) async throws
    func live(in collection: String) async throws -> [String: JSONObject]
}

/// The in-memory remote keeps entities by name, where Kinto has collections.
struct InMemoryServer: WebSide {
    let remote: InMemoryRemote
    private static let entities = ["holidays": "Holiday", "birthdays": "Birthday"]
    func put(_ id: String, _ fields: JSONObject?, in collection: String) async throws {
        remote.put(id, fields, in: Self.entities[collection] ?? collection)
    }
    func live(in collection: String) async throws -> [String: JSONObject] { remote.records(in: Self.entities[collection] ?? collection) }
}

extension KintoWebApp: WebSide {
    func put(_ id: String, _ fields: JSONObject?, in collection: String) async throws {
        if let fields {
            try await put(id, fields, in: collection)
        } else if try await get(id, in: collection) != nil {
            try await delete(id, in: collection)
        }
    }

    func live(in collection: String) async throws -> [String: JSONObject] { try await records(in: collection) }
}

final class RaceTrace: Sendable {
    let value = Mutex<String?>(nil)
}

/// Random local edits, web edits and syncs, then the convergence check.
struct RandomWorld {
    let stores: [Store]
    let server: any WebSide
    let engines: [SyncEngine]
    let makeRemote: @Sendable () throws -> any SyncRemote
    var random: SplitMix64
    let seed: UInt64
    let ids = (0..<8).map { "p\($0)" }
    var trace: [String] = []

    init(seed: UInt64, stores: [Store], server: any WebSide, remote: @escaping @Sendable () throws -> any SyncRemote) throws {
        self.seed = seed
        self.stores = stores
        self.server = server
        self.random = SplitMix64(seed: seed)
        makeRemote = remote
        engines = stores.map { SyncEngine(store: $0, remote: remote) }
    }

    private mutating func pick<T>(_ items: [T]) -> T { items[Int.random(in: 0..<items.count, using: &random)] }

    private mutating func randomHoliday() -> JSONObject {
        var fields: JSONObject = ["name": .string(pick(["N0", "N1", "N2", "N3"])), "date": .string(pick(["2026-01-01", "2026-02-02"]))]
        if Bool.random(using: &random) { fields["details"] = .string(pick(["D0", "D1", "D2"])) }
        return fields
    }

    private mutating func localEdit(_ index: Int) throws {
        let store = stores[index]
        let id = pick(ids)
        let name = index == 0 ? "A" : "B"
        if try store.record("Holiday", id: id) == nil {
            let fields = randomHoliday()
            trace.append("\(name) add \(id) \(JSONWriter.string(.object(fields)))")
            try store.add("Holiday", id: id, fields: fields)
            return
        }
        switch Int.random(in: 0..<5, using: &random) {
        case 0:
            trace.append("\(name) delete \(id)")
            try store.delete("Holiday", id: id)
        case 1:
            trace.append("\(name) unset details \(id)")
            try store.edit("Holiday", id: id, unset: ["details"])
        case 2:
            let value = pick(["D0", "D1", "D2"])
            trace.append("\(name) edit \(id) details=\(value)")
            try store.edit("Holiday", id: id, set: ["details": .string(value)])
        default:
            let value = pick(["N0", "N1", "N2", "N3"])
            trace.append("\(name) edit \(id) name=\(value)")
            try store.edit("Holiday", id: id, set: ["name": .string(value)])
        }
    }

    /// A web edit decided now (so the seed decides it) and applied to whatever the server holds then.
    struct WebEdit: Sendable {
        enum Action: Sendable { case delete, setName(String), setDetails(String), replace }
        let id: String
        let action: Action
        let fields: JSONObject

        /// Applies the edit; returns what it did, for the trace.
        func apply(to server: any WebSide) async throws -> String {
            let live = try await server.live(in: "holidays")
            guard var current = live[id] else {
                try await server.put(id, fields, in: "holidays")
                return "web create \(id) \(JSONWriter.string(.object(fields)))"
            }
            switch action {
            case .delete:
                try await server.put(id, nil, in: "holidays")
                return "web delete \(id)"
            case .setName(let name): current["name"] = .string(name)
            case .setDetails(let details): current["details"] = .string(details)
            case .replace: current = fields
            }
            try await server.put(id, current, in: "holidays")
            return "web put \(id) \(JSONWriter.string(.object(current)))"
        }
    }

    private mutating func randomWebEdit() -> WebEdit {
        let id = pick(ids)
        let action: WebEdit.Action = switch Int.random(in: 0..<4, using: &random) {
        case 0: .delete
        case 1: .setName(pick(["N0", "N1", "N2", "N3"]))
        case 2: .setDetails(pick(["D0", "D1", "D2"]))
        default: .replace
        }
        return WebEdit(id: id, action: action, fields: randomHoliday())
    }

    /// Syncs store `index`; sometimes the web app edits the server between the sync's pull and its push.
    private mutating func sync(_ index: Int, policy: ConflictPolicy? = nil, allowRace: Bool = true) async throws -> SyncReport {
        let policy = policy ?? pick(ConflictPolicy.allCases)
        let race = allowRace && Int.random(in: 0..<3, using: &random) == 0 ? randomWebEdit() : nil
        let name = index == 0 ? "A" : "B"
        let engine: SyncEngine
        let raceTrace = RaceTrace()
        if let race {
            let (server, makeRemote) = (server, makeRemote)
            engine = SyncEngine(store: stores[index]) {
                HookedRemote(try makeRemote(), beforePush: {
                    let done = try blocking { try await race.apply(to: server) }
                    raceTrace.value.withLock { $0 = done }
                })
            }
        } else {
            engine = engines[index]
        }
        let report = try await onThread { try engine.syncBlocking(policy: policy) }
        trace.append("sync \(name) \(policy.rawValue)" + (raceTrace.value.withLock { $0 }.map { " [between pull and push: \($0)]" } ?? "")
                     + " -> pulled \(report.pulled) pushed \(report.pushed) deletedHere \(report.deletedHere) deletedThere \(report.deletedThere) conflicts \(report.conflicts)")
        #expect(report.rejected.isEmpty, "seed \(seed): \(report.rejected)")
        // Nobody changes the server after the push phase, so the sync leaves nothing pending.
        let pending = try stores[index].status().pendingRecords
        #expect(pending == 0, "seed \(seed): \(pending) record(s) still pending after sync \(name); steps:\n\(trace.joined(separator: "\n"))")
        return report
    }

    private func snapshot(_ store: Store) throws -> [String: JSONObject] {
        Dictionary(uniqueKeysWithValues: try store.records("Holiday").map { ($0.id, $0.fields) })
    }

    mutating func run(steps: Int) async throws {
        for _ in 0..<steps {
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<3: try localEdit(0)
            case 3..<6: try localEdit(1)
            case 6..<8: trace.append(try await randomWebEdit().apply(to: server))
            default: _ = try await sync(Int.random(in: 0..<2, using: &random))
            }
        }
        // The edits stop: A, B, A.
        for index in [0, 1, 0] { _ = try await sync(index, allowRace: false) }
        let live = try await server.live(in: "holidays")
        let context = Comment(rawValue: "seed \(seed); steps:\n" + trace.joined(separator: "\n"))
        for store in stores {
            #expect(try snapshot(store) == live, context)
            #expect(try store.status().pendingRecords == 0, context)
            #expect(try store.verifyViews().isEmpty, context)
        }
        for index in [0, 1] {
            let report = try await sync(index, allowRace: false)
            #expect(report.result == .noData, "\(report) \(context)")
        }
    }
}
