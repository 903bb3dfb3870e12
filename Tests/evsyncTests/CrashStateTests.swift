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
/// `CRASH_STATES_BUDGET` (about how many states a scenario checks, 96) and `CRASH_STATES_SEED` make a longer or another run.
@Suite("crash states")
struct CrashStateTests {
    static func withExplorer(_ body: (CrashStateExplorer) throws -> Void) throws {
        try withSandbox { sandbox in try body(try CrashStateExplorer(sandbox: sandbox)) }
    }

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

    /// The ids printed by `evsync add`, one a line, before the trace or in it before the cut, missing from the state.
    static func missingAdds(_ state: CrashStateExplorer.State) throws -> [String] {
        let ids = (state.prepared + state.acknowledged).split(separator: "\n").map(String.init)
        guard !ids.isEmpty else { return [] }
        let (records, problems) = try Self.holidays(state)
        return problems + ids.filter { records[$0] == nil }.map { "acknowledged add \($0) is missing" }
    }

    /// The explorer itself: a write acknowledged without a flush must be found lost in some state, and the same
    /// write flushed (`sync FILE`: fsync) before the acknowledgement never; likewise a new file whose directory was
    /// not flushed. Without this, a model that kept everything would pass every scenario.
    @Test("the explorer finds an acknowledged write or name that was never flushed, and passes one that was",
          arguments: [(name: false, flushed: false), (name: false, flushed: true), (name: true, flushed: false), (name: true, flushed: true)])
    func explorerFindsAnUnflushedAcknowledgement(name: Bool, flushed: Bool) throws {
        try Self.withExplorer { explorer in
            let file = explorer.disk.appendingPathComponent("saved").path
            // For the content alone, the file is made (and its name flushed) before the trace.
            try explorer.prepare { _ in
                if !name { try Data().write(to: URL(fileURLWithPath: file)) }
            }
            let flush = name ? " && sync '\(file)'\(flushed ? " && sync '\(explorer.disk.path)'" : "")" : flushed ? " && sync '\(file)'" : ""
            let shell = try explorer.launch(URL(fileURLWithPath: "/bin/sh"), ["-c", "printf 'the record' > '\(file)'\(flush) && echo saved"])
            let finished = shell.wait()
            try #require(finished.status == 0 && finished.stdout == "saved\n", "\(finished)")
            let failures = try explorer.failures("self-test", storeChecks: false) { state in
                let content = try? String(contentsOfFile: file, encoding: .utf8)
                return state.acknowledged.isEmpty || content == "the record" ? [] : ["acknowledged, and the file holds \(content.debugDescription)"]
            }
            if flushed {
                #expect(failures.isEmpty, "\(failures)")
            } else {
                let lost = name ? "the file holds nil" : #"the file holds Optional("")"#
                #expect(failures.contains { $0.contains(lost) }, "the explorer missed a write lost after its acknowledgement: \(failures)")
            }
        }
    }

    /// LMDB writes a new `data.mdb`'s two meta pages without a flush, and an empty or half-written `data.mdb` is
    /// damage to every later command: so the store's first file is made aside, flushed, and linked in under its
    /// name (`Environment.createDataFileIfMissing`). A cut before that leaves no store; after it, a whole one.
    @Test("the first add, which makes the store: its add survives once acknowledged, and nothing it leaves is damaged")
    func storeCreation() throws {
        try Self.withExplorer { explorer in
            try explorer.run(["add", "Holiday", "name=Day 1", "date=2026-01-01"])
            let failures = try explorer.failures("store-creation", check: Self.missingAdds)
            for failure in failures { Issue.record("store-creation: \(failure)") }
        }
    }

    /// Each `evsync add` is a new process: on the journal design, each one's first commit made a checkpoint of
    /// its own, and a cut in it could roll the previous command's add back.
    @Test("CLI adds from separate processes: every acknowledged add survives any cut")
    func cliAdds() throws {
        try Self.withExplorer { explorer in
            try explorer.prepare(["add", "Holiday", "name=Before", "date=2026-01-01"])
            for day in 1...3 {
                try explorer.run(["add", "Holiday", "name=Day \(day)", "date=2026-01-0\(day)"])
            }
            try explorer.explore("cli-adds", check: Self.missingAdds)
        }
    }

