@testable import EventStore
import TestSupport
import Foundation
import Testing

/// The issue's crash state, made with a real sync: 2,000 local events committed
/// and flushed, a sync that commits many batches after them, then the meta
/// pages from before the sync written back, as a disk that wrote the sync's
/// data pages but not its meta pages would leave the store.
@Suite(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .deletesTestBuckets)
struct PowerCutSyncTests {
    static let readCommands: [[String]] = [
        ["status", "--json"], ["list", "Holiday", "--json"], ["show", "Holiday", "p1999", "--json"], ["history", "p1999", "--json"],
        ["log", "tail", "-n", "100000", "--json"], ["rebuild-views", "--verify"],
    ]

    @Test("a sync's data pages written but not its meta pages: each read shows all 2,000 earlier events or exits 74 with one line")
    func syncWithoutItsMetaPages() async throws {
        let fx = try SyncFixture()
        let lines = (0..<2000).map { #"{"id":"p\#($0)","name":"Holiday \#($0)","date":"2026-01-01"}"# }
        try await fx.cli.ok(["import", "Holiday", "-"], stdin: lines.joined(separator: "\n"))
        let earlier = try await fx.cli.ok(["log", "tail", "-n", "100000", "--json"]).split(separator: "\n")
        #expect(earlier.count == 2000)
        let dataFile = URL(fileURLWithPath: fx.cli.store + "/data.mdb")
        let bytes = try Data(contentsOf: dataFile)
        let pageSize = Int(bytes[40]) | Int(bytes[41]) << 8
        let metaPages = bytes.prefix(2 * pageSize)

        // The push acknowledges the 2,000 creations in batches of the server's 25: 80 commits.
        let sync = try await fx.sync()
        #expect(sync.status == 0, "\(sync)")
        #expect(try await fx.cli.status().events == 4000)

        let handle = try FileHandle(forWritingTo: dataFile)
        try handle.write(contentsOf: metaPages)
        try handle.close()
        for words in Self.readCommands {
            let output = try await fx.cli.run(words)
            let command = words.joined(separator: " ")
            #expect(!output.killedBySignal, "\(command): \(output)")
            if output.status == 0 {
                if words[0] == "log" {
                    #expect(output.stdout.split(separator: "\n").starts(with: earlier), "\(command) lost or changed earlier events")
                }
                if words[0] == "status" {
                    #expect((try JSONParser.parse(output.stdout).objectValue?["events"]?.int64Value ?? 0) >= 2000, "\(command): \(output)")
                }
            } else {
                #expect(output.status == 74, "\(command): \(output)")
                #expect(output.stderrLines.count == 1 && output.stderr.hasPrefix("evsync: the store at \(fx.cli.store) is damaged ("),
                        "\(command): \(output)")
            }
        }
    }
}
