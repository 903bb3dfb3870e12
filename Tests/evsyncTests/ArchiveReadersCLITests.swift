import Foundation
import Testing
@testable import EventStore
import TestSupport

/// Every reader of the past checks an archive segment before it uses it: this store's, as its compaction sealed
/// it. Another store's segment under this one's name, or an older segment of this very store kept across a
/// restore from a backup, makes each of them exit 74 naming the file, never answer from it.
@Suite("CLI: every reader of the archive checks the segment")
struct ArchiveReadersCLITests {
    static let records = 30

    /// Each reading that needs the archive: the state at an event the compaction moved, and whole histories.
    static let readings: [[String]] = [
        ["list", "Holiday", "--as-of", "\(records + 5)", "--json"],
        ["show", "Holiday", "p13", "--as-of", "\(records + 5)", "--json"],
        ["history", "p13", "--json"],
        ["blame", "Holiday", "p13", "--json"],
        ["log", "verify"],
    ]

    static let foreign = "belongs to another store", notSealed = "is whole but is not the one this store sealed"

    /// Runs every reading of `store`, each expected to refuse the segment at `path` for one of `why`.
    static func expectRefused(_ sandbox: Sandbox, store: String, path: String, why: [String]) throws {
        for reading in readings {
            let result = try sandbox.run(["--store", store] + reading)
            #expect(result.status == 74, "\(reading): \(result)")
            #expect(result.stderr.split(separator: "\n").count == 1 && result.stderr.contains(path) && why.contains(where: result.stderr.contains),
                    "\(reading): \(result)")
            #expect(result.stdout.isEmpty || reading.first == "log", "\(reading) answered from the segment: \(result)")
        }
    }

    static func segments(_ store: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: store + "/archive").filter { $0.hasSuffix(".evarchive") }.sorted()
    }

    @Test("another store's segment, or another segment of this store, under a segment's name: list --as-of, show --as-of, history, blame and log verify refuse it")
    func anotherSegment() throws {
        try withSandbox { sandbox in
            let (mine, theirs) = (sandbox.root.appendingPathComponent("mine").path, sandbox.root.appendingPathComponent("theirs").path)
            for store in [mine, theirs] {
                try CompactionPowerCutTests.seed(store, records: Self.records)
                // Two compactions: the events of p0…p9 (all before the cut), then those of the others.
                for before in [2 * Self.records + 11, 3 * Self.records + 1] {
                    try sandbox.succeed(["--store", store, "log", "compact", "--before", "\(before)"])
                }
            }
            let answers = try Self.readings.map { try sandbox.succeed(["--store", mine] + $0).stdout }
            let segments = try Self.segments(mine)
            let theirSegments = try Self.segments(theirs)
            #expect(segments.count == 2 && theirSegments == segments, "the same events, the same names: \(segments)")
            try #require(segments.count == 2)
            let path = mine + "/archive/" + segments[1]
            let pristine = try Data(contentsOf: URL(fileURLWithPath: path))
            for (source, why) in [(theirs + "/archive/" + segments[1], Self.foreign), (mine + "/archive/" + segments[0], Self.notSealed)] {
                try FileManager.default.removeItem(atPath: path)
                try FileManager.default.copyItem(atPath: source, toPath: path)
                try Self.expectRefused(sandbox, store: mine, path: path, why: [why])
            }
            try pristine.write(to: URL(fileURLWithPath: path))
            #expect(try Self.readings.map { try sandbox.succeed(["--store", mine] + $0).stdout } == answers)
        }
    }

    @Test("an older segment of this store, kept across a restore from a backup, in place of the one the restored log sealed: every reader refuses it")
    func olderSegmentOfThisStore() throws {
        try withSandbox { sandbox in
            let store = sandbox.root.appendingPathComponent("store").path
            let backup = sandbox.root.appendingPathComponent("backup").path
            try CompactionPowerCutTests.seed(store, records: Self.records)
            // A first compaction (the events of p0…p9) gives the store its id.
            try sandbox.succeed(["--store", store, "log", "compact", "--before", "\(2 * Self.records + 11)"])
            try sandbox.succeed(["--store", store, "backup", backup])
            try sandbox.succeed(["--store", store, "log", "compact", "--before", "\(3 * Self.records + 1)"])
            let kept = try #require(try Self.segments(store).last)
            let old = try Data(contentsOf: URL(fileURLWithPath: store + "/archive/" + kept))
            // Restored; the next compaction there moves fewer events (those of p10…p19), and seals a segment of its own.
            try FileManager.default.removeItem(atPath: store)
            try FileManager.default.copyItem(atPath: backup, toPath: store)
            try sandbox.succeed(["--store", store, "log", "compact", "--before", "\(2 * Self.records + 21)"])
            let sealed = try #require(try Self.segments(store).last)
            #expect(sealed != kept)
            let path = store + "/archive/" + sealed
            let pristine = try Data(contentsOf: URL(fileURLWithPath: path))
            try old.write(to: URL(fileURLWithPath: path))
            // The restored store may have an id of its own by then: refused as another store's, or as not its seal.
            try Self.expectRefused(sandbox, store: store, path: path, why: [Self.foreign, Self.notSealed])
            try pristine.write(to: URL(fileURLWithPath: path))
            for reading in Self.readings { try sandbox.succeed(["--store", store] + reading) }
        }
    }
}