    /// What `evsync add`s acknowledged before the trace, and what `GuardProbe writer-N`s acknowledged (`add ID`, `edit ID`, `delete ID`, and `deleting ID` before a deletion
    /// begins), each writer on its own, missing from the state.
    static func writerLosses(_ state: CrashStateExplorer.State) throws -> [String] {
        var problems = try missingAdds(CrashStateExplorer.State(explorer: state.explorer, printed: [:], prepared: state.prepared,
                                                                isLast: state.isLast, bootID: state.bootID))
        var records: [String: String]?
        for (pid, text) in state.printed {
            var added: [String] = [], edited: [String] = [], deleted: Set<String> = [], deleting: Set<String> = []
            for line in text.split(separator: "\n") {
                let words = line.split(separator: " ").map(String.init)
                guard words.count == 2 else { continue }
                switch words[0] {
                case "add": added.append(words[1])
                case "edit": edited.append(words[1])
                case "delete": deleted.insert(words[1])
                case "deleting": deleting.insert(words[1])
                default: break
                }
            }
            guard !added.isEmpty else { continue }
            if records == nil {
                let listed = try holidays(state)
                records = listed.records
                problems += listed.problems
            }
            let found = records ?? [:]
            // A deletion under way at the cut may be on the disk or not.
            problems += added.filter { found[$0] == nil && !deleting.contains($0) }.map { "writer \(pid): acknowledged add \($0) is missing" }
            problems += edited.filter { found[$0] != "edited" && !deleting.contains($0) }.map { "writer \(pid): acknowledged edit of \($0) is missing" }
            problems += deleted.filter { found[$0] != nil }.map { "writer \(pid): acknowledged deletion of \($0) undone" }
        }
        return problems
    }

    /// One process, or two at once (so that the store passes from one to the other between writes), writing
    /// single records through the library.
    @Test("processes writing single records through the library: every acknowledged add, edit and deletion survives any cut",
          arguments: [1, 2])
    func libraryWriters(count: Int) throws {
        try Self.withExplorer { explorer in
            try explorer.prepare(["add", "Holiday", "name=Before", "date=2026-01-01"])
            let writers = try (0..<count).map { _ in try explorer.launch(SingleWritePowerCutTests.probe, ["writer-6", explorer.store]) }
            for writer in writers {
                let finished = writer.wait()
                try #require(finished.status == 0, "GuardProbe writer-6: \(finished)")
            }
            try explorer.explore(count == 1 ? "library-writer" : "two-writers", check: Self.writerLosses)
        }
    }

