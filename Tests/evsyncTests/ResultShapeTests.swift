import Foundation
import Testing
@testable import EventStore
import EventSync
@testable import evsync

/// The library's `Codable` results name their members as the CLI's `--json` does, where both give the same thing.
@Suite("Codable results and the CLI's --json")
struct ResultShapeTests {
    @Test("a sync report encodes with the members sync --json prints, equal where the CLI prints the same value")
    func syncReport() throws {
        var report = SyncReport()
        (report.pulled, report.deletedHere, report.pushed, report.deletedThere, report.conflicts) = (5, 1, 2, 1, 1)
        report.conflicted = [RecordReference(entity: "Holiday", id: "h1")]
        report.rejected = [Rejection(entity: "Holiday", id: "h2", status: 400, message: "HTTP 400: Invalid parameters")]
        report.skipped = [Skip(entity: "Holiday", id: nil, reason: "it has no id")]
        (report.reread, report.verified) = (["Holiday"], ["Birthday"])
        report.goneFromServer = [Skip(entity: "Birthday", id: "b1", reason: "gone")]
        (report.error, report.interrupted) = ("connection refused", true)
        let printed = try #require(try JSONParser.parse(SyncCommand.json(report)).objectValue)
        let encoded = try #require(try JSONValueEncoder.encode(report).objectValue)
        #expect(Set(printed.keys) == Set(encoded.keys))
        // The CLI words rejections and leaves out what a person does not need of a skipped record.
        for key in printed.keys where !["rejected", "skipped", "goneFromServer"].contains(key) {
            #expect(printed[key] == encoded[key], "\(key)")
        }
    }
}
