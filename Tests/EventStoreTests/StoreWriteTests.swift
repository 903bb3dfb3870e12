import Dispatch
import Foundation
import Synchronization
import Testing
@testable import EventStore
import TestSupport

/// `Store.write` and `Store.read`: many changes in one transaction, all or nothing, and writes
/// awaited together sharing one commit.
@Suite("Store transactions", .timeLimit(.minutes(2)))
struct StoreWriteTests {
    static func holiday(_ name: String) -> JSONObject { ["name": .string(name), "date": "2027-01-01"] }

    struct Refused: Error, Equatable {}

    /// The id of the last LMDB write transaction committed: one more per commit.
    static func commits(_ store: Store) throws -> Int {
        try store.environment.read { $0.id }
    }

    @Test("a write of several changes is one commit; reads inside see the changes made so far")
    func severalChangesOneCommit() throws {
        try withTemporaryStore { store, _ in
            try store.add("Holiday", id: "old", fields: Self.holiday("Old"))
            let before = try Self.commits(store)
            let seen = try store.write { transaction -> [String] in
                try transaction.add("Holiday", id: "h1", fields: Self.holiday("One"))
                try transaction.add(Holiday(id: "h2", name: "Two", date: Date(timeIntervalSince1970: 1_798_848_000)))
                try transaction.edit("Holiday", id: "h1", set: ["details": "edited"])
                try transaction.delete("Holiday", id: "old")
                #expect(try transaction.record("Holiday", id: "h1")?.fields["details"] == "edited")
                #expect(try transaction.record(Holiday.self, id: "old") == nil)
                return try transaction.records("Holiday").map(\.id)
            }
            #expect(seen == ["h1", "h2"])
            #expect(try Self.commits(store) == before + 1)
            #expect(try store.lastSeq() == 5)
            #expect(try store.records("Holiday").map(\.id) == ["h1", "h2"])
        }
    }

