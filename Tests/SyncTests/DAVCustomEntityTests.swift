import EventStore
import TestSupport
import Foundation
import Testing

/// A custom entity with its own `x-evsync-dav` (a Chore as a VTODO) synced by the CLI with real Radicale and Xandikos,
/// another client (the `caldav` package, Tools/dav-client) editing the same tasks between syncs.
@Suite("DAV custom entity", .serialized)
struct DAVCustomEntityTests {
    static let chore = #"""
        {
          "title": "Chore",
          "type": "object",
          "properties": {
            "title": {"type": "string", "minLength": 1},
            "due": {"type": "string", "format": "date"},
            "notes": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "priority": {"type": "integer", "minimum": 0, "maximum": 9},
            "room": {"type": "string"}
          },
          "required": ["title"],
          "x-evsync-collection": "chores",
          "x-evsync-dav": {
            "component": "VTODO",
            "properties": {"title": "SUMMARY", "due": "DUE", "notes": "DESCRIPTION", "tags": "CATEGORIES", "priority": "PRIORITY"}
          }
        }
        """#
    static let book = #"{"title": "Book", "properties": {"title": {"type": "string"}}}"#

    /// What Python's `icalendar` reads from an item's one VTODO: the mapped properties, decoded.
    static let readTask = """
        import json, sys, icalendar
        calendar = icalendar.Calendar.from_ical(open(sys.argv[1]).read())
        todos = calendar.walk("VTODO")
        assert len(todos) == 1, f"{len(todos)} VTODOs"
        todo = todos[0]
        values = {"UID": str(todo["UID"]), "SUMMARY": str(todo["SUMMARY"]), "DTSTAMP": todo.decoded("DTSTAMP").isoformat()}
        if "DUE" in todo: values["DUE"] = todo.decoded("DUE").isoformat()
        if "DESCRIPTION" in todo: values["DESCRIPTION"] = str(todo["DESCRIPTION"])
        if "PRIORITY" in todo: values["PRIORITY"] = todo.decoded("PRIORITY")
        if "CATEGORIES" in todo:
            lines = todo["CATEGORIES"] if isinstance(todo["CATEGORIES"], list) else [todo["CATEGORIES"]]
            values["CATEGORIES"] = [str(c) for line in lines for c in line.cats]
        print(json.dumps(values))
        """

    /// The item as `icalendar` reads it, DTSTAMP aside (checked to be there).
    static func parsed(_ text: String, in directory: TemporaryDirectory) async throws -> JSONObject {
        let file = directory.file("item-\(UUID().uuidString).ics")
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        let output = try await ProcessRunner.run(DAVSyncTests.python, ["-c", readTask, file])
        #expect(output.status == 0, "icalendar could not read \(text): \(output)")
        var values = try #require(JSONParser.parse(output.stdout).objectValue)
        #expect(values.removeValue(forKey: "DTSTAMP") != nil)
        return values
    }

    @Test("a Chore mapped to VTODO is created by the CLI and syncs up; another client's edit syncs down; evsync's edit keeps that client's VALARM and X- line; icalendar reads every item evsync wrote",
          .enabled(if: DAVInteropTests.parsersInstalled, "needs .tools/venv (Tools/python-env)"),
          arguments: ["radicale", "xandikos"])
    func choreRoundTrip(server: String) async throws {
        let dav = try await OwnDAV(server)
        let directory = try TemporaryDirectory("dav-custom")
        let schemas = directory.file("schemas")
        try FileManager.default.createDirectory(atPath: schemas, withIntermediateDirectories: true)
        try Self.chore.write(toFile: schemas + "/chore.schema.json", atomically: true, encoding: .utf8)
        try Self.book.write(toFile: schemas + "/book.schema.json", atomically: true, encoding: .utf8)
        let a = Evsync(store: directory.file("a"), schemas: schemas), b = Evsync(store: directory.file("b"), schemas: schemas)
        let environment = ["EVSYNC_AUTH_FILE": dav.authFile]

        let id = try await a.ok(["add", "Chore", "title=Water the plants", "due=2027-04-27", "notes=Ferns first; then, the rest",
                                 #"tags:=["home", "green, leafy"]"#, "priority:=3", "room=kitchen"]).trimmingCharacters(in: .whitespacesAndNewlines)
        let first = try await a.run(["sync", "--protocol", "dav", "--remote", dav.base], environment: environment)
        #expect(first.status == 0, "\(first)")
        // Book declares no mapping: left out in one line; Chore is not.
        #expect(first.stderr == "evsync: Book has no place on this dav server (no mapping for it); left out of this sync\n", "\(first)")

        let home = server == "radicale" ? "evsync/" : "evsync/calendars/"
        let peer = DAVSyncTests.Peer(collection: dav.base + home + "chores/", authFile: dav.authFile)
        #expect(try await peer.items() == [id: "Water the plants"])
        let created = try await peer.run(["show", id]).stdout
        #expect(try await Self.parsed(created, in: directory) == [
            "UID": .string(id), "SUMMARY": "Water the plants", "DUE": "2027-04-27", "DESCRIPTION": "Ferns first; then, the rest",
            "CATEGORIES": ["home", "green, leafy"], "PRIORITY": 3,
        ])
        #expect(!created.contains("room") && !created.contains("kitchen"), "an unmapped field stays local: \(created)")

        // A second store gets the chore from the server, without the local-only field.
        try await b.ok(["sync", "--protocol", "dav", "--remote", dav.base], environment: environment)
        #expect(try await b.json(["show", "Chore", id, "--json"]) == [
            "id": .string(id), "title": "Water the plants", "due": "2027-04-27", "notes": "Ferns first; then, the rest",
            "tags": ["home", "green, leafy"], "priority": 3,
        ])

        // Another client edits the task (SUMMARY, and a VALARM and an X- line of its own): pulled.
        try await peer.run(["edit", id, "Water all the plants"])
        let pulled = try await a.ok(["sync"], environment: environment)
        #expect(pulled.contains("pulled 1"), "\(pulled)")
        #expect(try await a.json(["show", "Chore", id, "--json"]).objectValue?["title"] == "Water all the plants")
        #expect(try await a.json(["show", "Chore", id, "--json"]).objectValue?["room"] == "kitchen")

        // evsync edits it: the other client's lines stay.
        try await a.ok(["edit", "Chore", id, "notes=Ferns last", "priority:=1", #"tags:=["garden"]"#], environment: environment)
        try await a.ok(["sync"], environment: environment)
        let served = try await peer.run(["show", id]).stdout
        for line in ["SUMMARY:Water all the plants", "DESCRIPTION:Ferns last", "PRIORITY:1", "CATEGORIES:garden", "X-EVSYNC-PEER:kept",
                     "BEGIN:VALARM", "TRIGGER:-PT15M", "DESCRIPTION:Reminder", "DUE;VALUE=DATE:20270427"] {
            #expect(served.contains(line), "\(line) missing from \(served)")
        }
        #expect(try await Self.parsed(served, in: directory) == [
            "UID": .string(id), "SUMMARY": "Water all the plants", "DUE": "2027-04-27", "DESCRIPTION": "Ferns last",
            "CATEGORIES": ["garden"], "PRIORITY": 1,
        ])
        try await b.ok(["sync"], environment: environment)
        #expect(try await b.json(["show", "Chore", id, "--json"]).objectValue?["notes"] == "Ferns last")

        // Nothing changed: nothing to do, and the server holds what the log believes.
        let idle = try await a.run(["sync"], environment: environment)
        #expect(idle.stdout.contains("already in sync"), "\(idle)")
        #expect(try await a.ok(["verify", "--remote"], environment: environment).contains("the server holds what the log believes"))
    }
}