    /// An import is one transaction, written through a writable map (MDB_WRITEMAP): all of it or none of it, and
    /// all of it once it said so.
    @Test("an import: all of it or none of it after any cut, and all of it once reported")
    func importAll() throws {
        try Self.withExplorer { explorer in
            try explorer.prepare(["add", "Holiday", "name=Before", "date=2026-01-01"])
            let ids = (0..<300).map { String(format: "imported-%04d", $0) }
            let lines = ids.map { #"{"id":"\#($0)","name":"Imported \#($0)","date":"2026-03-01"}"# }.joined(separator: "\n")
            let file = try explorer.sandbox.write("import.jsonl", lines + "\n")
            try explorer.run(["import", "Holiday", file, "--json"])
            try explorer.explore("import") { state in
                let (records, problems) = try Self.holidays(state)
                let present = ids.filter { records[$0] != nil }.count
                if !state.acknowledged.isEmpty, present != ids.count { return problems + ["the import was reported, and \(present) of its \(ids.count) records are there"] }
                if present != 0, present != ids.count { return problems + ["\(present) of the import's \(ids.count) records are there: a part of one transaction"] }
                let before = state.prepared.trimmingCharacters(in: .whitespacesAndNewlines)
                return problems + (records[before] == nil ? ["the record added before the import is missing"] : [])
            }
        }
    }

    @Test("a compaction and its shrink: every record as it was after any cut")
    func compaction() throws {
        try Self.withExplorer { explorer in
            let records = 40
            var before = ""
            try explorer.prepare { store in
                try CompactionPowerCutTests.seed(store, records: records)
                before = try explorer.sandbox.succeed(["--store", store, "list", "Holiday", "--json"]).stdout
            }
            let compaction = try explorer.run(["log", "compact", "--before", "\(3 * records + 1)", "--json"])
            // The shrink ran, rewriting the data file: no other process had the store open.
            let dataFile = try compaction.json().objectValue?["dataFile"]?.objectValue
            #expect(dataFile?["heldOpenBy"] == nil && dataFile?["bytesAfter"] != nil, "\(compaction)")
            try explorer.explore("compaction") { state in
                let listed = try state.run(["list", "Holiday", "--json"])
                return listed.status == Exit.ok && listed.stdout == before ? [] : ["the records are not as before the compaction: \(listed)"]
            }
        }
    }

    /// A backup is written beside its directory, flushed and checked, then renamed into place: under its name
    /// there is a whole store or nothing, at any cut, and a whole store once it was reported.
    @Test("a backup: under its name a whole store or nothing after any cut, and a whole store once reported")
    func backup() throws {
        try Self.withExplorer { explorer in
            var before = ""
            try explorer.prepare { store in
                for day in 1...2 { try explorer.sandbox.succeed(["--store", store, "add", "Holiday", "name=Before \(day)", "date=2026-01-0\(day)"]) }
                before = try explorer.sandbox.succeed(["--store", store, "list", "Holiday", "--json"]).stdout
            }
            let backup = explorer.disk.appendingPathComponent("backup").path
            try explorer.run(["backup", backup, "--json"])
            try explorer.explore("backup") { state in
                var problems: [String] = []
                let listed = try state.run(["list", "Holiday", "--json"])
                if listed.stdout != before { problems.append("the store is not as before the backup: \(listed)") }
                guard FileManager.default.fileExists(atPath: backup) else {
                    return problems + (state.acknowledged.isEmpty ? [] : ["the backup was reported, and \(backup) is gone"])
                }
                for arguments in [["log", "verify"], ["list", "Holiday", "--json"]] {
                    let result = try state.run(["--store", backup] + arguments)
                    if result.status != Exit.ok || (arguments[0] == "list" && result.stdout != before) {
                        problems.append("\(state.acknowledged.isEmpty ? "unreported" : "reported") backup, evsync --store \(backup) \(arguments.joined(separator: " ")): \(result)")
                    }
                }
                return problems
            }
        }
    }

    static let kinto = ProcessInfo.processInfo.environment["EVSYNC_TEST_KINTO"].flatMap { $0.isEmpty ? nil : $0 }
    static let kintoAuthFile = ProcessInfo.processInfo.environment["EVSYNC_TEST_KINTO_AUTH_FILE"].flatMap { $0.isEmpty ? nil : $0 }

    /// A pull from a real Kinto (`EVSYNC_TEST_KINTO`, as the sync tests): another store pushes records to a fresh
    /// bucket, then the traced store, holding a record of its own, syncs.
    @Test("a pull: everything the sync reported is there after any cut, and the record written before it",
          .enabled(if: kinto != nil && kintoAuthFile != nil, "needs a Kinto server: set EVSYNC_TEST_KINTO and EVSYNC_TEST_KINTO_AUTH_FILE (Tools/test does)"))
    func pull() throws {
        try Self.withExplorer { explorer in
            let server = try #require(Self.kinto), authFile = try #require(Self.kintoAuthFile)
            let remote = (server.hasSuffix("/") ? String(server.dropLast()) : server) + "/buckets/t" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
            let ids = (0..<30).map { String(format: "pulled-%04d", $0) }
            let lines = ids.map { #"{"id":"\#($0)","name":"Pulled \#($0)","date":"2026-04-01"}"# }.joined(separator: "\n")
            let source = explorer.sandbox.root.appendingPathComponent("source").path
            try explorer.sandbox.succeed(["--store", source, "import", "Holiday", try explorer.sandbox.write("pulled.jsonl", lines + "\n")])
            try explorer.sandbox.succeed(["--store", source, "sync", "--remote", remote, "--auth-file", authFile])
            defer { Self.deleteBucket(remote, authFile: authFile) }
            try explorer.prepare(["add", "Holiday", "name=Local", "date=2026-01-01"])
            let sync = try explorer.run(["sync", "--remote", remote, "--auth-file", authFile, "--json"])
            #expect(sync.stdout.contains(#""pulled":30"#), "\(sync)")
            try explorer.explore("pull") { state in
                let (records, problems) = try Self.holidays(state)
                var found = problems + (records[state.prepared.trimmingCharacters(in: .whitespacesAndNewlines)] == nil ? ["the record added before the sync is missing"] : [])
                if !state.acknowledged.isEmpty {
                    let missing = ids.filter { records[$0] == nil }
                    if !missing.isEmpty { found.append("the sync reported, and \(missing.count) of the \(ids.count) records it pulled are missing") }
                }
                return found
            }
        }
    }

    /// Deletes a test bucket, as the sync suites do theirs (a Kinto's memory backend slows with every record it
    /// holds); the credentials reach curl as a config on its standard input, never in its arguments.
    static func deleteBucket(_ url: String, authFile: String) {
        guard let credentials = try? String(contentsOfFile: authFile, encoding: .utf8).trimmingCharacters(in: .newlines),
              let curl = ProcessRunner.which("curl") else { return }
        let quoted = credentials.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: curl)
        process.arguments = ["-s", "-o", "/dev/null", "-X", "DELETE", "-K", "-", url]
        let input = Pipe()
        process.standardInput = input
        guard (try? process.run()) != nil else { return }
        input.fileHandleForWriting.write(Data("user = \"\(quoted)\"\n".utf8))
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}
