import Foundation
import Testing
@testable import EventStore
import TestSupport

/// A power cut at any instant of `log compact`, made real: the store on an ext4 disk whose device is copied,
/// without a flush, while the compaction runs (`Mounts.LoopDisk.powerCut`). Each copy is the store as
/// before the compaction or as after it (or sealed and partly moved, which the next `log compact` finishes):
/// the log sound, its views matching it, every record and its history as they were.
@Suite("log compact through power cuts")
struct CompactionPowerCutTests {
    /// Enough that the compaction (3 events a record, moved 500 records a commit) outlasts a few copies of the disk.
    static let records = 6000

    /// Records in step with a server, each pulled then changed on it twice, as a pull would fold them:
    /// what a compaction moves. Written through the library: no server is needed to make them.
    static func seed(_ directory: String, records: Int) throws {
        let store = try Store(directory: directory, configuration: Store.Configuration(create: true))
        var batch = try store.makePullBatch()
        batch.append(RemotePage(records: (0..<records).map {
            RemoteRecord(id: "p\($0)", version: RemoteVersion(Int64($0 + 1)), fields: ["name": .string("Pulled \($0)"), "date": "2026-01-01"])
        }, cursor: RemoteCursor("1")))
        _ = try store.ingest(batch, entity: "Holiday", from: "server") { _, _ in }
        for round in 1...2 {
            try store.ingest { writer in
                for index in 0..<records {
                    let id = "p\(index)"
                    try writer.append(Event(eventID: "edit-\(round)-\(index)", at: 0, entity: "Holiday", recordID: id, kind: .updated,
                                            origin: .remote, author: "server", set: ["details": .string("round \(round)")],
                                            version: RemoteVersion(Int64(round * records + index + 1))),
                                      current: try writer.projection(entity: "Holiday", id: id))
                }
            }
        }
    }

    @Test("power cuts during a compaction: each disk holds the store as before or as after, never between",
          .enabled(if: Mounts.loopPermitted, "needs root to mount an ext4 image through a loop device"))
    func powerCutsDuringACompaction() throws {
        try withSandbox { sandbox in
            let disk = try Mounts.LoopDisk(in: sandbox.root, size: "128M")
            defer { disk.detach() }
            let store = disk.mountPoint.appendingPathComponent("store").path
            try Self.seed(store, records: Self.records)
            let readings = [["list", "Holiday", "--json"], ["history", "p7", "--json"], ["blame", "Holiday", "p\(Self.records - 1)", "--json"]]
            let before = try readings.map { try sandbox.succeed(["--store", store] + $0).stdout }

            let compaction = try sandbox.launch(["--store", store, "log", "compact", "--before", "\(3 * Self.records + 1)"])
            // Cut after cut while it runs (each copy of the device takes a moment), then each disk looked at.
            var cuts: [Mounts.LoopDisk] = []
            defer { for cut in cuts { cut.detach() } }
            // The compaction is paused for each copy, which would otherwise hold some of its writes and miss earlier,
            // flushed ones (`powerCut`).
            while compaction.isRunning && cuts.count < 8 {
                cuts.append(try disk.powerCut(pausing: [compaction.pid]))
            }
            let duringCompaction = cuts.count
            let finished = compaction.wait()
            cuts.append(try disk.powerCut())
            var states: Set<String> = []
            for (index, cut) in cuts.enumerated() {
                let after = cut.mountPoint.appendingPathComponent("store").path
                // Which step the cut came at: the last event is the seal, a baseline (moving or done), or neither.
                let last = try sandbox.succeed(["--store", after, "log", "tail", "-n", "1", "--json"]).stdout
                let kind = (try? JSONParser.parse(last))?.objectValue?["kind"]?.stringValue ?? "none"
                let live = try sandbox.succeed(["--store", after, "status", "--json"]).json().objectValue?["liveEvents"]
                states.insert(kind == "compacted" ? "sealed" : kind == "baseline" ? (live == .number(JSONNumber(Self.records + 1)) ? "moved" : "moving") : "before")
                let verify = try sandbox.run(["--store", after, "log", "verify"])
                #expect(verify.status == 0, "cut \(index): \(verify)")
                // What a crash interrupted, the next compaction finishes.
                try sandbox.succeed(["--store", after, "log", "compact", "--before", "1", "--wait", "0"])
                try sandbox.succeed(["--store", after, "log", "verify"])
                try sandbox.succeed(["--store", after, "rebuild-views", "--verify"])
                for (words, answer) in zip(readings, before) {
                    #expect(try sandbox.succeed(["--store", after] + words).stdout == answer, "cut \(index): \(words)")
                }
            }
            #expect(finished.status == 0, "\(finished)")
            #expect(finished.stdout.contains("moved \(3 * Self.records) events of \(Self.records) records"), "\(finished)")
            for (words, answer) in zip(readings, before) { #expect(try sandbox.succeed(["--store", store] + words).stdout == answer) }
            #expect(duringCompaction > 0 && states.count >= 2, "\(duringCompaction) cuts during the compaction, at steps \(states)")
        }
    }
}
