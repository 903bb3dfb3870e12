public import EventStore
public import EventSync
import Foundation
import Synchronization
import Testing

/// The web side of the random test: who else edits the server.
public protocol WebSide: Sendable {
    func put(_ id: String, _ fields: JSONObject?, in collection: String) async throws
    func live(in collection: String) async throws -> [String: JSONObject]
}

/// The in-memory remote keeps entities by name, where Kinto has collections.
public struct InMemoryServer: WebSide {
    public let remote: InMemoryRemote
    private static let entities = ["holidays": "Holiday", "birthdays": "Birthday"]
    public init(remote: InMemoryRemote) { self.remote = remote }

    public func put(_ id: String, _ fields: JSONObject?, in collection: String) async throws {
        remote.put(id, fields, in: Self.entities[collection] ?? collection)
    }
    public func live(in collection: String) async throws -> [String: JSONObject] { remote.records(in: Self.entities[collection] ?? collection) }
}

private final class RaceTrace: Sendable {
    let value = Mutex<String?>(nil)
}

/// Random local edits, web edits and syncs, then the convergence check.
public struct RandomWorld {
    let stores: [Store]
    let server: any WebSide
    let engines: [SyncEngine]
    let makeRemote: @Sendable () throws -> any SyncRemote
    var random: SplitMix64
    let seed: UInt64
    let ids = (0..<8).map { "p\($0)" }
    var trace: [String] = []

    public init(seed: UInt64, stores: [Store], server: any WebSide, remote: @escaping @Sendable () throws -> any SyncRemote) throws {
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

    public mutating func run(steps: Int) async throws {
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
