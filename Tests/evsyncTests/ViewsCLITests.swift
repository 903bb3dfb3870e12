import Foundation
import Testing
@testable import EventStore
import TestSupport

@Suite("CLI rebuild-views --verify")
struct ViewsCLITests {
    /// Tampers with the sandbox's store through the library, in this process.
    /// The `Store` is released before returning, so the environment is
    /// closed again before the binary opens it.
    static func tamper(_ sandbox: Sandbox, _ body: (Store, Transaction) throws -> Void) throws {
        let store = try Store(directory: sandbox.store.path)
        try store.environment.write { transaction in try body(store, transaction) }
    }

    @Test("tampered views are reported (exit 1) and repaired by rebuild-views", arguments: [
        "change a row", "delete a row", "add a row", "delete an outbox entry",
    ])
    func detectsAndRepairs(tampering: String) throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "--id", "a", "name=A", "date=2026-01-01"])
            try sandbox.succeed(["add", "Holiday", "--id", "b", "name=B", "date=2026-01-02"])
            try sandbox.succeed(["edit", "Holiday", "a", "details=x"])
            let records = try sandbox.records("Holiday")
            let status = try sandbox.status()

            let expected: String
            switch tampering {
            case "change a row":
                try Self.tamper(sandbox) { store, transaction in
                    try transaction.put(Keys.record(entity: "Holiday", id: "a"), try #require(RecordEntry.encode(RecordProjection(row: ["date": "2026-01-01", "name": "Evil"]))), in: store.log.views.records)
                }
                expected = "records holiday/a: different"
            case "delete a row":
                try Self.tamper(sandbox) { store, transaction in
                    try #require(try transaction.delete(Keys.record(entity: "Holiday", id: "b"), in: store.log.views.records))
                }
                expected = "records holiday/b: missing"
            case "add a row":
                try Self.tamper(sandbox) { store, transaction in
                    try transaction.put(Keys.record(entity: "Birthday", id: "ghost"), try #require(RecordEntry.encode(RecordProjection(row: ["date": "2026-01-01", "name": "Boo"]))), in: store.log.views.records)
                }
                expected = "records birthday/ghost: unexpected"
            default:
                try Self.tamper(sandbox) { store, transaction in
                    try #require(try transaction.delete(Keys.record(entity: "Holiday", id: "a"), in: store.log.views.outbox))
                }
                expected = "outbox holiday/a: missing"
            }

            let verify = try sandbox.run(["rebuild-views", "--verify"])
            #expect(verify.status == Exit.failure, "\(verify)")
            #expect(verify.lines == [expected], "\(verify)")
            #expect(verify.stderr.contains("1 difference"), "\(verify)")
            #expect(verify.stderr.contains("rebuild-views"), "the message says how to repair: \(verify)")
            // Verifying repaired nothing.
            #expect(try sandbox.run(["rebuild-views", "--verify"]).status == Exit.failure)

            let rebuild = try sandbox.succeed(["rebuild-views"])
            #expect(rebuild.stdout == "rebuilt the views from 3 events\n")
            let clean = try sandbox.succeed(["rebuild-views", "--verify"])
            #expect(clean.stdout == "views match the log (3 events)\n")
            #expect(try sandbox.records("Holiday") == records)
            #expect(try sandbox.status() == status)
        }
    }

    @Test("many differences are all printed")
    func manyDifferences() throws {
        try withSandbox { sandbox in
            let file = try sandbox.write("h.jsonl", (1...30).map { #"{"id":"h\#($0)","name":"H","date":"2026-01-01"}"# }.joined(separator: "\n"))
            try sandbox.succeed(["import", "Holiday", file])
            try Self.tamper(sandbox) { store, transaction in try transaction.empty(store.log.views.records) }
            let verify = try sandbox.run(["rebuild-views", "--verify"])
            #expect(verify.status == Exit.failure)
            #expect(verify.lines.count == 30)
            #expect(verify.lines.allSatisfy { $0.hasPrefix("records holiday/h") && $0.hasSuffix(": missing") })
            #expect(verify.stderr.contains("30 differences"), "\(verify)")
            #expect(try sandbox.records("Holiday").isEmpty)
            try sandbox.succeed(["rebuild-views"])
            #expect(try sandbox.records("Holiday").count == 30)
        }
    }

    @Test("after a compaction moved events, rebuild-views and rebuild-views --verify count the same events: those replayed")
    func countsAgreeAfterACompaction() throws {
        try withSandbox { sandbox in
            try CompactionPowerCutTests.seed(sandbox.store.path, records: 4)
            try sandbox.succeed(["log", "compact", "--before", "13", "--wait", "0"])
            let status = try sandbox.status()
            let live = try #require(status["liveEvents"]?.int64Value)
            #expect(live < (try #require(status["events"]?.int64Value)), "the compaction moved events: \(status)")
            let rebuild = try sandbox.succeed(["rebuild-views", "--json"]).json().objectValue?["events"]?.int64Value
            let verify = try sandbox.succeed(["rebuild-views", "--verify", "--json"]).json().objectValue?["events"]?.int64Value
            #expect(rebuild == live && verify == live, "rebuild \(String(describing: rebuild)), verify \(String(describing: verify)), live \(live)")
            #expect(try sandbox.succeed(["rebuild-views"]).stdout == "rebuilt the views from \(live) events\n")
            #expect(try sandbox.succeed(["rebuild-views", "--verify"]).stdout == "views match the log (\(live) events)\n")
        }
    }
}
