@testable import EventStore
import TestSupport
import Foundation
import Testing

/// `log compact` on a store that synced with a real Kinto: the answers people ask of the log are the same
/// after it, byte for byte, with the archive and (where they need only the present) without it; the
/// segment's seal catches a flipped byte, a cut and another store's segment; kill -9 at any instant leaves
/// the store as before or as after; writers in other processes keep going; the next sync merges as before.
@Suite(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .deletesTestBuckets)
struct CompactionKintoTests {
    /// Ten holidays edited over three synced rounds, one edited on the web and pulled, one conflict, one
    /// pending edit: records of every kind a compaction moves or keeps.
    static func seed(_ fx: SyncFixture) async throws -> [String] {
        try await fx.web.createBucket()
        let ids = (0..<10).map { "h\($0)" }
        for (index, id) in ids.enumerated() { try await fx.cli.add(id: id, ["name=Holiday \(index)", "date=2026-05-\(10 + index)"]) }
        _ = try await fx.syncReport()
        for round in 1...3 {
            for id in ids { try await fx.cli.edit(id, ["details=round \(round)"]) }
            _ = try await fx.syncReport()
        }
        try await fx.web.patch("h4", ["name": "From the web"])
        _ = try await fx.syncReport()
        try await fx.cli.edit("h5", ["name=Here"])
        try await fx.web.patch("h5", ["name": "There"])
        #expect(try await fx.syncReport().conflicts == 1)
        try await fx.cli.edit("h6", ["details=not yet pushed"])
        return ids
    }

    /// What each command printed, keyed by its words.
    static func answers(_ cli: Evsync, _ commands: [[String]]) async throws -> [String: String] {
        var answers: [String: String] = [:]
        for words in commands { answers[words.joined(separator: " ")] = try await cli.ok(words) }
        return answers
    }

    /// What needs only the present, and what reads the past.
    static func commands(middle: Int, last: Int) -> (present: [[String]], past: [[String]]) {
        var present: [[String]] = [["list", "Holiday"], ["list", "Holiday", "--json"], ["conflicts"], ["conflicts", "--json"]]
        for id in ["h1", "h4", "h5", "h6"] {
            present += [["show", "Holiday", id], ["show", "Holiday", id, "--json"], ["blame", "Holiday", id], ["blame", "Holiday", id, "--json"],
                        ["why", "Holiday", id], ["why", "Holiday", id, "--json"]]
        }
        var past: [[String]] = [["diff", "--from", "5", "--to", "\(middle)"], ["diff", "--from", "5", "--to", "\(middle)", "--json"],
                                ["list", "Holiday", "--as-of", "\(middle)", "--json"], ["diff", "--from", "\(middle)", "--to", "\(last)"]]
        for id in ["h1", "h4", "h5", "h6"] {
            past += [["history", id], ["history", id, "--json"], ["show", "Holiday", id, "--as-of", "\(middle)", "--json"],
                     ["revert", "Holiday", id, "--to", "\(middle)", "--dry-run", "--json"]]
        }
        return (present, past)
    }

