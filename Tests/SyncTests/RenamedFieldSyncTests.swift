@testable import EventStore
import TestSupport
import Foundation
import Testing

/// A schema renames a field (`x-evsync-renamed-from`) while apps installed earlier still read and write the old
/// name on the same server: the new app reads the field under its new name everywhere (old events, records
/// pulled, views, history, blame, diff, --as-of), merges it as one field, and keeps writing the old name on the
/// wire, so that both converge with nothing lost. Through Kinto and Parse.
@Suite struct RenamedFieldSyncTests {
    /// The built-in Holiday with `details` renamed `notes`, and a field the old app lacks (`emoji`).
    static func renamingSchemas(in directory: TemporaryDirectory, renaming old: String = "details", to new: String = "notes",
                                format: String? = nil) throws -> String {
        let path = directory.file("schemas-new")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let required = old == "date" ? #"["name", "\#(new)"]"# : #"["name", "date"]"#
        let formatText = format.map { #", "format": "\#($0)""# } ?? ""
        let others = [("name", #"{ "type": "string", "minLength": 1 }"#), ("date", #"{ "type": "string", "format": "date" }"#),
                      ("details", #"{ "type": "string" }"#)].filter { $0.0 != old }
            .map { #""\#($0.0)": \#($0.1)"# }.joined(separator: ",\n    ")
        try """
        {
          "title": "Holiday", "type": "object", "x-evsync-collection": "holidays",
          "properties": {
            \(others),
            "\(new)": { "type": "string"\(formatText), "x-evsync-renamed-from": "\(old)" },
            "emoji": { "type": "string" }
          },
          "required": \(required)
        }
        """.write(toFile: path + "/holiday.schema.json", atomically: true, encoding: .utf8)
        return path
    }

    @Test(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .deletesTestBuckets)
    func kintoOldAndNewAppsShareARenamedFieldAndConverge() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let schemas = try Self.renamingSchemas(in: fx.directory)
        // The old app: the built-in schema. The new app's store starts under it too, and is then upgraded.
        let old = fx.cli
        let upgraded = fx.secondStore()
        let id = newID(), other = newID()
        try await old.add(id: id, ["name=Carnival", "date=2027-02-09", "details=masks"])
        #expect(try await fx.syncReport(store: old).pushed == 1)
        #expect(try await fx.syncReport(store: upgraded).pulled == 1)
        try await upgraded.add(id: other, ["name=Lent", "date=2027-02-10", "details=ashes"])
        #expect(try await fx.syncReport(store: upgraded).pushed == 1)
        #expect(try await fx.syncReport(store: old).pulled == 1)
        let beforeUpgrade = try await upgraded.status().events

        // The app update: its log holds `details` only, in events written by the server and by itself.
        let new = Evsync(store: upgraded.store, schemas: schemas)
        #expect(try await new.show("Holiday", id) == ["name": "Carnival", "date": "2027-02-09", "notes": "masks"])
        #expect(try await new.records()[other] == ["name": "Lent", "date": "2027-02-10", "notes": "ashes"])
        let check = try await new.run(["schema", "check", "Holiday", "--json"])
        #expect(check.status == 1, "\(check)")
        let renamed = try JSONParser.parse(check.stdout).arrayValue?.first?.objectValue?["renamed"]?.arrayValue ?? []
        #expect(Set(renamed.compactMap { $0.objectValue?["id"]?.stringValue }) == [id, other], "\(check.stdout)")
        #expect(renamed.allSatisfy { $0.objectValue?["field"] == "notes" && $0.objectValue?["from"] == "details" })
        let blame = try await new.json(["blame", "Holiday", id, "--json"])
        #expect(blame.objectValue?["fields"]?.objectValue?["notes"]?.objectValue?["value"] == "masks", "\(blame)")
        #expect(try await new.history(id).contains { $0["set"]?.objectValue?["notes"] == "masks" })
        #expect(try await new.ok(["list", "Holiday", "--as-of", "1", "--json"]).contains(#""notes":"masks""#))
        let diff = try await new.ok(["diff", "--from", "0", "--json"])
        #expect(diff.contains(#""notes""#) && !diff.contains(#""details""#), "\(diff)")
        #expect(try await new.status().events == beforeUpgrade, "reading through the new schema wrote nothing")
        #expect(try await new.status().pendingRecords == 0, "a rename makes nothing pending")

        // Both edit at once: the old app the field under its old name, the new app another field and its own
        // new field; then the new app the renamed field of the other record, the old app another field of it.
        try await old.edit(id, ["details=masks and floats"])
        try await new.edit(id, ["date=2027-02-16", "emoji=🎭"])
        try await new.edit(other, ["notes=ashes and fasting"])
        try await old.edit(other, ["date=2027-02-17"])
        #expect(try await fx.syncReport(store: old).pushed == 2)
        let merged = try await fx.syncReport(store: new)
        #expect(merged.conflicts == 0 && merged.pushed == 2, "\(merged)")
        #expect(try await fx.syncReport(store: old).pulled == 2)

        // The server holds the old name, read by the old app; each side sees everything, under its own names.
        #expect(try await fx.web.get(id)?.fields == ["name": "Carnival", "date": "2027-02-16", "details": "masks and floats", "emoji": "🎭"])
        #expect(try await fx.web.get(other)?.fields == ["name": "Lent", "date": "2027-02-17", "details": "ashes and fasting"])
        #expect(try await old.records()[id] == ["name": "Carnival", "date": "2027-02-16", "details": "masks and floats", "emoji": "🎭"])
        #expect(try await old.records()[other]?["details"] == "ashes and fasting")
        #expect(try await new.records()[id] == ["name": "Carnival", "date": "2027-02-16", "notes": "masks and floats", "emoji": "🎭"])
        #expect(try await new.records()[other] == ["name": "Lent", "date": "2027-02-17", "notes": "ashes and fasting"])

        // Both changing the renamed field is one field changed on both sides: a conflict, as for any field.
        try await old.edit(id, ["details=by the old app"])
        try await new.edit(id, ["notes=by the new app"])
        #expect(try await fx.syncReport(store: old).pushed == 1)
        #expect(try await fx.syncReport(store: new).conflicts == 1)
        #expect(try await fx.syncReport(store: old).result != "failed")
        #expect(try await fx.web.get(id)?.fields["notes"] == nil)
        let kept = try await old.records()[id]?["details"]
        let shown = try await new.records()[id]?["notes"]
        #expect(kept != nil && kept == shown)
        #expect(try await fx.syncReport(store: new).result == "noData")

        // rebuild-views changes nothing of that; the log holds `details` in its old events still.
        let before = try await new.records()
        try await new.ok(["rebuild-views"])
        #expect(try await new.records() == before)
        #expect(try await new.verifyViews().status == 0)
        #expect(try await upgraded.history(id).first?["set"]?.objectValue?["details"] == "masks", "the log as written")
    }

    @Test func parseOldAndNewAppsShareARenamedTypedField() async throws {
        let web = try await ParseStandIn(["--class", "Holiday", "--class", "Birthday"])
        let directory = try TemporaryDirectory("synctests-parse-renamed")
        let schemas = try Self.renamingSchemas(in: directory, renaming: "date", to: "day", format: "date")
        let old = Evsync(store: directory.file("old"))
        let new = Evsync(store: directory.file("new"), schemas: schemas)
        let objectID = try await web.create("Holiday", ["name": "Carnival", "date": ["__type": "Date", "iso": "2027-02-09T00:00:00.000Z"]])
        #expect(try await new.syncParse(web).pulled == 1)
        let id = try #require(try await new.records().keys.first)
        #expect(try await new.show("Holiday", id) == ["name": "Carnival", "day": "2027-02-09"])
        #expect(try await old.syncParse(web).pulled == 1)

        // The old app moves the day on the server; the new app meanwhile edits another field.
        try await old.edit(id, ["date=2027-02-16"])
        #expect(try await old.syncParse(web).pushed == 1)
        try await new.edit(id, ["details=masks", "emoji=🎭"])
        let merged = try await new.syncParse(web)
        #expect(merged.conflicts == 0 && merged.pushed == 1, "\(merged)")
        let object = try #require(try await web.objects("Holiday").first { $0["objectId"]?.stringValue == objectID })
        #expect(object["date"] == ["__type": "Date", "iso": "2027-02-16T00:00:00.000Z"] && object["day"] == nil, "\(object)")
        #expect(object["details"] == "masks" && object["emoji"] == "🎭", "\(object)")
        #expect(try await new.records()[id] == ["name": "Carnival", "day": "2027-02-16", "details": "masks", "emoji": "🎭"])

        // The new app edits the renamed field of a record the old app created: Parse gets it as its Date.
        try await old.ok(["add", "Holiday", "name=Lent", "date=2027-02-10"])
        #expect(try await old.syncParse(web).pushed == 1)
        #expect(try await new.syncParse(web).pulled >= 1)
        let lent = try #require(try await new.records().first { $0.value["name"] == "Lent" })
        try await new.edit(lent.key, ["day=2027-02-11"])
        #expect(try await new.syncParse(web).pushed == 1)
        let pushed = try #require(try await web.objects("Holiday").first { $0["name"] == "Lent" })
        #expect(pushed["date"] == ["__type": "Date", "iso": "2027-02-11T00:00:00.000Z"] && pushed["day"] == nil, "\(pushed)")
        #expect(try await old.syncParse(web).pulled == 1)
        #expect(try await old.records().values.contains { $0["name"] == "Lent" && $0["date"] == "2027-02-11" })
    }
}
