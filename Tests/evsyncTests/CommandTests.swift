import Foundation
import Testing
@testable import EventStore
import TestSupport

/// Every command of the binary, run end to end.
@Suite("CLI commands")
struct CommandTests {
    @Test("the binary is where the tests look for it")
    func binaryExists() {
        #expect(FileManager.default.isExecutableFile(atPath: BuiltProduct.evsync.path), "\(BuiltProduct.evsync.path)")
    }

    @Test("add prints the new id; --id and field:=json")
    func add() throws {
        try withSandbox { sandbox in
            #expect(!FileManager.default.fileExists(atPath: sandbox.store.path))
            let generated = try sandbox.succeed(["add", "Holiday", "name=New Year", "date=2027-01-01"])
            #expect(generated.lines.count == 1)
            let id = try #require(generated.lines.first)
            #expect(UUID(uuidString: id) != nil && id == id.lowercased(), "\(id)")
            #expect(generated.stderr == "evsync: created a new store in \(sandbox.store.path)\n", "\(generated)")
            #expect(FileManager.default.fileExists(atPath: sandbox.store.path), "add creates the store")

            let given = try sandbox.succeed(["add", "holiday", "--id", "bastille", "name=Fête nationale", "date=2026-07-14",
                                             "observedBy:=[\"FR\"]", "details=a=b:=c", "wikipediaLink=https://fr.wikipedia.org/wiki/F%C3%AAte"])
            #expect(given.stdout == "bastille\n")
            #expect(given.stderr.isEmpty, "the store exists now: \(given)")
            try sandbox.succeed(["add", "Birthday", "--id=ada", "name=Ada", "date=1815-12-10", "giftIdeas:=\"Notes on \\u00e9\""])

            let holidays = try sandbox.records("Holiday")
            #expect(holidays[id] == ["name": "New Year", "date": "2027-01-01"])
            #expect(holidays["bastille"] == ["name": "Fête nationale", "date": "2026-07-14", "observedBy": ["FR"], "details": "a=b:=c",
                                             "wikipediaLink": "https://fr.wikipedia.org/wiki/F%C3%AAte"])
            #expect(try sandbox.records("Birthday") == ["ada": ["name": "Ada", "date": "1815-12-10", "giftIdeas": "Notes on é"]])