    @Test func everyAnswerIsTheSameAfterACompactionWithTheArchiveAndWhatNeedsOnlyThePresentWithoutIt() async throws {
        let fx = try SyncFixture()
        _ = try await Self.seed(fx)
        let last = try await fx.cli.status().events
        let (present, past) = Self.commands(middle: last / 2, last: last)
        let before = try await Self.answers(fx.cli, present + past)

        let report = try #require(try await fx.cli.json(["log", "compact", "--before", "\(last + 1)", "--json"]).objectValue)
        // h5 (its conflict) and h6 (pending) stay whole; the other eight move.
        #expect(report["records"] == 8 && report["keptRecords"] == 2, "\(report)")
        let segment = try #require(report["segment"]?.stringValue)
        let path = fx.directory.file("store/archive/\(segment)")
        #expect(FileManager.default.fileExists(atPath: path))
        // The data file was rewritten compactly: no other process had the store open.
        let dataFile = try #require(report["dataFile"]?.objectValue, "\(report)")
        let shrunkTo = try #require(dataFile["bytesAfter"]?.int64Value)
        #expect(dataFile["heldOpenBy"] == nil && shrunkTo < (dataFile["bytesBefore"]?.int64Value ?? 0), "\(dataFile)")
        let onDisk = try FileManager.default.attributesOfItem(atPath: fx.directory.file("store/data.mdb"))[.size] as? Int
        #expect(onDisk.map(Int64.init) == shrunkTo)
        let status = try #require(try await fx.cli.json(["status", "--json"]).objectValue)
        #expect(status["archivedEvents"] == report["archivedEvents"] && status["archiveSegments"] == 1, "\(status)")

        let after = try await Self.answers(fx.cli, present + past)
        for (command, answer) in before { #expect(after[command] == answer, "\(command)") }
        #expect(try await fx.cli.ok(["log", "verify"]).contains("archived events in 1 segment match their seals"))
        #expect(try await fx.cli.run(["rebuild-views", "--verify"]).status == 0)

        // Without the archive: the present is answered as before; the past names the file it needs.
        let aside = fx.directory.file("aside.evarchive")
        try FileManager.default.moveItem(atPath: path, toPath: aside)
        let without = try await Self.answers(fx.cli, present)
        for (command, answer) in without { #expect(before[command] == answer, "\(command)") }
        for words in [["diff", "--from", "5", "--json"], ["show", "Holiday", "h1", "--as-of", "5"], ["list", "Holiday", "--as-of", "5"],
                      ["revert", "Holiday", "h1", "--to", "5", "--dry-run"]] {
            let result = try await fx.cli.run(words)
            #expect(result.status == 66 && result.stderr.contains(path) && result.stdout.isEmpty, "\(words): \(result)")
        }
        let history = try await fx.cli.run(["history", "h1"])
        #expect(history.status == 0 && history.stderr.contains(path) && history.stdout.contains("baseline"), "\(history)")
        let verify = try await fx.cli.run(["log", "verify"])
        #expect(verify.status == 74 && verify.stderr.contains("\(path) is missing"), "\(verify)")
        #expect(try await fx.cli.ok(["log", "verify", "--archive", aside]).hasPrefix("archive segment is sound"))
        try FileManager.default.moveItem(atPath: aside, toPath: path)

        // The next sync pulls, pushes and merges as before: the web changes one field of a compacted record,
        // this store another.
        try await fx.web.patch("h1", ["name": "Renamed on the web"])
        try await fx.cli.edit("h1", ["details=edited here"])
        let sync = try await fx.syncReport()
        #expect(sync.conflicts == 0 && sync.pushed == 2, "h1 merged, h6 pushed: \(sync)")
        #expect(try await fx.web.get("h1")?.fields["name"] == "Renamed on the web")
        #expect(try await fx.web.get("h1")?.fields["details"] == "edited here")
        #expect(try await fx.cli.show("Holiday", "h1")?["name"] == "Renamed on the web")
        #expect(try await fx.cli.run(["rebuild-views", "--verify"]).status == 0)
        #expect(try await fx.cli.run(["log", "verify"]).status == 0)
        // A second compaction moves the records the first kept, once they are settled, and the baselines again.
        let conflict = try #require(try await fx.cli.json(["conflicts", "--json"]).arrayValue?.first?.objectValue?["seq"]?.int64Value)
        _ = try await fx.cli.ok(["resolve", "\(conflict)", "--take", "server"])
        _ = try await fx.syncReport()
        let end = try await fx.cli.status().events
        // With another process holding the store open, the file is left as it is, and the holder named.
        let follower = try fx.cli.start(["log", "tail", "--follow"])
        try await Task.sleep(for: .milliseconds(300))
        let held = try await fx.cli.json(["log", "compact", "--before", "\(end + 1)", "--wait", "0", "--json"]).objectValue?["dataFile"]?.objectValue
        #expect(held?["heldOpenBy"]?.int64Value == Int64(follower.pid) && held?["bytesAfter"] == held?["bytesBefore"], "\(String(describing: held))")
        follower.signal(SIGKILL)
        _ = await follower.wait()
        let later = try await fx.cli.json(["log", "compact", "--before", "1", "--json"]).objectValue?["dataFile"]?.objectValue
        #expect(later?["heldOpenBy"] == nil && (later?["bytesAfter"]?.int64Value ?? .max) < (later?["bytesBefore"]?.int64Value ?? 0),
                "\(String(describing: later))")
        #expect(try await fx.cli.ok(["log", "verify"]).contains("in 2 segments match their seals"))
        let earlier = try #require(before["history h1 --json"])
        let created = try #require(try JSONParser.parse(earlier).arrayValue?.first?.objectValue)
        let first = try await fx.cli.history("h1")
        #expect(first.first == created, "history reads through both segments: \(first)")
        #expect(try await fx.cli.run(["rebuild-views", "--verify"]).status == 0)
    }

    @Test func logVerifyNamesASegmentFlippedCutShortOrFromAnotherStore() async throws {
        let fx = try SyncFixture()
        _ = try await Self.seed(fx)
        let last = try await fx.cli.status().events
        let segment = try #require(try await fx.cli.json(["log", "compact", "--before", "\(last + 1)", "--json"]).objectValue?["segment"]?.stringValue)
        let path = fx.directory.file("store/archive/\(segment)")
        let pristine = try Data(contentsOf: URL(fileURLWithPath: path))

        func verify() async throws -> ProcessOutput {
            let result = try await fx.cli.run(["log", "verify"])
            #expect(result.status == 74 && result.stderr.split(separator: "\n").count == 1 && result.stderr.contains(path), "\(result)")
            return result
        }
        // One flipped byte anywhere: header, a block, the index, the footer.
        for position in stride(from: 0, to: pristine.count, by: max(1, pristine.count / 40)) {
            var changed = pristine
            changed[position] ^= 0x20
            try changed.write(to: URL(fileURLWithPath: path))
            _ = try await verify()
        }
        for length in [0, 5, pristine.count / 2, pristine.count - 1] {
            try pristine.prefix(length).write(to: URL(fileURLWithPath: path))
            let result = try await verify()
            #expect(result.stderr.contains("cut short") || result.stderr.contains("not an evsync archive segment")
                    || result.stderr.contains("altered"), "\(length): \(result)")
        }
        // A whole segment of another store, under this one's name.
        let other = fx.secondStore()
        _ = try await fx.sync(store: other)
        let otherLast = try await other.status().events
        let otherSegment = try #require(try await other.json(["log", "compact", "--before", "\(otherLast + 1)", "--json"]).objectValue?["segment"]?.stringValue)
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.copyItem(atPath: URL(fileURLWithPath: other.store).appendingPathComponent("archive/\(otherSegment)").path, toPath: path)
        #expect(try await verify().stderr.contains("belongs to another store"))
        try pristine.write(to: URL(fileURLWithPath: path))
        #expect(try await fx.cli.run(["log", "verify"]).status == 0)
    }

