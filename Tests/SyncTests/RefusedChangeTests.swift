@testable import EventStore
import TestSupport
import Foundation
import Testing

/// A change the server refuses is an answer, not a failure to retry: on a real Kinto, a user who may only read
/// a bucket edits and adds; each refusal (HTTP 403) is kept here and held, later syncs send nothing of it by
/// themselves and say so, an edit or `--resend-refused` sends it again.
@Suite(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .deletesTestBuckets)
struct RefusedChangeTests {
    @Test func aForbiddenChangeIsKeptHeldAndSentAgainOnlyWhenEditedOrAsked() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let bob = try await RemoteHistoryTests.bob(fx, permission: "read")
        let store = fx.secondStore()
        func sync(_ extra: [String] = []) async throws -> (output: ProcessOutput, report: SyncJSON) {
            let output = try await store.run(["sync", "--remote", fx.remote, "--auth-file", bob.authFile, "--json"] + extra)
            return (output, try SyncJSON(output.stdoutLines.last ?? "{}"))
        }
        let shared = newID(), mine = newID()
        try await fx.web.put(shared, holiday("Labour Day"))
        let first = try await sync()
        #expect(first.output.status == 0 && first.report.pulled == 1, "bob reads the bucket: \(first.output)")

        // Refused: kept here, not "credentials refused" (77), and each change named with the server's status.
        try await store.edit(shared, ["details=Parade"])
        try await store.add(id: mine, ["name=Bob's day", "date=2027-06-01"])
        let refused = try await sync()
        #expect(refused.output.status == 1, "\(refused.output)")
        #expect(refused.report.rejected.count == 2 && refused.report.rejected.allSatisfy { $0.contains("HTTP 403") }, "\(refused.report)")
        #expect(refused.output.stderr.contains("2 changes refused by the server: kept here, held, not sent again until edited or reverted"),
                "\(refused.output.stderr)")
        #expect(!refused.output.stderr.contains("credentials"), "\(refused.output.stderr)")
        #expect(try await store.show("Holiday", shared)?["details"] == "Parade", "the local edit is kept")

        // Held: the next sync sends neither (no batch request at all), says so, and does not say "in sync".
        let held = try await store.run(["sync", "--remote", fx.remote, "--auth-file", bob.authFile, "--verbose"])
        #expect(held.status == 1, "\(held)")
        #expect(!held.stderr.contains("/batch"), "nothing pushed: \(held.stderr)")
        #expect(held.stdout.contains("held, refused by the server before and not sent again: Holiday "), "\(held.stdout)")
        #expect(!held.stdout.contains("in sync"), "\(held.stdout)")
        #expect(held.stderr.contains("2 changes refused before: kept here, held"), "\(held.stderr)")
        let again = try await sync()
        #expect(again.report.rejected.isEmpty && Set(again.report.held) == ["Holiday \(shared)", "Holiday \(mine)"], "\(again.report)")
        let (sharedThere, mineThere) = (try await fx.web.get(shared), try await fx.web.get(mine))
        #expect(sharedThere?.fields["details"] == nil && mineThere == nil, "the server holds neither")
        let why = try await store.json(["why", "Holiday", shared, "--json"]).objectValue
        #expect(why?["held"] == true && why?["pending"] == true, "\(String(describing: why))")
        let whyText = try await store.ok(["why", "Holiday", shared])
        #expect(whyText.contains("held: syncs do not send it again until it is edited or reverted"), "\(whyText)")
        let status = try await store.ok(["status"])
        #expect(status.contains("2 records the server refused at the last push, held: not sent again until edited or reverted"), "\(status)")

        // An edit is a new change: it is sent (and refused again); the other stays held.
        try await store.edit(mine, ["details=Cake"])
        let edited = try await sync()
        #expect(edited.report.rejected.count == 1 && edited.report.rejected[0].hasPrefix("Holiday \(mine)"), "\(edited.report)")
        #expect(edited.report.held == ["Holiday \(shared)"], "\(edited.report)")
        try await store.edit(mine, ["details=Cake!"])
        #expect(try await store.json(["why", "Holiday", mine, "--json"]).objectValue?["held"] == false, "edited: no longer held")

        // Access granted: the edited change goes through; the held one waits for --resend-refused, which sends it.
        let granted = try await fx.web.request("PATCH", "/buckets/\(fx.web.bucket)",
                                               body: ["permissions": ["write": [.string("account:\(bob.name)")]]])
        #expect(granted.status == 200, "\(granted)")
        let stillHeld = try await sync()
        #expect(stillHeld.output.status == 1 && stillHeld.report.pushed == 1 && stillHeld.report.held == ["Holiday \(shared)"],
                "\(stillHeld.report)")
        let resent = try await sync(["--resend-refused"])
        #expect(resent.output.status == 0 && resent.report.pushed == 1 && resent.report.held.isEmpty, "\(resent.output)")
        #expect(try await fx.web.get(shared)?.fields["details"] == "Parade")
        #expect(try await fx.web.get(mine)?.fields["details"] == "Cake!")
        #expect(try await store.json(["why", "Holiday", shared, "--json"]).objectValue?["held"] == false)
        let settled = try await sync()
        #expect(settled.output.status == 0 && settled.report.result == "noData", "\(settled.output)")
        let watching = try await store.run(["sync", "--watch", "5", "--resend-refused"])
        #expect(watching.status == 64 && watching.stderr.contains("--resend-refused is for one sync, not --watch"), "\(watching)")
    }
}