    @Test("a throw inside write leaves the log and the views exactly as they were, and comes back as thrown")
    func throwLeavesNothing() throws {
        try withTemporaryStore { store, _ in
            try store.add("Holiday", id: "kept", fields: Self.holiday("Kept"))
            let before = try (store.lastSeq(), store.records("Holiday"), Self.commits(store))
            #expect(throws: Refused.self) {
                try store.write { transaction in
                    try transaction.add("Holiday", id: "h1", fields: Self.holiday("One"))
                    try transaction.edit("Holiday", id: "kept", set: ["details": "x"])
                    throw Refused()
                }
            }
            #expect(try (store.lastSeq(), store.records("Holiday"), Self.commits(store)) == before)
            #expect(try store.history(of: "h1").isEmpty)
            #expect(try store.verifyViews().isEmpty)
        }
    }

    @Test("a change refused inside a write can be caught, and the others commit")
    func refusedChangeCaught() throws {
        try withTemporaryStore { store, _ in
            try store.write { transaction in
                try transaction.add("Holiday", id: "h1", fields: Self.holiday("One"))
                #expect(throws: StoreError.self) { try transaction.add("Holiday", id: "h1", fields: Self.holiday("Again")) }
                #expect(throws: StoreError.self) { try transaction.add("Holiday", id: "h2", fields: ["name": 12]) }
                #expect(throws: StoreError.self) { try transaction.delete("Holiday", id: "nobody") }
                try transaction.add("Holiday", id: "h3", fields: Self.holiday("Three"))
            }
            #expect(try store.records("Holiday").map(\.id) == ["h1", "h3"])
            #expect(try store.lastSeq() == 2)
        }
    }

    @Test("a transaction used after its closure, and a write inside a write, fail with .failure instead of writing or hanging")
    func misuseFails() throws {
        try withTemporaryStore { store, _ in
            let escaped = try store.write { $0 }
            #expect { try escaped.add("Holiday", fields: Self.holiday("Late")) } throws: { ($0 as? StoreError)?.code == .failure }
            let snapshot = try store.read { $0 }
            #expect { try snapshot.records("Holiday") } throws: { ($0 as? StoreError)?.code == .failure }
            #expect {
                try store.write { _ in try store.add("Holiday", fields: Self.holiday("Nested")) }
            } throws: { ($0 as? StoreError)?.code == .failure }
            #expect(try store.lastSeq() == 0)
        }
    }

    @Test("a read sees one snapshot: a write committed during it is not seen in it")
    func readIsOneSnapshot() throws {
        try withTemporaryStore { store, directory in
            try store.add("Holiday", id: "h1", fields: Self.holiday("One"))
            let other = try Store(directory: directory.path)
            let (inside, count) = try store.read { snapshot -> (UInt64, Int) in
                let seq = try snapshot.lastSeq()
                // Another thread commits meanwhile: the snapshot stays where it was.
                let done = DispatchSemaphore(value: 0)
                Thread.detachNewThread {
                    _ = try? other.add("Holiday", id: "h2", fields: Self.holiday("Two"))
                    done.signal()
                }
                done.wait()
                return (seq, try snapshot.records("Holiday").count)
            }
            #expect(inside == 1 && count == 1)
            #expect(try store.lastSeq() == 2)
        }
    }

    @Test("writes awaited at the same time share one commit; one that throws leaves no trace and the others commit")
    func awaitedWritesShareACommit() async throws {
        let directory = try TemporaryDirectory("evsync-tests")
        let store = try Store(directory: directory.file("store"), create: true)
        // Hold the writer in a first write until the others are queued behind it (a handshake, not a sleep).
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        async let first: Void = store.write { transaction in
            started.signal()
            release.wait()
            try transaction.add("Holiday", id: "first", fields: Self.holiday("First"))
        }
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { started.wait(); continuation.resume() }
        }
        let before = try Self.commits(store)
        let outcomes = try await withThrowingTaskGroup(of: Bool.self) { group in
            for n in 0..<10 {
                group.addTask {
                    do {
                        try await store.write { transaction in
                            try transaction.add("Holiday", id: "t\(n)", fields: Self.holiday("T\(n)"))
                            if n == 4 { throw Refused() }
                        }
                        return true
                    } catch is Refused {
                        return false
                    }
                }
            }
            // Every one is queued behind the first; then let the first go.
            while store.environment.groupCommit.queuedCount < 10 { await Task.yield() }
            release.signal()
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        try await first
        #expect(outcomes.filter { !$0 }.count == 1)
        // The first write, then the ten in one.
        #expect(try Self.commits(store) == before + 2)
        #expect(try store.records("Holiday").map(\.id).sorted() == (["first"] + (0..<10).filter { $0 != 4 }.map { "t\($0)" }).sorted())
        #expect(try store.history(of: "t4").isEmpty)
        #expect(try store.verifyLog().damage == nil)
    }

    @Test("synchronous writes from many threads, through two Store values, share one commit; one that throws fails alone")
    func synchronousWritesShareACommit() throws {
        let directory = try TemporaryDirectory("evsync-tests")
        let stores = [try Store(directory: directory.file("store"), create: true), try Store(directory: directory.file("store"))]
        // The first write leads; it is held until the others are queued behind it (a handshake, not a sleep).
        let started = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let finished = DispatchGroup()
        let outcomes = Mutex<[String: String]>([:])
        func onThread(_ body: @escaping @Sendable () -> Void) {
            finished.enter()
            Thread { body(); finished.leave() }.start()
        }
        onThread {
            do {
                try stores[0].write { transaction in
                    started.signal()
                    release.wait()
                    try transaction.add("Holiday", id: "first", fields: Self.holiday("First"))
                }
            } catch {
                outcomes.withLock { $0["first"] = "\(error)" }
            }
        }
        started.wait()
        let before = try Self.commits(stores[0])
        for n in 0..<10 {
            onThread {
                do {
                    if n == 4 {
                        // A change the store refuses: an id already taken.
                        try stores[n % 2].write { transaction in
                            try transaction.add("Holiday", id: "t4", fields: Self.holiday("T4"))
                            try transaction.add("Holiday", id: "t4", fields: Self.holiday("T4 again"))
                        }
                    } else {
                        try stores[n % 2].add("Holiday", id: "t\(n)", fields: Self.holiday("T\(n)"))
                    }
                    outcomes.withLock { $0["t\(n)"] = "stored" }
                } catch {
                    outcomes.withLock { $0["t\(n)"] = (error as? StoreError).map { "\($0.code)" } ?? "\(error)" }
                }
            }
        }
        let deadline = ContinuousClock.now + .seconds(30)
        while stores[0].environment.groupCommit.queuedCount < 10 && ContinuousClock.now < deadline { usleep(1_000) }
        #expect(stores[0].environment.groupCommit.queuedCount == 10, "every writer waits behind the first")
        release.signal()
        finished.wait()
        let said = outcomes.withLock { $0 }
        #expect(said["first"] == nil)
        #expect(said["t4"] == "\(StoreError.Code.invalidData)")
        #expect(said.filter { $0.value == "stored" }.count == 9)
        // The first write, then the ten in one.
        #expect(try Self.commits(stores[0]) == before + 2)
        #expect(try stores[1].records("Holiday").map(\.id).sorted() == (["first"] + (0..<10).filter { $0 != 4 }.map { "t\($0)" }).sorted())
        #expect(try stores[0].history(of: "t4").isEmpty)
        #expect(try stores[0].verifyLog().damage == nil)
    }

    @Test("16 tasks writing through two Store values on one directory lose nothing, and log verify passes")
    func sixteenTasksTwoStores() async throws {
        let directory = try TemporaryDirectory("evsync-tests")
        let path = directory.file("store")
        let stores = [try Store(directory: path, create: true), try Store(directory: path)]
        #expect(SharedEnvironments.users(of: path) == 2)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<16 {
                group.addTask {
                    for n in 0..<25 {
                        let store = stores[(task + n) % 2]
                        if n % 5 == 0 {
                            try store.add("Holiday", id: "s\(task)-\(n)", fields: Self.holiday("S"))
                        } else {
                            _ = try await store.write { try $0.add("Holiday", id: "s\(task)-\(n)", fields: Self.holiday("S")) }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let reopened = try Store(directory: path)
        #expect(try reopened.records("Holiday").count == 400)
        #expect(try reopened.lastSeq() == 400)
        #expect(try reopened.verifyLog().damage == nil)
        #expect(try reopened.verifyViews().isEmpty)
    }
}

/// A record type for the typed calls.
private struct Holiday: EntityRecord, Equatable {
    static let entityName = "Holiday"
    var id: String
    var name: String
    var date: Date
}