    @Test func killedAtAnyInstantOfACompactionTheStoreIsAsBeforeOrAsAfterAndOtherWritersGoOn() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let lines = (0..<1500).map { #"{"id": "k\#($0)", "name": "Holiday \#($0)", "date": "2026-06-01"}"# }.joined(separator: "\n")
        _ = try await fx.cli.ok(["import", "Holiday", "-"], stdin: lines)
        _ = try await fx.syncReport()
        _ = try await fx.cli.ok(["import", "Holiday", "-"], stdin: lines.replacingOccurrences(of: "\"k", with: "\"l"))
        for round in 1...2 { try await fx.cli.edit("k7", ["details=round \(round)"]) }
        _ = try await fx.syncReport()
        let listed = try await fx.cli.ok(["list", "Holiday", "--json"])
        let history = try await fx.cli.ok(["history", "k7", "--json"])
        var added: [String] = []
        var seen = Set<String>()
        for round in 0..<8 {
            let last = try await fx.cli.status().events
            let compaction = try fx.cli.start(["log", "compact", "--before", "\(last + 1)"])
            // Another process writes meanwhile.
            let id = "w\(round)"
            let writer = try await fx.cli.run(["add", "Holiday", "--id", id, "name=Written meanwhile", "date=2026-07-01"])
            #expect(writer.status == 0, "\(writer)")
            added.append(id)
            try await Task.sleep(for: .milliseconds(20 + 60 * round))
            compaction.signal(SIGKILL)
            let outcome = await compaction.wait()
            seen.insert(outcome.killedBySignal ? "killed" : "finished")
            // As before or as after: the same answers, a sound log, views that match it.
            #expect(try await fx.cli.run(["log", "verify"]).status == 0, "sound even when it stopped half-way through moving")
            _ = try await fx.cli.ok(["log", "compact", "--before", "1"])  // finishes an interrupted one
            #expect(try await fx.cli.run(["log", "verify"]).status == 0)
            #expect(try await fx.cli.run(["rebuild-views", "--verify"]).status == 0)
            #expect(try await fx.cli.ok(["history", "k7", "--json"]) == history)
            let now = try await fx.cli.records()
            #expect(now.count == 3000 + added.count)
            for id in added { #expect(now[id]?["name"] == "Written meanwhile") }
        }
        let records = try await fx.cli.records()
        let before = try JSONParser.parse(listed).arrayValue ?? []
        for record in before {
            let id = try #require(record.objectValue?["id"]?.stringValue)
            #expect(records[id] != nil)
        }
        #expect(seen.contains("killed"), "at least one compaction was cut off: \(seen)")
        // The writers' events stay live, and sync: nothing was archived that had not been pushed.
        #expect(try await fx.syncReport().pushed == added.count)
    }
}