            // The author comes from EVSYNC_AUTHOR.
            let tail = try sandbox.succeed(["log", "tail", "-n", "1", "--json"])
            #expect(try tail.json().objectValue?["by"] == .string(Sandbox.author))
            #expect(try sandbox.eventCount() == 3)
        }
    }

    @Test("edit sets, unsets, and reports when nothing changes")
    func edit() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "--id", "h", "name=May Day", "date=2026-05-01", "details=Parades"])
            let set = try sandbox.succeed(["edit", "Holiday", "h", "name=Labour Day", "observedBy:=[\"FR\",\"DE\"]"])
            #expect(set.stdout.isEmpty)
            #expect(try sandbox.records("Holiday")["h"] == ["name": "Labour Day", "date": "2026-05-01", "details": "Parades", "observedBy": ["FR", "DE"]])

            try sandbox.succeed(["edit", "Holiday", "h", "--unset", "details", "--unset", "observedBy"])
            #expect(try sandbox.records("Holiday")["h"] == ["name": "Labour Day", "date": "2026-05-01"])
            #expect(try sandbox.eventCount() == 3)

            let same = try sandbox.succeed(["edit", "Holiday", "h", "name=Labour Day", "--unset", "details"])
            #expect(same.stderr.contains("no change"), "\(same)")
            #expect(try sandbox.eventCount() == 3, "an edit without change writes nothing")

            let nothing = try sandbox.run(["edit", "Holiday", "h"])
            #expect(nothing.status == Exit.usage, "\(nothing)")
            let tooFew = try sandbox.run(["edit", "Holiday"])
            #expect(tooFew.status == Exit.usage, "\(tooFew)")
            let noValue = try sandbox.run(["edit", "Holiday", "h", "--unset"])
            #expect(noValue.status == Exit.usage, "\(noValue)")
            let notAssignment = try sandbox.run(["edit", "Holiday", "h", "name"])
            #expect(notAssignment.status == Exit.usage, "\(notAssignment)")
            let twice = try sandbox.run(["edit", "Holiday", "h", "name=a", "name=b"])
            #expect(twice.status == Exit.usage, "\(twice)")
            let both = try sandbox.run(["edit", "Holiday", "h", "details=x", "--unset", "details"])
            #expect(both.status == Exit.dataError, "\(both)")
            #expect(try sandbox.eventCount() == 3)
        }
    }

    @Test("delete removes the record")
    func delete() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "--id", "h", "name=X", "date=2026-01-01"])
            try sandbox.succeed(["add", "Holiday", "--id", "k", "name=Y", "date=2026-01-02"])
            let deleted = try sandbox.succeed(["delete", "Holiday", "h"])
            #expect(deleted.stdout.isEmpty)
            #expect(try sandbox.records("Holiday").keys.sorted() == ["k"])
            #expect(try sandbox.run(["show", "Holiday", "h"]).status == Exit.noInput)
            #expect(try sandbox.run(["delete", "Holiday", "h"]).status == Exit.noInput)
            #expect(try sandbox.run(["delete", "Holiday"]).status == Exit.usage)
            #expect(try sandbox.run(["delete", "Holiday", "k", "extra"]).status == Exit.usage)
            #expect(try sandbox.eventCount() == 3)
        }
    }

    @Test("show prints one record, as text or JSON")
    func show() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "--id", "h", "name=Christmas", "date=2026-12-25", "observedBy:=[\"GB\",\"US\"]"])
            let text = try sandbox.succeed(["show", "Holiday", "h"])
            // Fields in schema order, names aligned, JSON for non-strings.
            #expect(text.lines == ["id          h", "name        Christmas", "date        2026-12-25", #"observedBy  ["GB","US"]"#], "\(text)")
            let json = try sandbox.succeed(["show", "holiday", "h", "--json"])
            #expect(try json.json() == ["id": "h", "name": "Christmas", "date": "2026-12-25", "observedBy": ["GB", "US"]])
            #expect(try sandbox.run(["show", "Holiday", "nope"]).status == Exit.noInput)
            #expect(try sandbox.run(["show", "Holiday"]).status == Exit.usage)
        }
    }

    @Test("list prints a table for people and an array for scripts")
    func list() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "--id", "b", "name=Boxing Day", "date=2026-12-26"])
            try sandbox.succeed(["add", "Holiday", "--id", "a", "name=Christmas", "date=2026-12-25", "details=Line one\nline two"])
            try sandbox.succeed(["add", "Birthday", "--id", "c", "name=Ada", "date=1815-12-10"])

            let json = try sandbox.succeed(["list", "Holiday", "--json"])
            #expect(try json.json() == [
                ["id": "a", "name": "Christmas", "date": "2026-12-25", "details": "Line one\nline two"],
                ["id": "b", "name": "Boxing Day", "date": "2026-12-26"],
            ])
            // Independently parseable.
            let foundation = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]]
            #expect(foundation?.count == 2)

            let table = try sandbox.succeed(["list", "Holiday"])
            let lines = table.lines
            #expect(lines.count == 3, "\(table)")
            let header = lines[0].split(separator: " ").map(String.init)
            #expect(header == ["id", "name", "date", "details", "wikipediaLink", "observedBy", "image"])
            #expect(lines[1].hasPrefix("a  "))
            #expect(lines[1].contains("Christmas") && lines[1].contains("2026-12-25") && lines[1].contains(#"Line one\nline two"#), "a newline shows as \\n: \(table)")
            #expect(lines[2].hasPrefix("b  ") && lines[2].contains("Boxing Day"))
            #expect(table.stderr == "(2 Holiday records)\n", "the summary goes to stderr, not into the table")
            // Columns line up: each value starts under its header.
            let dateColumn = lines[0].range(of: "date")!.lowerBound.utf16Offset(in: lines[0])
            #expect(lines[2].range(of: "2026-12-26")?.lowerBound.utf16Offset(in: lines[2]) == dateColumn)

            #expect(try sandbox.succeed(["list", "Birthday"]).stderr == "(1 Birthday record)\n")
            try sandbox.succeed(["delete", "Birthday", "c"])
            #expect(try sandbox.succeed(["list", "Birthday", "--json"]).stdout == "[]\n")
            #expect(try sandbox.succeed(["list", "Birthday"]).stderr == "(0 Birthday records)\n")
            #expect(try sandbox.run(["list"]).status == Exit.usage)
            #expect(try sandbox.run(["list", "Holiday", "Birthday"]).status == Exit.usage)
        }
    }

    @Test("import reads a file or standard input and reports the count")
    func importLines() throws {
        try withSandbox { sandbox in
            let lines = (1...50).map { #"{"id":"h\#($0)","name":"Holiday \#($0)","date":"2026-01-\#(String(format: "%02d", $0 % 28 + 1))"}"# }
            let file = try sandbox.write("holidays.jsonl", lines.joined(separator: "\n") + "\n")
            let fromFile = try sandbox.succeed(["import", "Holiday", file])
            #expect(fromFile.stdout == "imported 50 Holiday records\n")

            let stdin = Data((#"{"name":"Ada","date":"1815-12-10"}"# + "\n\n" + #"{"id":"alan","name":"Alan","date":"1912-06-23"}"#).utf8)
            let fromStdin = try sandbox.succeed(["import", "birthday", "-"], stdin: stdin)
            #expect(fromStdin.stdout == "imported 2 Birthday records\n")

            let one = try sandbox.succeed(["import", "Birthday", "-"], stdin: Data(#"{"name":"Grace","date":"1906-12-09"}"#.utf8))
            #expect(one.stdout == "imported 1 Birthday record\n")
            let none = try sandbox.succeed(["import", "Birthday", "-"], stdin: Data())
            #expect(none.stdout == "imported 0 Birthday records\n")

            let holidays = try sandbox.records("Holiday")
            #expect(holidays.count == 50)
            #expect(holidays["h7"] == ["name": "Holiday 7", "date": "2026-01-08"])
            let birthdays = try sandbox.records("Birthday")
            #expect(birthdays.count == 3)
            #expect(birthdays["alan"]?["name"] == "Alan")
            #expect(try sandbox.eventCount() == 53)
            #expect(try sandbox.run(["import", "Holiday"]).status == Exit.usage)
        }
    }

    @Test("log tail prints the newest events, newest last")
    func logTail() throws {
        try withSandbox { sandbox in
            let ids = (1...12).map { "h\($0)" }
            let file = try sandbox.write("h.jsonl", ids.map { #"{"id":"\#($0)","name":"N","date":"2026-01-01"}"# }.joined(separator: "\n"))
            try sandbox.succeed(["import", "Holiday", file])
            try sandbox.succeed(["edit", "Holiday", "h1", "details=x", "--unset", "observedBy"])
            try sandbox.succeed(["delete", "Holiday", "h2"])

            let tail = try sandbox.succeed(["log", "tail"])
            #expect(tail.lines.count == 10)
            #expect(tail.lines.first?.hasPrefix("#5  ") == true, "\(tail)")
            #expect(tail.lines.last?.hasPrefix("#14  ") == true, "\(tail)")
            let deleted = try #require(tail.lines.last)
            #expect(deleted.contains("deleted") && deleted.contains("local") && deleted.contains("Holiday/h2") && deleted.contains("by \(Sandbox.author)"))
            let updated = tail.lines[8]
            #expect(updated.contains("updated") && updated.contains("Holiday/h1") && updated.contains(#"details="x""#), "\(updated)")

            let three = try sandbox.succeed(["log", "tail", "-n", "3"])
            #expect(three.lines.map { $0.prefix(4) } == ["#12 ", "#13 ", "#14 "])

            let json = try sandbox.succeed(["log", "tail", "-n", "20", "--json"])
            #expect(json.lines.count == 14)
            let events = try json.lines.map { try #require(try JSONParser.parse($0).objectValue) }
            #expect(events.map { $0["seq"] } == (1...14).map { .number(JSONNumber($0)) })
            #expect(events[12]["kind"] == "updated")
            #expect(events[12]["set"] == ["details": "x"])
            #expect(events[13]["kind"] == "deleted")
            #expect(events.allSatisfy { $0["origin"] == "local" && $0["entity"] == "Holiday" && $0["by"] == .string(Sandbox.author) })
            // Each line is the stored event.
            #expect(try EventCoding.decode(Array(json.lines[0].utf8)).recordID == "h1")

            #expect(try sandbox.succeed(["log", "tail", "-n", "0"]).stdout.isEmpty)
        }
    }

    @Test("log tail refuses bad arguments")
    func logTailUsage() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "name=X", "date=2026-01-01"])
            for arguments in [["log"], ["log", "head"], ["log", "tail", "-n", "x"], ["log", "tail", "-n", "-3"], ["log", "tail", "-n"],
                              ["log", "tail", "extra"], ["log", "tail", "--follow=yes"], ["log", "tail", "-n=2"]] {
                let result = try sandbox.run(arguments)
                #expect(result.status == Exit.usage, "\(arguments): \(result)")
            }
        }
    }

    @Test("rebuild-views replays the log; --verify checks it")
    func rebuildViews() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "--id", "a", "name=A", "date=2026-01-01"])
            try sandbox.succeed(["edit", "Holiday", "a", "name=B"])
            let verify = try sandbox.succeed(["rebuild-views", "--verify"])
            #expect(verify.stdout == "views match the log (2 events)\n")
            let rebuild = try sandbox.succeed(["rebuild-views"])
            #expect(rebuild.stdout == "rebuilt the views from 2 events\n")
            #expect(try sandbox.records("Holiday") == ["a": ["name": "B", "date": "2026-01-01"]])
            #expect(try sandbox.run(["rebuild-views", "now"]).status == Exit.usage)
        }
    }

    @Test("status reports counts as text and JSON")
    func status() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "--id", "a", "name=A", "date=2026-01-01"])
            try sandbox.succeed(["edit", "Holiday", "a", "name=B"])
            try sandbox.succeed(["add", "Birthday", "--id", "b", "name=Ada", "date=1815-12-10"])
            try sandbox.succeed(["add", "Birthday", "--id", "c", "name=Bob", "date=1990-01-01"])
            try sandbox.succeed(["delete", "Birthday", "c"])
            let status = try sandbox.status()
            #expect(status["events"] == 5)
            #expect(status["records"] == ["Holiday": 1, "Birthday": 1])
            #expect(status["pendingRecords"] == 2)
            #expect(status["unacknowledgedEvents"] == 3)
            #expect(status["store"] == .string(sandbox.store.path))

            let text = try sandbox.succeed(["status"])
            #expect(text.lines.contains { $0.hasPrefix("events") && $0.hasSuffix(" 5") }, "\(text)")
            #expect(text.lines.contains { $0.hasPrefix("Holiday") && $0.hasSuffix(" 1 record") }, "\(text)")
            #expect(text.lines.contains { $0.hasPrefix("to push") && $0.contains(" 2 records (3 local events ") }, "\(text)")
            #expect(text.lines.contains("last sync never"), "\(text)")

            try sandbox.succeed(["--store", sandbox.root.appendingPathComponent("one").path, "add", "Holiday", "name=A", "date=2026-01-01"])
            let one = try sandbox.succeed(["--store", sandbox.root.appendingPathComponent("one").path, "status"])
            #expect(one.lines.contains { $0.hasPrefix("to push") && $0.contains(" 1 record (1 local event not yet") }, "\(one)")
            #expect(one.lines.contains { $0.hasPrefix("Birthday") && $0.hasSuffix(" 0 records") }, "\(one)")
        }
    }

    @Test("after a first DAV sync that failed (so no remote is remembered), a plain sync names every form of remote, DAV's too")
    func noRemoteNamesEveryForm() throws {
        try withSandbox { sandbox in
            let failed = try sandbox.run(["sync", "--remote", "dav+http://127.0.0.1:1/"], environment: ["EVSYNC_RETRIES": "1"])
            #expect(failed.status == 69, "\(failed)")
            let plain = try sandbox.run(["sync"])
            #expect(plain.status == Exit.usage, "\(plain)")
            #expect(plain.stderr == "evsync: no remote: give --remote URL (a Kinto bucket URL https://…/buckets/<id>, a CalDAV/CardDAV server "
                + "dav+https://…, or a Parse Server parse+https://…), set EVSYNC_REMOTE, or set one with evsync remote URL\n", "\(plain)")
        }
    }

    @Test("a command that makes a store says where, once, on stderr; --json stdout stays clean; nothing else makes one")
    func newStoreIsAnnounced() throws {
        try withSandbox { sandbox in
            let created = "evsync: created a new store in \(sandbox.store.path)\n"
            // Bad input makes no store, and so says nothing of one.
            let typo = try sandbox.run(["add", "Holiday", "nmae=X", "date=2027-01-01"])
            #expect(typo.status == Exit.dataError && !typo.stderr.contains("created"), "\(typo)")
            #expect(!FileManager.default.fileExists(atPath: sandbox.store.path))
            // Reading commands never make one; nor does a sync that has no remote to go to.
            #expect(try sandbox.run(["list", "Holiday"]).status == Exit.noInput)
            let sync = try sandbox.run(["sync"])
            #expect(sync.status == Exit.usage && sync.stderr.hasPrefix("evsync: no remote"), "\(sync)")
            #expect(!FileManager.default.fileExists(atPath: sandbox.store.path))

            let json = try sandbox.run(["add", "Holiday", "--id", "a", "name=A", "date=2027-01-01", "--json"])
            #expect(json.status == Exit.ok && json.stderr == created, "\(json)")
            #expect(try json.json().objectValue?["id"] == "a", "stdout is only the JSON: \(json)")
            let again = try sandbox.succeed(["add", "Holiday", "--id", "b", "name=B", "date=2027-01-01"])
            #expect(again.stderr.isEmpty, "\(again)")

            // The path is absolute, whichever way the store was named: here the default ./.evsync.
            let relative = try sandbox.run(["import", "Holiday", "-"], stdin: Data(#"{"name":"C","date":"2027-01-01"}"#.utf8),
                                           environment: ["EVSYNC_STORE": nil])
            #expect(relative.stderr == "evsync: created a new store in \(sandbox.root.appendingPathComponent(".evsync").path)\n", "\(relative)")
            let remote = try sandbox.run(["--store", "other", "remote", "http://127.0.0.1:1/v1/buckets/b"])
            #expect(remote.stderr == "evsync: created a new store in \(sandbox.root.appendingPathComponent("other").path)\n", "\(remote)")
        }
    }

    @Test("--store and EVSYNC_STORE choose the store; the default is ./.evsync")
    func storeSelection() throws {
        try withSandbox { sandbox in
            let other = sandbox.root.appendingPathComponent("other").path
            try sandbox.succeed(["--store", other, "add", "Holiday", "--id", "g", "name=G", "date=2026-01-01"])
            try sandbox.succeed(["add", "Holiday", "--id", "o", "name=O", "date=2026-01-01", "--store", other])
            try sandbox.succeed(["--store=\(other)", "add", "Holiday", "--id", "p", "name=P", "date=2026-01-01"])
            #expect(try sandbox.records("Holiday", ["--store", other]).keys.sorted() == ["g", "o", "p"])
            #expect(!FileManager.default.fileExists(atPath: sandbox.store.path))
            #expect(try sandbox.run(["list", "Holiday"]).status == Exit.noInput, "EVSYNC_STORE still points at the sandbox store")

            try sandbox.succeed(["add", "Holiday", "--id", "d", "name=D", "date=2026-01-01"], environment: ["EVSYNC_STORE": nil])
            #expect(FileManager.default.fileExists(atPath: sandbox.root.appendingPathComponent(".evsync/data.mdb").path))
            let list = try sandbox.succeed(["list", "Holiday", "--json"], environment: ["EVSYNC_STORE": nil])
            #expect(try list.json().arrayValue?.compactMap { $0.objectValue?["id"] } == ["d"])
        }
    }

    static let commands = ["add", "edit", "delete", "show", "list", "import", "history", "log", "rebuild-views", "status"]

    @Test("--help on every command prints its usage and exits 0", arguments: commands)
    func help(command: String) throws {
        try withSandbox { sandbox in
            for arguments in [[command, "--help"], [command, "-h"], ["help", command]] + (command == "log" ? [["log", "tail", "--help"]] : []) {
                let result = try sandbox.run(arguments)
                #expect(result.status == Exit.ok, "\(arguments): \(result)")
                #expect(result.stdout.contains("Usage: evsync \(command)"), "\(arguments): \(result)")
            }
            #expect(!FileManager.default.fileExists(atPath: sandbox.store.path), "help touches no store")
        }
    }

    @Test("global help and version")
    func globalHelp() throws {
        try withSandbox { sandbox in
            for arguments in [["--help"], ["-h"], ["help"]] {
                let result = try sandbox.run(arguments)
                #expect(result.status == Exit.ok, "\(arguments)")
                #expect(result.stdout.contains("Usage: evsync"))
                for command in Self.commands { #expect(result.stdout.contains(command), "\(command) missing from the overview") }
            }
            let version = try sandbox.run(["--version"])
            #expect(version.status == Exit.ok)
            #expect(version.stdout.hasPrefix("evsync "))
            #expect(version.stdout.split(separator: " ").last?.trimmingCharacters(in: .newlines).split(separator: ".").count == 3)
        }
    }

    @Test("bad usage exits 64", arguments: [
        ["frobnicate"],
        ["--bogus", "list", "Holiday"],
        ["list", "Holiday", "--bogus"],
        ["list", "Holiday", "--json=yes"],
        ["add", "Holiday", "--unset", "name"],
        ["show", "Holiday", "x", "--as-of"],
        ["show", "Holiday", "x", "--as-of", "yesterday"],
        ["--store"],
        [],
        ["add"],
        ["add", "Holiday", "name"],
        ["add", "Holiday", "=x", "date=2026-01-01"],
    ])
    func usageErrors(arguments: [String]) throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "--id", "x", "name=X", "date=2026-01-01"])
            let result = try sandbox.run(arguments)
            #expect(result.status == Exit.usage, "\(result)")
            #expect(result.stderr.hasPrefix("evsync: "), "\(result)")
            #expect(try sandbox.eventCount() == 1)
        }
    }

    @Test("read commands on a missing store exit 66", arguments: [
        ["show", "Holiday", "x"],
        ["list", "Holiday"],
        ["edit", "Holiday", "x", "name=Y"],
        ["delete", "Holiday", "x"],
        ["history", "x"],
        ["log", "tail"],
        ["rebuild-views"],
        ["rebuild-views", "--verify"],
        ["status"],
    ])
    func missingStore(arguments: [String]) throws {
        try withSandbox { sandbox in
            let result = try sandbox.run(arguments)
            #expect(result.status == Exit.noInput, "\(result)")
            #expect(result.stderr.contains("no store"), "\(result)")
            #expect(!FileManager.default.fileExists(atPath: sandbox.store.path), "reading must not create the store")
        }
    }

    @Test("missing records and files exit 66")
    func missingThings() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "--id", "x", "name=X", "date=2026-01-01"])
            for arguments in [["show", "Holiday", "nope"], ["edit", "Holiday", "nope", "name=Y"], ["delete", "Holiday", "nope"],
                              ["show", "Birthday", "x"], ["history", "nope"],
                              ["import", "Holiday", sandbox.root.appendingPathComponent("missing.jsonl").path]] {
                let result = try sandbox.run(arguments)
                #expect(result.status == Exit.noInput, "\(arguments): \(result)")
                #expect(!result.stderr.isEmpty)
            }
            // As the text form (issue 14), still printing the empty array scripts read.
            let history = try sandbox.run(["history", "nope", "--json"])
            #expect(history.status == Exit.noInput && history.stdout == "[]\n", "\(history)")
            #expect(try sandbox.eventCount() == 1)
            let missingFile = try sandbox.run(["--store", sandbox.root.appendingPathComponent("fresh").path, "import", "Holiday", "/nonexistent/file.jsonl"])
            #expect(missingFile.status == Exit.noInput)
            #expect(!FileManager.default.fileExists(atPath: sandbox.root.appendingPathComponent("fresh").path))
        }
    }
}
