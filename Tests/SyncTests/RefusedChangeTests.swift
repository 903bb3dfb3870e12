@testable import EventStore
import TestSupport
import Foundation
import Testing

/// A change the server refuses is an answer, not a failure to retry: on a real Kinto, a user who may only read
/// a bucket edits and adds; each refusal (HTTP 403) is kept here and held, later syncs send nothing of it by
/// themselves and say so; an edit, `--resend-refused` or access granted sends it again.
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

        // The store learned that bob may only read: a change is refused before it is written (see
        // SharedBucketTests), and forced, it is made here and goes to the server.
        #expect(try await store.run(["edit", "Holiday", shared, "details=Parade"]).status == 73)
        try await store.ok(["edit", "Holiday", shared, "details=Parade", "--force"])
        try await store.ok(["add", "Holiday", "--id", mine, "name=Bob's day", "date=2027-06-01", "--force"])

        // Refused by the server: kept here, not "credentials refused" (77), and each change named with the server's status.
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
        try await store.ok(["edit", "Holiday", mine, "details=Cake", "--force"])
        let edited = try await sync()
        #expect(edited.report.rejected.count == 1 && edited.report.rejected[0].hasPrefix("Holiday \(mine)"), "\(edited.report)")
        #expect(edited.report.held == ["Holiday \(shared)"], "\(edited.report)")
        try await store.ok(["edit", "Holiday", mine, "details=Cake!", "--force"])
        #expect(try await store.json(["why", "Holiday", mine, "--json"]).objectValue?["held"] == false, "edited: no longer held")

        // --resend-refused sends the held one once more, with the edited one: both refused again, bob still only reads.
        let resent = try await sync(["--resend-refused"])
        #expect(resent.output.status == 1 && resent.report.rejected.count == 2 && resent.report.held.isEmpty, "\(resent.output)")

        // Access granted: the sync that learns it sends what was held for want of it, unasked.
        let granted = try await fx.web.request("PATCH", "/buckets/\(fx.web.bucket)",
                                               body: ["permissions": ["write": [.string("account:\(bob.name)")]]])
        #expect(granted.status == 200, "\(granted)")
        let sent = try await sync()
        #expect(sent.output.status == 0 && sent.report.pushed == 2 && sent.report.held.isEmpty, "\(sent.output)")
        #expect(try await fx.web.get(shared)?.fields["details"] == "Parade")
        #expect(try await fx.web.get(mine)?.fields["details"] == "Cake!")
        #expect(try await store.json(["why", "Holiday", shared, "--json"]).objectValue?["held"] == false)
        let settled = try await sync()
        #expect(settled.output.status == 0 && settled.report.result == "noData", "\(settled.output)")
        let watching = try await store.run(["sync", "--watch", "5", "--resend-refused"])
        #expect(watching.status == 64 && watching.stderr.contains("--resend-refused is for one sync, not --watch"), "\(watching)")
    }
}
