@testable import EventStore
import TestSupport
import Foundation
import Testing

/// A newer app writes a field this evsync's schema does not declare (`emoji`): the record is carried with it,
/// edited, merged and pushed back with it unchanged, through Kinto and Parse. Only local writes of such a
/// field are refused: the schema governs what this app writes, not what others wrote.
@Suite struct UnknownFieldSyncTests {
    @Test(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .deletesTestBuckets)
    func kintoRecordWithANewerAppsFieldIsEditedMergedAndPushedBackWithIt() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let id = newID()
        try await fx.web.put(id, holiday("Carnival", date: "2027-02-09").merging(["emoji": "🎭", "x-rank": 3]) { $1 })
        #expect(try await fx.syncReport().pulled == 1)
        #expect(try await fx.cli.show("Holiday", id)?["emoji"] == "🎭")
        let shown = try await fx.cli.ok(["show", "Holiday", id])
        #expect(shown.contains("emoji") && shown.contains("🎭") && shown.contains("x-rank"), "\(shown)")

        // An edit of a field this app knows is taken, and keeps the carried ones.
        try await fx.cli.edit(id, ["details=masks"])
        // Meanwhile the newer app changes its own field: the three-way merge takes both.
        try await fx.web.patch(id, ["emoji": "🎉"])
        let merged = try await fx.syncReport()
        #expect(merged.conflicts == 0 && merged.pushed == 1, "\(merged)")
        let expected = holiday("Carnival", date: "2027-02-09", details: "masks").merging(["emoji": "🎉", "x-rank": 3]) { $1 }
        #expect(try await fx.web.get(id)?.fields == expected)
        #expect(try await fx.cli.records()[id] == expected)

        // Local writes of the undeclared field stay refused, with the schema's words; the log is untouched.
        let events = try await fx.cli.status().events
        for words in [["edit", "Holiday", id, "emoji=x"], ["edit", "Holiday", id, "--unset", "emoji"],
                      ["add", "Holiday", "name=Other", "date=2027-01-01", "emoji=x"]] {
            let refused = try await fx.cli.run(words)
            #expect(refused.status == 65 && refused.stderr.contains("Holiday has no field 'emoji'"), "\(words): \(refused)")
        }
        #expect(try await fx.cli.status().events == events)

        // blame and history name who set it.
        let blame = try await fx.cli.json(["blame", "Holiday", id, "--json"])
        let emoji = blame.objectValue?["fields"]?.objectValue?["emoji"]?.objectValue
        #expect(emoji?["origin"] == "remote" && emoji?["value"] == "🎉", "\(blame)")
        #expect(try await fx.syncReport().result == "noData")
    }

    @Test(arguments: [[], ["--allow-custom-object-id"]])
    func parseObjectWithANewerAppsTypedFieldKeepsItsTypeThroughAnEdit(options: [String]) async throws {
        let web = try await ParseStandIn(["--class", "Holiday", "--class", "Birthday"] + options)
        let directory = try TemporaryDirectory("synctests-parse-unknown")
        let cli = Evsync(store: directory.file("store"))
        let reminder: JSONValue = ["__type": "Date", "iso": "2027-02-08T09:00:00.000Z"]
        let objectID = try await web.create("Holiday", ["name": "Carnival", "date": "2027-02-09", "remindAt": reminder, "emoji": "🎭"])
        #expect(try await cli.syncParse(web).pulled == 1)
        let id = try #require(try await cli.records().keys.first)
        // Carried as Parse sent it: the Date object, not a string this app would push back as another type.
        #expect(try await cli.show("Holiday", id)?["remindAt"] == reminder)

        try await cli.edit(id, ["details=masks"])
        try await web.update("Holiday", objectID, ["emoji": "🎉"])
        let merged = try await cli.syncParse(web)
        #expect(merged.conflicts == 0 && merged.pushed == 1, "\(merged)")
        let object = try #require(try await web.objects("Holiday").first)
        #expect(object["remindAt"] == reminder && object["emoji"] == "🎉" && object["details"] == "masks", "\(object)")
        #expect(try await cli.records()[id]?["emoji"] == "🎉")
    }
}
