import Foundation
import Testing
@testable import EventStore
import TestSupport

/// Power cuts at every point of a run, without root: each scenario runs under the crash-trace shim
/// (Tests/CrashTrace/crash_trace.c), which records the writes and flushes made to the store's files and what
/// the commands printed; `CrashStateExplorer` builds from that trace the states a power cut may leave (what was
/// flushed, plus any of the 4 KiB blocks written since each file's last flush, and names per their directory's
/// flush), a bounded seeded sample of them, and checks each: every write acknowledged before the cut is there,
/// `log verify` and `rebuild-views --verify` pass. The method and its limits: docs/crash-states.md.
/// `CRASH_STATES_BUDGET` (states a scenario, 48) and `CRASH_STATES_SEED` make a longer or another run.
@Suite("crash states")
struct CrashStateTests {
    /// `list Holiday --json` of the state, as id → details; a problem if it fails.
    static func holidays(_ state: CrashStateExplorer.State) throws -> (records: [String: String], problems: [String]) {
        let result = try state.run(["list", "Holiday", "--json"])
        guard result.status == Exit.ok, let array = try? result.json().arrayValue else {
            return ([:], ["evsync list Holiday --json: \(result)"])
        }
        var records: [String: String] = [:]
        for element in array {
            if let id = element.objectValue?["id"]?.stringValue { records[id] = element.objectValue?["details"]?.stringValue ?? "" }
        }
        return (records, [])
    }

    /// The ids printed by `evsync add`, one a line, missing from the state.
    static func missingAdds(_ state: CrashStateExplorer.State) throws -> [String] {
        let ids = state.acknowledged.split(separator: "\n").map(String.init)
        guard !ids.isEmpty else { return [] }
        let (records, problems) = try holidays(state)
        return problems + ids.filter { records[$0] == nil }.map { "acknowledged add \($0) is missing" }
    }

    @Test("the first add, which makes the store: nothing it leaves is damaged, and its add survives once acknowledged")
    func storeCreation() throws {
        try withSandbox { sandbox in
            let explorer = try CrashStateExplorer(sandbox: sandbox)
            try explorer.run(["add", "Holiday", "name=Day 1", "date=2026-01-01"])
            try explorer.explore("store-creation", check: Self.missingAdds)
        }
    }

    /// Each `evsync add` is a new process: on the journal design, each one's first commit made a checkpoint of
    /// its own, and a cut in it could roll the previous command's add back.
    @Test("CLI adds from separate processes: every acknowledged add survives any cut")
    func cliAdds() throws {
        try withSandbox { sandbox in
            let explorer = try CrashStateExplorer(sandbox: sandbox)
            try explorer.prepare(["add", "Holiday", "name=Before", "date=2026-01-01"])
            for day in 1...3 {
                try explorer.run(["add", "Holiday", "name=Day \(day)", "date=2026-01-0\(day)"])
            }
            try explorer.explore("cli-adds", check: Self.missingAdds)
        }
    }
}
