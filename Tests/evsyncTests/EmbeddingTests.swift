import Foundation
import Testing
@testable import EventStore
import TestSupport

/// The library embedded in an app while the CLI works on the same store: what an app holds stays
/// held, and it hears of the CLI's commits without polling.
@Suite("Embedding beside the CLI", .timeLimit(.minutes(3)))
struct EmbeddingTests {
    static func holiday(_ name: String) -> JSONObject { ["name": .string(name), "date": "2027-01-01"] }

    @available(*, deprecated, message: "tests a deprecated observation, kept working")
    @Test("a commit by another process reaches observe through inotify, with an hour between fallback looks")
    func anotherProcessesCommitIsSeen() async throws {
        let sandbox = try TemporaryDirectory("evsync-embedding")
        let box = Sandbox(root: URL(fileURLWithPath: sandbox.path))
        try box.succeed(["add", "Holiday", "--id", "first", "name=First", "date=2027-01-01"])
        let store = try Store(directory: box.store.path)
        var seqs = store.logChanges(every: .seconds(3_600)).makeAsyncIterator()
        #expect(try await seqs.next() == 1)
        #expect(store.environment.commits.isWatching, "inotify is watching the store")
        var records = store.observe("Holiday").makeAsyncIterator()
        #expect(try await records.next()?.records.map(\.id) == ["first"])
        try box.succeed(["add", "Holiday", "--id", "second", "name=Second", "date=2027-01-02"])
        #expect(try await seqs.next() == 2)
        let update = try await records.next()
        #expect(update?.changes.inserted.map(\.id) == ["second"] && update?.records.count == 2)
    }

    @Test("two Store values on one directory, one released while the CLI writes alongside: every add told stored is there")
    func releasingOneStoreKeepsTheOthersLocks() async throws {
        let sandbox = try TemporaryDirectory("evsync-embedding")
        let box = Sandbox(root: URL(fileURLWithPath: sandbox.path))
        let path = box.store.path
        let app = try Store(directory: path, configuration: Store.Configuration(create: true))
        var second: Store? = try Store(directory: path)
        #expect(SharedEnvironments.users(of: path) == 2)
        try second?.add("Holiday", id: "from-second", fields: Self.holiday("Second"))
        second = nil
        #expect(SharedEnvironments.users(of: path) == 1, "the environment stays open for the other Store")

        // The CLI adds 150 records while the app adds 300; then every one of them must be there.
        let cli = try box.launchShell(#"for i in $(seq 1 150); do "$EVSYNC_BINARY_PATH" add Holiday --id cli-$i name=C date=2027-01-01 || exit 1; done"#)
        var told: [String] = []
        for n in 0..<300 {
            let id = "app-\(n)"
            if n % 3 == 0 {
                _ = try await app.write { try $0.add("Holiday", id: id, fields: Self.holiday("A")) }
            } else {
                try app.add("Holiday", id: id, fields: Self.holiday("A"))
            }
            told.append(id)
        }
        let result = cli.wait(timeout: 120)
        #expect(result.status == 0, "\(result)")
        let held = Set(try app.records("Holiday").map(\.id))
        #expect(told.allSatisfy(held.contains), "missing: \(told.filter { !held.contains($0) }.prefix(5))")
        #expect((1...150).allSatisfy { held.contains("cli-\($0)") })
        #expect(held.contains("from-second") && held.count == 451)
        #expect(try app.verifyLog().damage == nil)
        let verify = try box.run(["rebuild-views", "--verify"])
        #expect(verify.status == 0, "\(verify)")
    }
}
