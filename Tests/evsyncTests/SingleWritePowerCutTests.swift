import Foundation
import Testing
@testable import EventStore
import TestSupport

/// A power cut while an app writes one record a transaction, made real as in `CompactionPowerCutTests`: the
/// store on an ext4 disk whose device is copied, without a flush, while two `GuardProbe writer`s add and edit.
/// This samples what the kernel had written back at one moment: a second witness beside `CrashStateTests`, which
/// builds every state a disk may leave from the writes and flushes themselves.
@Suite("single writes through power cuts")
struct SingleWritePowerCutTests {
    static let probe = BuiltProduct.url("GuardProbe")

    /// What the writers said they did: the records added, edited and deleted, and those a deletion began on.
    struct Said {
        var added: [String] = [], edited: [String] = [], deleted: Set<String> = [], deleting: Set<String> = []

        init(_ writers: [RunningProcess]) {
            for line in writers.flatMap({ $0.currentOutput.split(separator: "\n") }) {
                let words = line.split(separator: " ")
                guard words.count == 2 else { continue }
                switch words[0] {
                case "add": added.append(String(words[1]))
                case "edit": edited.append(String(words[1]))
                case "delete": deleted.insert(String(words[1]))
                case "deleting": deleting.insert(String(words[1]))
                default: break
                }
            }
        }
    }

    /// Two writers, so that commits of one process follow the other's.
    ///
    /// With `.normal`, a write is not flushed before it returns: a cut may take back the last ones, but only
    /// whole and in order, so what each writer added that is left is a first part of what it added.
    ///
    /// `writer-write-back`, one writer alone, writes the data file back after each write (an `fdatasync`, which to
    /// a copy of the device is the kernel's writing back at any moment): every page LMDB reused is on the disk at
    /// the cut.
    @Test("power cuts during single writes of one or two processes: every write acknowledged before a cut is on the disk after it (.full), the store sound",
          .enabled(if: Mounts.loopPermitted, "needs root to mount an ext4 image through a loop device"),
          arguments: ["writer", "writer-normal", "writer-write-back"])
    func powerCutsDuringSingleWrites(scenario: String) throws {
        let durability = scenario == "writer-normal" ? Store.Durability.normal : .full
        try withSandbox { sandbox in
            let disk = try Mounts.LoopDisk(in: sandbox.root, size: "64M")
            defer { disk.detach() }
            let store = disk.mountPoint.appendingPathComponent("store").path
            // The first makes the store; the second opens it.
            var writers = [try RunningProcess(executable: Self.probe.path, arguments: [scenario, store], environment: ProcessInfo.processInfo.environment,
                                              input: .none, directory: sandbox.root.path)]
            while Said(writers).added.isEmpty, writers[0].isRunning { usleep(2_000) }
            // One writer alone makes the longest runs of entries, and the most pages reused after a checkpoint.
            if scenario != "writer-write-back" {
                writers.append(try RunningProcess(executable: Self.probe.path, arguments: [scenario, store], environment: ProcessInfo.processInfo.environment,
                                                  input: .none, directory: sandbox.root.path))
            }
            var cuts: [(disk: Mounts.LoopDisk, said: Said, perWriter: [Said])] = []
            defer { for cut in cuts { cut.disk.detach() } }
            // Cut after cut, each once the writer has acknowledged more writes: what it said before the copy began
            // must be in the copy.
            for round in 0..<6 {
                let wanted = Said(writers).added.count + (round < 3 ? 40 : 300)
                let deadline = Date().addingTimeInterval(120)
                while Said(writers).added.count < wanted, writers.allSatisfy(\.isRunning), Date() < deadline { usleep(2_000) }
                for writer in writers { try #require(writer.isRunning, "a writer stopped: \(writer.currentOutput.suffix(400))") }
                var said = Said([]), perWriter: [Said] = []
                let cut = try disk.powerCut(pausing: writers.map(\.pid)) {
                    said = Said(writers)
                    perWriter = writers.map { Said([$0]) }
                }
                cuts.append((cut, said, perWriter))
            }
            for writer in writers {
                kill(writer.pid, SIGKILL)
                _ = writer.wait()
            }
            for (index, cut) in cuts.enumerated() {
                let after = cut.disk.mountPoint.appendingPathComponent("store").path
                if index == 0 {
                    // LMDB's flushes leave a store that reads as it is, on a file system mounted read-only too.
                    try cut.disk.remount(readOnly: true)
                    let readOnly = try sandbox.succeed(["--store", after, "list", "Holiday", "--json"])
                    try cut.disk.remount(readOnly: false)
                    #expect(readOnly.stdout == (try sandbox.succeed(["--store", after, "list", "Holiday", "--json"])).stdout)
                }
                try sandbox.succeed(["--store", after, "log", "verify"])
                try sandbox.succeed(["--store", after, "rebuild-views", "--verify"])
                let records = try sandbox.succeed(["--store", after, "list", "Holiday", "--json"]).json().arrayValue ?? []
                var details: [String: String] = [:]
                for record in records {
                    if let id = record.objectValue?["id"]?.stringValue { details[id] = record.objectValue?["details"]?.stringValue ?? "" }
                }
                guard durability == .full else {
                    for said in cut.perWriter {
                        // A record the writer began to delete may be gone either way: it tells nothing.
                        let kept = said.added.filter { !said.deleting.contains($0) }.map { details[$0] != nil }
                        #expect(!kept.drop { $0 }.contains(true), "cut \(index): a write lost while a later one of the same writer was kept")
                    }
                    try sandbox.succeed(["--store", after, "add", "Holiday", "name=After", "date=2026-02-01"])
                    continue
                }
                let (added, edited, deleted) = (cut.said.added, cut.said.edited, cut.said.deleted)
                // A deletion under way when the writer was paused may be on the disk or not.
                let missing = added.filter { details[$0] == nil && !cut.said.deleting.contains($0) }
                #expect(missing.count == 0, "cut \(index): \(missing.count) of \(added.count) acknowledged adds missing")
                let unedited = edited.filter { details[$0] != "edited" && !cut.said.deleting.contains($0) }
                #expect(unedited.count == 0, "cut \(index): \(unedited.count) of \(edited.count) acknowledged edits missing")
                let undeleted = deleted.filter { details[$0] != nil }
                #expect(undeleted.count == 0 && !deleted.isEmpty, "cut \(index): \(undeleted.count) of \(deleted.count) acknowledged deletions undone")
                // And the store takes writes after it.
                try sandbox.succeed(["--store", after, "add", "Holiday", "name=After", "date=2026-02-01"])
            }
        }
    }
}
