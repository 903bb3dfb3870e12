import Foundation
import Testing
@testable import EventStore
import TestSupport

/// blame, diff, conflicts, resolve, revert and why on real stores (no server: the conflict comes from
/// a store whose log holds one, written through the library's ingest API as a pull would).
@Suite("CLI history commands")
struct AuditCLITests {
    @Test("blame names the event, time, author and origin of each field's value")
    func blame() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "--id", "may", "name=May Day", "date=2026-05-01"])       // 1
            try sandbox.succeed(["edit", "Holiday", "may", "name=Labour Day", "details=Parades"])          // 2
            try sandbox.succeed(["edit", "Holiday", "may", "details=Picnics"], environment: ["EVSYNC_AUTHOR": "bob@elsewhere"]) // 3
            let blame = try #require(try sandbox.succeed(["blame", "Holiday", "may", "--json"]).json().objectValue)
            #expect(blame["id"] == "may" && blame["entity"] == "Holiday")
            let fields = try #require(blame["fields"]?.objectValue)
            #expect(fields.keys.sorted() == ["date", "details", "name"])
            #expect(fields["date"]?.objectValue?["seq"] == 1 && fields["date"]?.objectValue?["kind"] == "created")
            #expect(fields["name"]?.objectValue?["seq"] == 2 && fields["name"]?.objectValue?["value"] == "Labour Day")
            #expect(fields["details"]?.objectValue?["seq"] == 3 && fields["details"]?.objectValue?["by"] == "bob@elsewhere")
            #expect(fields.values.allSatisfy { $0.objectValue?["origin"] == "local" })

            let text = try sandbox.succeed(["blame", "Holiday", "may"])
            #expect(text.lines.count == 4, "\(text)")
            #expect(text.lines.contains { $0.hasPrefix("details") && $0.contains("#3") && $0.contains("bob@elsewhere") }, "\(text)")

            try sandbox.succeed(["delete", "Holiday", "may"])
            let gone = try sandbox.run(["blame", "Holiday", "may"])
            #expect(gone.status == Exit.noInput && gone.stderr.split(separator: "\n").count == 1, "\(gone)")
            #expect(try sandbox.run(["blame", "Nothing", "may"]).status == Exit.dataError)
        }
    }

    @Test("diff between event numbers, dates and now: added, changed field by field, deleted; streamed per record")
    func diff() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "--id", "a", "name=A", "date=2026-01-01"])      // 1
            try sandbox.succeed(["add", "Holiday", "--id", "b", "name=B", "date=2026-01-02"])      // 2
            try sandbox.succeed(["add", "Birthday", "--id", "c", "name=C", "date=2000-01-03"])     // 3
            try sandbox.succeed(["edit", "Holiday", "a", "name=A2", "details=new"])                // 4
            try sandbox.succeed(["edit", "Holiday", "a", "name=A3"])                               // 5
            try sandbox.succeed(["delete", "Holiday", "b"])                                        // 6
            try sandbox.succeed(["add", "Holiday", "--id", "d", "name=D", "date=2026-01-04"])      // 7
            try sandbox.succeed(["add", "Holiday", "--id", "e", "name=E", "date=2026-01-05"])      // 8
            try sandbox.succeed(["delete", "Holiday", "e"])                                        // 9: added and gone again

            let changes = try #require(try sandbox.succeed(["diff", "--from", "3", "--json"]).json().arrayValue)
            let byID = Dictionary(uniqueKeysWithValues: changes.compactMap { $0.objectValue }.map { ($0["id"]?.stringValue ?? "", $0) })
            #expect(changes.count == 3, "\(changes)")
            #expect(byID["a"]?["change"] == "changed")
            #expect(byID["a"]?["fields"] == ["name": ["old": "A", "new": "A3"], "details": ["new": "new"]])
            #expect(byID["b"]?["change"] == "deleted")
            #expect(byID["b"]?["fields"]?.objectValue?["name"] == ["old": "B"])
            #expect(byID["d"]?["change"] == "added")
            // In the order of each record's last change.
            #expect(changes.compactMap { $0.objectValue?["id"]?.stringValue } == ["a", "b", "d"])

            // --to, and one entity.
            let early = try #require(try sandbox.succeed(["diff", "--from", "0", "--to", "3", "Birthday", "--json"]).json().arrayValue)
            #expect(early.count == 1 && early.first?.objectValue?["id"] == "c")
            #expect(try sandbox.succeed(["diff", "--from", "9", "--json"]).json() == [])

            // A date before the first event is the empty log; the text form counts.
            let text = try sandbox.succeed(["diff", "--from", "2000-01-01", "Holiday"])
            #expect(text.stdout.contains("+ Holiday/a") && text.stdout.contains("name: (unset) → \"A3\""), "\(text)")
            #expect(text.lines.last == "2 added, 0 changed, 0 deleted between event 0 and event 9", "\(text)")

            // A POINT is what --as-of takes: a local date-time without an offset, or a time of today.
            let localNow = try sandbox.succeed(["diff", "--from", "0", "--to", "23:59:59.999", "--json"])
            #expect(try localNow.json().arrayValue?.count == 3, "a, c and d: \(localNow)")
            #expect(try sandbox.succeed(["diff", "--from", "2000-01-01T00:00", "--json"]).json().arrayValue?.count == 3)

            for bad in [["diff"], ["diff", "--from", "yesterday"], ["diff", "--from", "1", "--to", "soon"]] {
                let result = try sandbox.run(bad)
                #expect(result.status == Exit.usage && result.stderr.split(separator: "\n").count == 1, "\(bad): \(result)")
            }
            let noSync = try sandbox.run(["diff", "--from", "last-sync"])
            #expect(noSync.status == Exit.noInput && noSync.stderr.contains("no sync"), "\(noSync)")
        }
    }

    @Test("revert restores a past state field by field, re-creates a deleted record, --dry-run writes nothing")
    func revert() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "--id", "may", "name=May Day", "date=2026-05-01", "details=x"])  // 1
            try sandbox.succeed(["edit", "Holiday", "may", "name=Labour Day", "--unset", "details"])              // 2
            let dry = try sandbox.succeed(["revert", "Holiday", "may", "--to", "1", "--dry-run"])
            #expect(dry.stdout.contains(#"name: "Labour Day" → "May Day""#) && dry.stdout.contains(#"details: (unset) → "x""#), "\(dry)")
            #expect(try sandbox.eventCount() == 2)

            let reverted = try #require(try sandbox.succeed(["revert", "Holiday", "may", "--to", "1", "--json"]).json().objectValue)
            #expect(reverted["kind"] == "updated" && reverted["seq"] == 3 && reverted["to"] == 1 && reverted["dryRun"] == false)
            #expect(try sandbox.records("Holiday")["may"] == ["name": "May Day", "date": "2026-05-01", "details": "x"])

            // Already so: nothing written, a note.
            let again = try sandbox.run(["revert", "Holiday", "may", "--to", "1"])
            #expect(again.status == Exit.ok && again.stderr.contains("no change"), "\(again)")
            #expect(try sandbox.eventCount() == 3)

            try sandbox.succeed(["delete", "Holiday", "may"])                                                      // 4
            let recreated = try #require(try sandbox.succeed(["revert", "Holiday", "may", "--to", "2", "--json"]).json().objectValue)
            #expect(recreated["kind"] == "created")
            #expect(try sandbox.records("Holiday")["may"] == ["name": "Labour Day", "date": "2026-05-01"])
            // Back to before it existed: deleted.
            #expect(try sandbox.succeed(["revert", "Holiday", "may", "--to", "0", "--json"]).json().objectValue?["kind"] == "deleted")
            #expect(try sandbox.records("Holiday")["may"] == nil)

            #expect(try sandbox.run(["revert", "Holiday", "nobody", "--to", "1"]).status == Exit.noInput)
            #expect(try sandbox.run(["revert", "Holiday", "may"]).status == Exit.usage)
            #expect(try sandbox.run(["revert", "Holiday", "may", "--to", "later"]).status == Exit.usage)
        }
    }

    @Test("why: created here, in step, changed here field by field, deleted here")
    func why() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "--id", "may", "name=May Day", "date=2026-05-01"])
            let created = try #require(try sandbox.succeed(["why", "Holiday", "may", "--json"]).json().objectValue)
            #expect(created["pending"] == true && created["state"] == "createdHere" && created["lastExchange"] == .null)
            #expect(created["pendingSince"]?.objectValue?["seq"] == 1)
            let text = try sandbox.succeed(["why", "Holiday", "may"])
            #expect(text.stdout.contains("created here, not on the server yet"), "\(text)")
            #expect(try sandbox.run(["why", "Holiday", "nobody"]).status == Exit.noInput)
        }
    }

    @Test("conflicts lists both sides field by field; resolve appends the chosen values, linked, and closes it")
    func conflictsAndResolve() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "--id", "may", "name=May Day", "date=2026-05-01"])   // 1
            // The server takes the creation, then someone renames it there while it is renamed here.
            try Self.ingest(sandbox, Event(eventID: RecordID.generate(), at: Timestamp.now(), entity: "Holiday", recordID: "may",
                                        kind: .acknowledged, origin: .remote, author: "http://server",
                                        version: RemoteVersion(10), server: .present(["name": "May Day", "date": "2026-05-01"])))  // 2
            try sandbox.succeed(["edit", "Holiday", "may", "name=Local name", "details=only here"])   // 3
            try Self.ingest(sandbox, Event(eventID: RecordID.generate(), at: Timestamp.now(), entity: "Holiday", recordID: "may",
                                        kind: .conflict, origin: .remote, author: "account:bob", version: RemoteVersion(11),
                                        server: .present(["name": "Server name", "date": "2026-05-01"]),
                                        local: .present(["name": "Local name", "date": "2026-05-01", "details": "only here"]),
                                        resolved: .present(["name": "Server name", "date": "2026-05-01", "details": "only here"]),
                                        policy: .serverWins))  // 4
            let listed = try #require(try sandbox.succeed(["conflicts", "--json"]).json().arrayValue)
            try #require(listed.count == 1)
            let conflict = try #require(listed[0].objectValue)
            #expect(conflict["seq"] == 4 && conflict["policy"] == "server-wins" && conflict["won"] == "server")
            #expect(conflict["by"] == "account:bob" && conflict["resolvedBy"] == .null && conflict["deleted"] == .null)
            // Only the field both sides changed: details changed here only.
            #expect(conflict["fields"] == [["field": "name", "local": "Local name", "server": "Server name", "won": "server"]])
            #expect(try sandbox.succeed(["conflicts", "--open", "--json"]).json().arrayValue?.count == 1)

            let why = try #require(try sandbox.succeed(["why", "Holiday", "may", "--json"]).json().objectValue)
            #expect(why["state"] == "changedHere" && why["lastExchange"]?.objectValue?["seq"] == 4)
            #expect(why["fields"]?.arrayValue?.compactMap { $0.objectValue?["field"] } == ["details"])

            // Bad events: not a number, missing, not a conflict, bad side.
            #expect(try sandbox.run(["resolve", "x", "--take", "local"]).status == Exit.usage)
            #expect(try sandbox.run(["resolve", "4", "--take", "mine"]).status == Exit.usage)
            #expect(try sandbox.run(["resolve", "99", "--take", "local"]).status == Exit.noInput)
            let notConflict = try sandbox.run(["resolve", "3", "--take", "local"])
            #expect(notConflict.status == Exit.dataError && notConflict.stderr.contains("not a conflict"), "\(notConflict)")
            #expect(try sandbox.eventCount() == 4, "a refused resolve writes nothing")

            let resolved = try #require(try sandbox.succeed(["resolve", "4", "--take", "local", "--json"]).json().objectValue)
            #expect(resolved["seq"] == 5 && resolved["kind"] == "updated" && resolved["conflict"] == 4)
            #expect(resolved["changes"] == [["field": "name", "old": "Server name", "new": "Local name"]])
            #expect(try sandbox.records("Holiday")["may"] == ["name": "Local name", "date": "2026-05-01", "details": "only here"])
            let event = try #require(try sandbox.succeed(["history", "may", "--json"]).json().arrayValue?.last?.objectValue)
            #expect(event["resolves"] == 4 && event["origin"] == "local")
            let historyText = try sandbox.succeed(["history", "may"])
            #expect(historyText.lines.contains { $0.hasPrefix("#5  ") && $0.hasSuffix("resolves conflict #4") }, "\(historyText)")

            #expect(try sandbox.succeed(["conflicts", "--open", "--json"]).json() == [])
            #expect(try sandbox.succeed(["conflicts", "--json"]).json().arrayValue?.first?.objectValue?["resolvedBy"] == 5)
            let text = try sandbox.succeed(["conflicts"])
            #expect(text.stdout.contains("resolved by #5") && text.stdout.contains(#"name: local "Local name", server "Server name": server won"#), "\(text)")
            let blame = try #require(try sandbox.succeed(["blame", "Holiday", "may", "--json"]).json().objectValue?["fields"]?.objectValue)
            #expect(blame["name"]?.objectValue?["seq"] == 5)
        }
    }

    @Test("an edit here against a deletion there: resolve --take local re-creates the record, pending; --take server deletes it again")
    func resolveAnUpdateAgainstADelete() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "--id", "may", "name=May Day", "date=2026-05-01"])   // 1
            try Self.ingest(sandbox, Event(eventID: RecordID.generate(), at: Timestamp.now(), entity: "Holiday", recordID: "may",
                                           kind: .acknowledged, origin: .remote, author: "http://server",
                                           version: RemoteVersion(10), server: .present(["name": "May Day", "date": "2026-05-01"])))  // 2
            try sandbox.succeed(["edit", "Holiday", "may", "details=edited here"])                     // 3
            let edited: JSONObject = ["name": "May Day", "date": "2026-05-01", "details": "edited here"]
            try Self.ingest(sandbox, Event(eventID: RecordID.generate(), at: Timestamp.now(), entity: "Holiday", recordID: "may",
                                           kind: .conflict, origin: .remote, author: "account:bob", version: RemoteVersion(11),
                                           server: .absent, local: .present(edited), resolved: .absent, policy: .serverWins))  // 4
            #expect(try sandbox.records("Holiday")["may"] == nil)
            let conflict = try #require(try sandbox.succeed(["conflicts", "--open", "--json"]).json().arrayValue?.first?.objectValue)
            #expect(conflict["deleted"] == "server" && conflict["won"] == "server" && conflict["fields"] == [])
            let text = try sandbox.succeed(["conflicts"])
            #expect(text.stdout.contains("deleted on the server, changed here: server won"), "\(text)")

            let local = try #require(try sandbox.succeed(["resolve", "4", "--take", "local", "--json"]).json().objectValue)
            #expect(local["kind"] == "created" && local["seq"] == 5)
            #expect(try sandbox.records("Holiday")["may"] == edited)
            let why = try #require(try sandbox.succeed(["why", "Holiday", "may", "--json"]).json().objectValue)
            #expect(why["state"] == "createdHere" && why["pending"] == true, "not on the server: the next sync creates it")

            // Decided again the other way: deleted, and nothing left to push.
            let server = try #require(try sandbox.succeed(["resolve", "4", "--take", "server", "--json"]).json().objectValue)
            #expect(server["kind"] == "deleted" && server["seq"] == 6)
            #expect(try sandbox.records("Holiday")["may"] == nil)
            #expect(try sandbox.succeed(["why", "Holiday", "may", "--json"]).json().objectValue?["pending"] == false)
            #expect(try sandbox.succeed(["conflicts", "--json"]).json().arrayValue?.first?.objectValue?["resolvedBy"] == 6)
            // Taking the side it already has still records the decision.
            #expect(try sandbox.succeed(["resolve", "4", "--take", "server", "--json"]).json().objectValue?["seq"] == 7)
        }
    }

    /// Appends a remote event through the ingest API, as a sync does.
    static func ingest(_ sandbox: Sandbox, _ event: Event) throws {
        let store = try Store(directory: sandbox.store.path)
        try store.ingest { writer in
            try writer.append(event, current: try writer.projection(entity: event.entity, id: event.recordID))
        }
    }
}
