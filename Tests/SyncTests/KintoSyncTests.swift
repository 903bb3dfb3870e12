@testable import EventStore
@testable import EventSync
@testable import KintoAdapter
import TestSupport
import Foundation
import Testing

/// `evsync sync` against a real Kinto server, with the web app changing the
/// same bucket directly. Each test has its own store and bucket.
@Suite(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .deletesTestBuckets)
struct KintoSyncTests {
    // MARK: 1, 12: first sync, then nothing to do

    @Test func firstSyncOfAnEmptyStoreBringsEverythingDownThenHasNothingToDo() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let (a, b, c) = (newID(), newID(), newID())
        try await fx.web.put(a, holiday("Labour Day", details: "May Day"))
        try await fx.web.put(b, ["name": "Flag Day", "date": "2026-06-14", "observedBy": ["US"]])
        try await fx.web.put(c, ["name": "Ada Lovelace", "date": "1815-12-10", "giftIdeas": "Analytical engine"], in: "birthdays")

        let first = try await fx.syncReport()
        #expect(first.result == "newData")
        #expect(first.pulled == 3)
        #expect([first.pushed, first.deletedHere, first.deletedThere, first.conflicts] as [Int] == [0, 0, 0, 0])
        #expect(first.rejected.isEmpty)

        #expect(try await fx.cli.records("Holiday") == (try await fx.web.records(in: "holidays")))
        #expect(try await fx.cli.records("Birthday") == (try await fx.web.records(in: "birthdays")))
        #expect(try await fx.cli.show("Holiday", b) == ["name": "Flag Day", "date": "2026-06-14", "observedBy": ["US"]])
        let status = try await fx.cli.status()
        #expect(status.events == 3)
        #expect(status.pendingRecords == 0)
        #expect(status.records == ["Holiday": 2, "Birthday": 1])

