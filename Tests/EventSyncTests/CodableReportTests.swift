@testable import EventStore
@testable import EventSync
import Foundation
import Testing
import TestSupport

/// What a sync gives an app to keep: reports, rejections, statuses, and the conflicts a sync logged,
/// back equal through Foundation's JSON coders.
@Suite("Codable sync results")
struct CodableReportTests {
    /// A report with every member set, as a sync against a restored, strict server could end.
    static var fullReport: SyncReport {
        var report = SyncReport()
        (report.pulled, report.deletedHere, report.pushed, report.deletedThere, report.conflicts) = (12, 1, 3, 2, 2)
        report.conflicted = [RecordReference(entity: "Holiday", id: "h1"), RecordReference(entity: "Birthday", id: "b7")]
        report.rejected = [Rejection(entity: "Holiday", id: "h9", status: 400, message: "HTTP 400: Invalid parameters: name is too long"),
                           Rejection(entity: "Birthday", id: "b2", status: nil, message: "the server refused it")]
        report.skipped = [Skip(entity: "Holiday", id: nil, reason: "it has no id: {\"title\": 1}"),
                          Skip(entity: "Holiday", id: "h4", version: RemoteVersion(1796076723092), reason: "it has no last_modified")]
        report.reread = ["Holiday"]
        report.verified = ["Birthday"]
        report.goneFromServer = [Skip(entity: "Birthday", id: "b3", version: RemoteVersion("v12"), reason: "gone from the server")]
        report.error = "the server cannot be reached: connection refused"
        report.interrupted = true
        return report
    }

    @Test("reports, rejections and statuses come back equal")
    func reportsAndStatuses() throws {
        try expectRoundTrip(Self.fullReport)
        try expectRoundTrip(SyncReport())
        try expectRoundTrip(Self.fullReport.rejected)
        let progress = SyncProgress(phase: .pulling, entity: "Holiday", records: 250, pages: 3, total: nil)
        let statuses: [SyncStatus] = [.inProgress(nil), .inProgress(progress),
                                      .inProgress(SyncProgress(phase: .pushing, entity: "Birthday", records: 1, pages: 1, total: 4)),
                                      .finished(Self.fullReport), .finished(SyncReport())]
        try expectRoundTrip(statuses)
        let encoded = try JSONParser.parse(Array(JSONEncoder().encode(SyncStatus.inProgress(progress))))
        #expect(encoded == ["inProgress": ["progress": ["phase": "pulling", "entity": "Holiday", "records": 250, "pages": 3]]])
    }

    @Test("a report says its result, which is not read back, and a member it lacks (an older evsync's) is its initial value")
    func reportMembers() throws {
        let encoded = try #require(try JSONParser.parse(Array(JSONEncoder().encode(Self.fullReport))).objectValue)
        #expect(encoded["result"] == "failed")
        #expect(encoded["rejected"]?.arrayValue?.first == ["entity": "Holiday", "id": "h9", "status": 400,
                                                           "message": "HTTP 400: Invalid parameters: name is too long"])
        var older = SyncReport()
        older.pulled = 4
        #expect(try JSONDecoder().decode(SyncReport.self, from: Data(#"{"pulled": 4, "result": "noData"}"#.utf8)) == older)
        #expect(try JSONDecoder().decode(SyncReport.self, from: Data("{}".utf8)) == SyncReport())
    }

    @Test("a sync's report and the conflict, blame and why it leaves come back equal")
    func aSyncsResults() async throws {
        let directory = try TemporaryDirectory()
        let store = try Store(directory: directory.file("store"), create: true)
        let remote = InMemoryRemote(pageSize: 2)
        remote.put("r1", holiday("From the server"), in: "Holiday")
        try store.add("Holiday", id: "h1", fields: holiday("Christmas", date: "2026-12-25"))
        let engine = SyncEngine(store: store) { remote }
        try expectRoundTrip(try await engine.sync())
        // Both sides change h1's name: a conflict the server wins.
        remote.put("h1", holiday("Noël", date: "2026-12-25"), in: "Holiday")
        try store.edit("Holiday", id: "h1", set: ["name": "Christmas Day", "details": "Presents"])
        let report = try await engine.sync()
        #expect(report.conflicts == 1 && report.conflicted == [RecordReference(entity: "Holiday", id: "h1")])
        try expectRoundTrip(report)
        let conflicts = try store.conflicts()
        #expect(conflicts.count == 1 && conflicts[0].fields.map(\.field) == ["name"])
        try expectRoundTrip(conflicts)
        try expectRoundTrip(try store.resolve(conflict: conflicts[0].event.seq, take: .local))
        try expectRoundTrip(try store.conflicts())
        try expectRoundTrip(try #require(try store.blame("Holiday", id: "h1")))
        try expectRoundTrip(try #require(try store.whyPending("Holiday", id: "h1")))
        try expectRoundTrip(try store.history(of: "h1"))
        try expectRoundTrip(try store.history(of: "r1"))
    }
}
