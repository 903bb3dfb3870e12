import Foundation
import Testing
@testable import EventStore
import TestSupport

/// `evsync log verify`, and every command that reads the log, against a
/// stored event with one byte changed: exit 74 and one line naming the
/// store and the event, never a signal, never output that silently differs.
@Suite("CLI log verify")
struct LogVerifyCLITests {
    static func seed(_ sandbox: Sandbox) throws {
        try sandbox.succeed(["add", "Holiday", "--id", "h", "name=Christmas", "date=2026-12-25", "observedBy:=[\"FR\"]"])
        try sandbox.succeed(["edit", "Holiday", "h", "details=Presents"])
        try sandbox.succeed(["add", "Holiday", "--id", "k", "name=Kings", "date=2027-01-06"])
    }

    @Test("a sound log: a summary line and exit 0; --json: one object")
    func sound() throws {
        try withSandbox { sandbox in
            try Self.seed(sandbox)
            let result = try sandbox.succeed(["log", "verify"])
            #expect(result.stdout == "log is sound: 3 events checked\n")
            #expect(result.stderr.isEmpty)
            let json = try sandbox.succeed(["log", "verify", "--json"])
            #expect(try json.json() == .object(["store": .string(sandbox.store.path), "events": 3, "withoutChecksum": 0, "damaged": .null,
                                                  "archives": .array([])]))
            let missing = try sandbox.run(["--store", sandbox.root.appendingPathComponent("none").path, "log", "verify"])
            #expect(missing.status == Exit.noInput, "\(missing)")
            #expect(!FileManager.default.fileExists(atPath: sandbox.root.appendingPathComponent("none").path), "creates nothing")
        }
    }

    @Test("any one byte of a stored event changed: log verify names it, and history, log tail, show --as-of and rebuild-views --verify exit 74")
    func everyByte() throws {
        try withSandbox { sandbox in
            try Self.seed(sandbox)
            let reads = [["history", "h", "--json"], ["log", "tail", "--json"], ["show", "Holiday", "h", "--json", "--as-of", "3"],
                         ["rebuild-views", "--verify"]]
            // What each printed before the damage: with it, nothing else may be printed.
            let good = try reads.map { try sandbox.succeed($0).stdout }
            let stored = try #require(try sandbox.storedEvent(2))
            let dataFile = sandbox.store.appendingPathComponent("data.mdb")
            let pristine = try Data(contentsOf: dataFile)
            for position in stored.indices {
                try pristine.write(to: dataFile)
                var changed = stored
                changed[position] ^= position.isMultiple(of: 2) ? 0x04 : 0x40
                #expect(try patchDataFile(ofStore: sandbox.store.path, stored, changed) > 0)
                let prefix = "evsync: the store at \(sandbox.store.path) is damaged (corrupt event 2 in the log: "
                let verify = try sandbox.run(["log", "verify"])
                #expect(verify.status == Exit.damaged, "byte \(position): \(verify)")
                #expect(verify.stderr.hasPrefix(prefix) && verify.stderr.split(separator: "\n").count == 1, "byte \(position): \(verify)")
                #expect(verify.stdout.isEmpty, "byte \(position): \(verify)")
                let json = try sandbox.run(["log", "verify", "--json"])
                #expect(json.status == Exit.damaged, "byte \(position): \(json)")
                #expect((try? json.json())?.objectValue?["damaged"]?.objectValue?["seq"] == 2, "byte \(position): \(json)")
                for (index, words) in reads.enumerated() {
                    let result = try sandbox.run(words)
                    #expect(result.status == Exit.damaged, "byte \(position), \(words.joined(separator: " ")): \(result)")
                    #expect(result.stderr.hasPrefix(prefix) && result.stderr.split(separator: "\n").count == 1,
                            "byte \(position), \(words.joined(separator: " ")): \(result)")
                    #expect(result.stdout.isEmpty || result.stdout == good[index], "byte \(position): \(result)")
                }
            }
        }
    }
}