        let second = try await fx.syncReport()
        #expect(second.result == "noData")
        #expect(second.pulled == 0)
        #expect([second.pushed, second.deletedHere, second.deletedThere, second.conflicts] as [Int] == [0, 0, 0, 0])
        #expect(try await fx.cli.status().events == 3, "a sync with nothing to do writes no event")
    }

    @Test func firstSyncCreatesTheMissingBucketAndRemembersTheRemote() async throws {
        let fx = try SyncFixture()
        let report = try await fx.syncReport()
        #expect(report.result == "noData")
        #expect(try await fx.web.count(in: "holidays") == 0)
        #expect(try await fx.web.count(in: "birthdays") == 0)

        // The remote is remembered: later syncs need no --remote.
        try await fx.cli.add(id: "later", ["name=Later", "date=2026-02-02"])
        let output = try await fx.cli.run(["sync", "--auth-file", fx.authFile, "--json"])
        #expect(output.status == 0, "\(output)")
        #expect(try SyncJSON(output.stdout).pushed == 1)
        #expect(try await fx.web.get("later")?.fields == holiday("Later", date: "2026-02-02"))
    }

    // MARK: 2: incremental pull

    @Test func incrementalPullBringsOnlyWhatChanged() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let ids = (0..<6).map { _ in newID() }
        for (n, id) in ids.enumerated() { try await fx.web.put(id, holiday("Holiday \(n)")) }
        #expect(try await fx.syncReport().pulled == 6)
        let seqAfterFirst = try await fx.cli.status().events

        let added = newID()
        try await fx.web.put(added, holiday("Added later"))
        try await fx.web.patch(ids[1], ["details": "changed by the web app"])
        try await fx.web.put(ids[4], holiday("Holiday 4 renamed", date: "2026-12-24"))

        let report = try await fx.syncReport()
        #expect(report.result == "newData")
        #expect(report.pulled == 3)
        #expect(report.deletedHere == 0 && report.pushed == 0)

        // Exactly one new event per changed record, all remote, and none for the others.
        let status = try await fx.cli.status()
        #expect(status.events == seqAfterFirst + 3)
        let newEvents = try await fx.cli.tail(3)
        #expect(Set(newEvents.compactMap { $0["id"]?.stringValue }) == [added, ids[1], ids[4]])
        #expect(newEvents.allSatisfy { $0["origin"]?.stringValue == "remote" })
        for id in [ids[0], ids[2], ids[3], ids[5]] { #expect(try await fx.cli.history(id).count == 1) }

        #expect(try await fx.cli.records() == (try await fx.web.records()))
        #expect(try await fx.cli.show("Holiday", ids[1])?["details"] == "changed by the web app")
        #expect(try await fx.syncReport().result == "noData")
    }

    // MARK: 3: remote delete

    @Test func remoteDeleteBecomesALocalDelete() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let (kept, gone) = (newID(), newID())
        try await fx.web.put(kept, holiday("Kept"))
        try await fx.web.put(gone, holiday("Gone"))
        _ = try await fx.syncReport()
        #expect(try await fx.cli.show("Holiday", gone) != nil)

        try await fx.web.delete(gone)
        let report = try await fx.syncReport()
        #expect(report.deletedHere == 1)
        #expect(report.pulled == 0 && report.deletedThere == 0)
        #expect(report.result == "newData")

        #expect(try await fx.cli.show("Holiday", gone) == nil)
        #expect(Set(try await fx.cli.records().keys) == [kept])
        let last = try #require(try await fx.cli.history(gone).last)
        #expect(last["kind"] == "deleted")
        #expect(last["origin"] == "remote")
        #expect(try await fx.cli.status().pendingRecords == 0)
        #expect(try await fx.web.get(gone) == nil, "the local delete is not pushed back")
    }

    // MARK: 4: local changes reach the server

    @Test func localCreateEditUnsetAndDeleteReachTheServer() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let (edited, unsetting, deleted, untouched) = (newID(), newID(), newID(), newID())
        try await fx.web.put(edited, holiday("Edit me"))
        try await fx.web.put(unsetting, holiday("Unset me", details: "to be removed"))
        try await fx.web.put(deleted, holiday("Delete me"))
        try await fx.web.put(untouched, holiday("Leave me"))
        _ = try await fx.syncReport()
        let untouchedVersion = try #require(try await fx.web.get(untouched)).version

        let (created, createdThenEdited, birthday) = (newID(), newID(), newID())
        try await fx.cli.add(id: created, ["name=Made here", "date=2026-03-03", #"observedBy:=["FR","BE"]"#])
        try await fx.cli.add(id: createdThenEdited, ["name=Draft", "date=2026-04-04"])
        try await fx.cli.edit(createdThenEdited, ["name=Final", "details=edited before the first push"])
        try await fx.cli.add("Birthday", id: birthday, ["name=Grace Hopper", "date=1906-12-09"])
        try await fx.cli.edit(edited, ["name=Edited here", "date=2026-07-07"])
        try await fx.cli.edit(unsetting, [], unset: ["details"])
        try await fx.cli.delete(deleted)
        #expect(try await fx.cli.status().pendingRecords == 6)

        let report = try await fx.syncReport()
        #expect(report.result == "newData")
        #expect(report.pushed == 5)
        #expect(report.deletedThere == 1)
        #expect(report.pulled == 0 && report.conflicts == 0 && report.rejected.isEmpty)

        let server = try await fx.web.records(in: "holidays")
        #expect(server[created] == ["name": "Made here", "date": "2026-03-03", "observedBy": ["FR", "BE"]])
        #expect(server[createdThenEdited] == holiday("Final", date: "2026-04-04", details: "edited before the first push"))
        #expect(server[edited] == holiday("Edited here", date: "2026-07-07"))
        #expect(server[unsetting] == holiday("Unset me"), "an unset field is removed on the server too")
        #expect(server[deleted] == nil)
        #expect(try await fx.web.get(untouched)?.version == untouchedVersion, "an unchanged record is not rewritten")
        #expect(try await fx.web.records(in: "birthdays") == [birthday: ["name": "Grace Hopper", "date": "1906-12-09"]])
        #expect(server == (try await fx.cli.records("Holiday")))

        let status = try await fx.cli.status()
        #expect(status.pendingRecords == 0)
        #expect(status.unacknowledgedEvents == 0)
        let next = try await fx.syncReport()
        #expect(next.result == "noData")
    }

    // MARK: 5: create then delete locally

    @Test func createThenDeleteLocallyPushesNothing() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let existing = newID()
        try await fx.web.put(existing, holiday("Existing"))
        _ = try await fx.syncReport()
        let timestampBefore = try await fx.web.timestamp()

        let ephemeral = newID()
        try await fx.cli.add(id: ephemeral, ["name=Ephemeral", "date=2026-08-08"])
        try await fx.cli.delete(ephemeral)
        #expect(try await fx.cli.status().pendingRecords == 0)

        let report = try await fx.syncReport()
        #expect(report.result == "noData")
        #expect(report.pushed == 0 && report.deletedThere == 0)
        // No request touched the collection: its timestamp did not move, and
        // there is no record nor tombstone for the id.
        #expect(try await fx.web.timestamp() == timestampBefore)
        let everything = try await fx.web.listing(since: 0)
        #expect(!everything.contains { $0["id"]?.stringValue == ephemeral })
        #expect(try await fx.web.records().keys.sorted() == [existing])
        #expect(!(try await fx.cli.history(ephemeral)).contains { $0["kind"] == "acknowledged" })
    }

    // MARK: 6: disjoint edits merge

    @Test func disjointFieldEditsOnBothSidesMerge() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let id = newID()
        try await fx.web.put(id, holiday("Original name", details: "original details"))
        _ = try await fx.syncReport()

        try await fx.cli.edit(id, ["details=details edited here"])
        try await fx.web.patch(id, ["name": "name edited on the web"])

        let report = try await fx.syncReport()
        #expect(report.conflicts == 0)
        #expect(report.pushed == 1)
        let both = holiday("name edited on the web", details: "details edited here")
        #expect(try await fx.cli.show("Holiday", id) == both)
        #expect(try await fx.web.get(id)?.fields == both)
        #expect(try await fx.cli.status().pendingRecords == 0)
        #expect(!(try await fx.cli.history(id)).contains { $0["kind"] == "conflict" })
        #expect(try await fx.syncReport().result == "noData")
    }

    // MARK: 7: same-field conflicts

    @Test(arguments: ConflictPolicy.allCases)
    func sameFieldConflictIsSettledByThePolicyAndLogged(policy: ConflictPolicy) async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let id = newID()
        try await fx.web.put(id, holiday("Base", details: "base details"))
        _ = try await fx.syncReport()

        try await fx.cli.edit(id, ["name=Local name"])
        let serverVersion = try await fx.web.patch(id, ["name": "Server name"])

        let report = try await fx.syncReport(["--conflicts", policy.rawValue])
        #expect(report.conflicts == 1)
        #expect(report.result == "newData")

        let winner = policy == .serverWins ? "Server name" : "Local name"
        let expected = holiday(winner, details: "base details")
        #expect(try await fx.cli.show("Holiday", id) == expected)
        let server = try #require(try await fx.web.get(id))
        #expect(server.fields == expected)
        if policy == .serverWins {
            #expect(server.version == serverVersion, "server-wins leaves the server untouched")
            #expect(report.pushed == 0)
        } else {
            #expect(server.version > serverVersion)
            #expect(report.pushed == 1)
        }
        #expect(try await fx.cli.status().pendingRecords == 0)

        let conflicts = try await fx.cli.history(id).filter { $0["kind"] == "conflict" }
        try #require(conflicts.count == 1)
        let conflict = conflicts[0]
        #expect(conflict["local"]?.objectValue?["name"] == "Local name")
        #expect(conflict["server"]?.objectValue?["name"] == "Server name")
        #expect(conflict["resolved"]?.objectValue == expected)
        #expect(conflict["policy"]?.stringValue == policy.rawValue)
        #expect(conflict["version"]?.int64Value == serverVersion)
        #expect(try await fx.syncReport(["--conflicts", policy.rawValue]).result == "noData")
    }

    // MARK: 8: update versus delete

    @Test(arguments: ConflictPolicy.allCases)
    func localEditVersusRemoteDelete(policy: ConflictPolicy) async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let id = newID()
        try await fx.web.put(id, holiday("Contested"))
        _ = try await fx.syncReport()

        try await fx.cli.edit(id, ["details=edited here"])
        try await fx.web.delete(id)

        let report = try await fx.syncReport(["--conflicts", policy.rawValue])
        #expect(report.conflicts == 1)
        let edited = holiday("Contested", details: "edited here")
        switch policy {
        case .serverWins:
            #expect(try await fx.cli.show("Holiday", id) == nil)
            #expect(try await fx.web.get(id) == nil)
        case .clientWins:
            #expect(try await fx.cli.show("Holiday", id) == edited)
            #expect(try await fx.web.get(id)?.fields == edited, "client-wins puts the record back on the server")
        }
        #expect(try await fx.cli.status().pendingRecords == 0)
        let conflict = try #require(try await fx.cli.history(id).last { $0["kind"] == "conflict" })
        #expect(conflict["local"] == .object(edited))
        #expect(conflict["server"] == .null)
        #expect(conflict["resolved"] == (policy == .serverWins ? .null : .object(edited)))
        #expect(try await fx.syncReport(["--conflicts", policy.rawValue]).result == "noData")
    }

    @Test(arguments: ConflictPolicy.allCases)
    func localDeleteVersusRemoteEdit(policy: ConflictPolicy) async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let id = newID()
        try await fx.web.put(id, holiday("Contested"))
        _ = try await fx.syncReport()

        try await fx.cli.delete(id)
        try await fx.web.patch(id, ["details": "edited on the web"])
        let editedThere = holiday("Contested", details: "edited on the web")

        let report = try await fx.syncReport(["--conflicts", policy.rawValue])
        #expect(report.conflicts == 1)
        switch policy {
        case .serverWins:
            #expect(try await fx.cli.show("Holiday", id) == editedThere, "server-wins brings the record back")
            #expect(try await fx.web.get(id)?.fields == editedThere)
            #expect(report.deletedThere == 0)
        case .clientWins:
            #expect(try await fx.cli.show("Holiday", id) == nil)
            #expect(try await fx.web.get(id) == nil, "client-wins deletes it on the server")
            #expect(report.deletedThere == 1)
        }
        #expect(try await fx.cli.status().pendingRecords == 0)
        let conflict = try #require(try await fx.cli.history(id).last { $0["kind"] == "conflict" })
        #expect(conflict["local"] == .null)
        #expect(conflict["server"] == .object(editedThere))
        #expect(conflict["resolved"] == (policy == .serverWins ? .object(editedThere) : .null))
        #expect(try await fx.syncReport(["--conflicts", policy.rawValue]).result == "noData")
    }

    // MARK: Text survives both ways

    @Test func unicodeAndEscapesSurviveBothWays() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        // Kinto sends non-ASCII as \u escapes, emoji as surrogate pairs.
        let tricky = "Fête 🎉 \"quoted\" back\\slash\ttab\nnewline — 日本語"
        let id = newID()
        try await fx.web.put(id, ["name": .string(tricky), "date": "2026-07-14", "observedBy": ["FR", "🇫🇷"]])
        #expect(try await fx.syncReport().pulled == 1)
        #expect(try await fx.cli.show("Holiday", id) == ["name": .string(tricky), "date": "2026-07-14", "observedBy": ["FR", "🇫🇷"]])

        let mine = newID()
        let local = "Ünïcødé 😀 \\ \"q\" \u{7f}"
        try await fx.cli.add(id: mine, ["name=\(local)", "date=2026-01-01", "details=\(tricky)"])
        try await fx.cli.edit(id, ["details=ß∂ƒ"])
        #expect(try await fx.syncReport().pushed == 2)
        #expect(try await fx.web.get(mine)?.fields == ["name": .string(local), "date": "2026-01-01", "details": .string(tricky)])
        #expect(try await fx.web.get(id)?.fields["details"] == "ß∂ƒ")
        #expect(try await fx.syncReport().result == "noData")
    }

    // MARK: Two stores through one server

    @Test func twoStoresExchangeChangesThroughTheServer() async throws {
        let fx = try SyncFixture()
        let other = fx.secondStore()
        _ = try await fx.syncReport()
        _ = try await fx.syncReport(store: other)

        let (mine, theirs) = (newID(), newID())
        try await fx.cli.add(id: mine, ["name=From store one", "date=2026-09-09"])
        try await other.add(id: theirs, ["name=From store two", "date=2026-10-10"])
        #expect(try await fx.syncReport().pushed == 1)
        let otherReport = try await fx.syncReport(store: other)
        #expect(otherReport.pulled == 1 && otherReport.pushed == 1)
        #expect(try await fx.syncReport().pulled == 1)

        let server = try await fx.web.records()
        #expect(server.count == 2)
        #expect(try await fx.cli.records() == server)
        #expect(try await other.records() == server)
    }

    /// Two stores edit the same records and sync at the same moment, each
    /// meeting the other's pushes as failed preconditions mid-batch.
    @Test func twoStoresSyncingAtTheSameTimeConverge() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let ids = (0..<60).map { String(format: "s%02d", $0) }
        try await fx.web.seed(ids.map { (id: $0, fields: holiday("Shared \($0)")) })
        let other = fx.secondStore()
        #expect(try await fx.syncReport().pulled == 60)
        #expect(try await fx.syncReport(store: other).pulled == 60)

        do {
            let a = try Store(directory: fx.cli.store)
            let b = try Store(directory: other.store)
            for (n, id) in ids.enumerated() {
                try a.edit("Holiday", id: id, set: ["details": "from A"])
                if n < 20 { try a.edit("Holiday", id: id, set: ["name": "A's name"]) }
                if (20..<40).contains(n) { try b.edit("Holiday", id: id, set: ["name": "B's name"]) }
                if n >= 40 { try b.edit("Holiday", id: id, set: ["details": "from B"]) }
            }
        }

        async let first = fx.sync(["--conflicts", "server-wins"])
        async let second = fx.sync(["--conflicts", "client-wins"], store: other)
        let (one, two) = try await (first, second)
        #expect(one.status == 0, "\(one)")
        #expect(two.status == 0, "\(two)")

        for store in [fx.cli, other, fx.cli] { _ = try await fx.syncReport(store: store) }
        let server = try await fx.web.records()
        #expect(try await fx.cli.records() == server)
        #expect(try await other.records() == server)
        #expect(try await fx.cli.status().pendingRecords == 0)
        #expect(try await other.status().pendingRecords == 0)
        for (n, id) in ids.enumerated() {
            let record = try #require(server[id])
            #expect(record["name"] == (n < 20 ? "A's name" : n < 40 ? "B's name" : .string("Shared \(id)")), "\(id)")
            if n < 40 {
                #expect(record["details"] == "from A", "\(id)")
            } else {
                // Both changed details: whoever synced second decided, by its policy.
                #expect(record["details"] == "from A" || record["details"] == "from B", "\(id)")
            }
        }
    }
}
