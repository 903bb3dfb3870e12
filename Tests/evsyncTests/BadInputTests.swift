import Foundation
import Testing
@testable import EventStore
import TestSupport

/// Bad input of every kind is refused with exit 65 and leaves the log exactly as it was.
@Suite("CLI bad input")
struct BadInputTests {
    /// A store with three events: Holiday `h`, Birthday `b`, and an edit of `h`.
    /// Written through the library, which is quicker than three processes;
    /// the `Store` is closed again before any binary runs.
    static func seed(_ sandbox: Sandbox) throws {
        let store = try Store(directory: sandbox.store.path, create: true)
        try store.add("Holiday", id: "h", fields: ["name": "Christmas", "date": "2026-12-25"])
        try store.add("Birthday", id: "b", fields: ["name": "Ada", "date": "1815-12-10"])
        try store.edit("Holiday", id: "h", set: ["details": "Presents"])
    }

    static let holiday = ["add", "Holiday", "name=X", "date=2026-01-01"]

    @Test("refused with 65, nothing written", arguments: [
        // Invalid JSON in field:=
        holiday + ["details:={bad"],
        holiday + ["observedBy:=[\"FR\""],
        holiday + ["details:="],
        holiday + ["details:='single'"],
        // Schema violations
        ["add", "Holiday", "name=X", "date=2026-02-30"],
        ["add", "Holiday", "name=X", "date=2026-1-1"],
        ["add", "Holiday", "name=X", "date=tomorrow"],
        ["add", "Holiday", "name:=42", "date=2026-01-01"],
        ["add", "Holiday", "name=", "date=2026-01-01"],
        holiday + ["observedBy=FR"],
        holiday + ["observedBy:=[1,2]"],
        holiday + ["wikipediaLink=not a url"],
        holiday + ["wikipediaLink=wiki/Christmas"],
        holiday + ["image=***not base64***"],
        ["add", "Holiday", "name=X"],
        ["add", "Holiday", "date=2026-01-01"],
        ["add", "Birthday", "name=X", "date=2026-01-01", "facebook:=null"],
        // Unknown field and entity
        holiday + ["colour=red"],
        holiday + ["giftIdeas=socks"],
        ["add", "Unicorn", "name=X"],
        ["add", "Holidays", "name=X", "date=2026-01-01"],
        // Bad ids
        holiday + ["--id", "a/b"],
        holiday + ["--id", "../x"],
        holiday + ["--id", ""],
        holiday + ["--id=-x"],
        holiday + ["--id", "white space"],
        holiday + ["--id", String(repeating: "x", count: 129)],
        // Existing id
        holiday + ["--id", "h"],
        // Edits
        ["edit", "Holiday", "h", "date=2026-13-01"],
        ["edit", "Holiday", "h", "name:={"],
        ["edit", "Holiday", "h", "colour=red"],
        ["edit", "Holiday", "h", "--unset", "name"],
        ["edit", "Holiday", "h", "--unset", "colour"],
        ["edit", "Holiday", "h", "details=x", "--unset", "details"],
        ["edit", "Holiday", "a/b", "name=Y"],
        ["edit", "Unicorn", "h", "name=Y"],
        // Other commands with bad ids or entities
        ["delete", "Holiday", "../h"],
        ["delete", "Unicorn", "h"],
        ["show", "Holiday", "a/b"],
        ["show", "Unicorn", "h"],
        ["list", "Unicorn"],
        ["history", "a/b"],
        ["import", "Unicorn", "-"],
    ])
    func refused(arguments: [String]) throws {
        try withSandbox { sandbox in
            try Self.seed(sandbox)
            let before = try Self.snapshot(sandbox)
            let result = try sandbox.run(arguments, stdin: Data(#"{"name":"X","date":"2026-01-01"}"#.utf8))
            #expect(result.status == Exit.dataError, "\(result)")
            #expect(result.stderr.hasPrefix("evsync: ") && result.stderr.hasSuffix("\n"), "\(result)")
            #expect(result.stderr.split(separator: "\n").count == 1, "one line on stderr: \(result)")
            #expect(result.stdout.isEmpty, "\(result)")
            #expect(try Self.snapshot(sandbox) == before)
        }
    }

    /// `status --json` (events, records, pending) and every record of both entities.
    static func snapshot(_ sandbox: Sandbox) throws -> [String] {
        let status = try sandbox.status()
        #expect(status["events"]?.int64Value ?? 0 >= 3)
        let store = try Store(directory: sandbox.store.path)
        return [JSONWriter.string(.object(status))] + (try ["Holiday", "Birthday"].map { entity in
            JSONWriter.string(.array(try store.records(entity).map { .object($0.json) }))
        })
    }

    @Test("error messages say what is wrong")
    func messages() throws {
        try withSandbox { sandbox in
            try Self.seed(sandbox)
            let cases: [([String], String)] = [
                (Self.holiday + ["colour=red"], "no field 'colour'"),
                (["add", "Unicorn", "name=X"], "unknown entity 'Unicorn'"),
                (Self.holiday + ["--id", "a/b"], "invalid record id 'a/b'"),
                (Self.holiday + ["--id", "h"], "'h' already exists"),
                (["add", "Holiday", "name=X", "date=2026-02-30"], "Holiday.date"),
                (["add", "Holiday", "name=X"], "required field 'date'"),
                (Self.holiday + ["details:={bad"], "field 'details'"),
                (["add", "Holiday", "name=", "date=2026-01-01"], "Holiday.name must have at least 1 character\n"),
            ]
            for (arguments, message) in cases {
                let result = try sandbox.run(arguments)
                #expect(result.status == Exit.dataError)
                #expect(result.stderr.contains(message), "\(arguments): \(result)")
            }
        }
    }

    @Test("a mistyped field, command or option gets 'did you mean', before any other complaint, with the usual exit code")
    func didYouMean() throws {
        try withSandbox { sandbox in
            try Self.seed(sandbox)
            let cases: [([String], Int32, String)] = [
                // The typo is why `name` is missing: it is named first.
                (["add", "Holiday", "nmae=X", "date=2027-01-01"], Exit.dataError, "evsync: Holiday has no field 'nmae' (did you mean 'name'?)\n"),
                (["add", "Holiday", "date=2027-01-01", "Name=X"], Exit.dataError, "evsync: Holiday has no field 'Name' (did you mean 'name'?)\n"),
                (["edit", "Holiday", "h", "detials=x"], Exit.dataError, "evsync: Holiday has no field 'detials' (did you mean 'details'?)\n"),
                (["edit", "Holiday", "h", "--unset", "imgae"], Exit.dataError, "evsync: Holiday has no field 'imgae' (did you mean 'image'?)\n"),
                // Nothing close: the fields there are.
                (Self.holiday + ["colour=red"], Exit.dataError,
                 "evsync: Holiday has no field 'colour' (fields: name, date, details, wikipediaLink, observedBy, image)\n"),
                // Entity names, and fields in --where, --fields and --sort: exit 65, as a field anywhere.
                (["list", "Holidays"], Exit.dataError, "evsync: unknown entity 'Holidays' (did you mean 'Holiday'?) (known: Birthday, Holiday)\n"),
                (["add", "holidy", "name=X"], Exit.dataError, "evsync: unknown entity 'holidy' (did you mean 'Holiday'?) (known: Birthday, Holiday)\n"),
                (["list", "Holiday", "--where", "nmae=X"], Exit.dataError,
                 "evsync: --where: Holiday has no field 'nmae' (did you mean 'name'?) (fields: id, name, date, details, wikipediaLink, observedBy, image)\n"),
                (["list", "Holiday", "--fields", "id,dat"], Exit.dataError,
                 "evsync: --fields: Holiday has no field 'dat' (did you mean 'date'?) (fields: id, name, date, details, wikipediaLink, observedBy, image)\n"),
                (["list", "Holiday", "--sort", "-nmae"], Exit.dataError,
                 "evsync: --sort: Holiday has no field 'nmae' (did you mean 'name'?) (fields: id, name, date, details, wikipediaLink, observedBy, image)\n"),
                (["rm", "Holiday", "h"], Exit.usage, "evsync: unknown command 'rm' (did you mean 'delete'?) (see evsync --help)\n"),
                (["ls", "Holiday"], Exit.usage, "evsync: unknown command 'ls' (did you mean 'list'?) (see evsync --help)\n"),
                (["stauts"], Exit.usage, "evsync: unknown command 'stauts' (did you mean 'status'?) (see evsync --help)\n"),
                (["--hlep"], Exit.usage, "evsync: unknown option --hlep (did you mean '--help'?)\n"),
                (["--stroe", "x", "status"], Exit.usage, "evsync: unknown option --stroe (did you mean '--store'?)\n"),
                (["list", "Holiday", "--hlep"], Exit.usage, "evsync: unknown option --hlep (did you mean '--help'?)\n"),
                (["status", "--josn"], Exit.usage, "evsync: unknown option --josn (did you mean '--json'?)\n"),
            ]
            for (arguments, status, message) in cases {
                let result = try sandbox.run(arguments)
                #expect(result.status == status && result.stderr == message, "\(arguments): \(result)")
            }
            #expect(try sandbox.eventCount() == 3, "nothing written")
        }
    }

    @Test("an import with one bad line among many writes nothing and names the line")
    func importBadLine() throws {
        try withSandbox { sandbox in
            try Self.seed(sandbox)
            let before = try Self.snapshot(sandbox)
            var lines = (1...600).map { #"{"id":"imp\#($0)","name":"Imported \#($0)","date":"2026-03-01"}"# }
            for (badLine, text) in [
                (300, #"{"id":"imp300","name":"Bad","date":"2026-02-30"}"#),
                (301, #"{"id":"imp301","name":"Bad","date":"2026-03-01""#),
                (599, #"{"id":"imp599","name":"Bad","date":"2026-03-01","colour":"red"}"#),
                (2, #"{"id":"../imp2","name":"Bad","date":"2026-03-01"}"#),
                (450, #"["not","an","object"]"#),
                (451, #"{"id":"h","name":"Exists","date":"2026-03-01"}"#),
            ] {
                var bad = lines
                bad[badLine - 1] = text
                let file = try sandbox.write("bad-\(badLine).jsonl", bad.joined(separator: "\n") + "\n")
                let result = try sandbox.run(["import", "Holiday", file])
                #expect(result.status == Exit.dataError, "line \(badLine): \(result)")
                #expect(result.stderr.contains(":\(badLine): "), "line \(badLine): \(result)")
                #expect(result.stdout.isEmpty)
                #expect(try Self.snapshot(sandbox) == before, "line \(badLine)")
                // The same through standard input, a file or a pipe (which is spooled first).
                let stdin = try sandbox.run(["import", "Holiday", "-"], stdin: Data((bad.joined(separator: "\n")).utf8))
                #expect(stdin.status == Exit.dataError)
                #expect(stdin.stderr.contains(":\(badLine): "), "\(stdin)")
                let piped = try sandbox.run(["import", "Holiday", "-"], pipingStdin: Data((bad.joined(separator: "\n")).utf8))
                #expect(piped.status == Exit.dataError)
                #expect(piped.stderr.contains(":\(badLine): "), "\(piped)")
            }
            #expect(try Self.snapshot(sandbox) == before)

            // Blank lines count when naming the line.
            lines.insert("", at: 0)
            lines.insert("   ", at: 5)
            lines[100] = #"{"name":"Bad"}"#
            let file = try sandbox.write("blank.jsonl", lines.joined(separator: "\n"))
            let result = try sandbox.run(["import", "Holiday", file])
            #expect(result.status == Exit.dataError)
            #expect(result.stderr.contains(":101: "), "\(result)")

            // Repaired, the file imports whole.
            lines[100] = #"{"name":"Fixed","date":"2026-03-02"}"#
            let good = try sandbox.write("good.jsonl", lines.joined(separator: "\n"))
            #expect(try sandbox.succeed(["import", "Holiday", good]).stdout == "imported 600 Holiday records\n")
            #expect(try sandbox.eventCount() == 603)
        }
    }

    @Test("an import with the same id twice writes nothing")
    func importDuplicateIDs() throws {
        try withSandbox { sandbox in
            try Self.seed(sandbox)
            let before = try Self.snapshot(sandbox)
            let lines = [
                #"{"id":"d1","name":"One","date":"2026-04-01"}"#,
                #"{"id":"d2","name":"Two","date":"2026-04-02"}"#,
                #"{"id":"d3","name":"Three","date":"2026-04-03"}"#,
                #"{"id":"d2","name":"Two again","date":"2026-04-04"}"#,
                #"{"id":"d4","name":"Four","date":"2026-04-05"}"#,
            ]
            let file = try sandbox.write("dup.jsonl", lines.joined(separator: "\n"))
            let result = try sandbox.run(["import", "Holiday", file])
            #expect(result.status == Exit.dataError, "\(result)")
            #expect(result.stderr.contains(":4: ") && result.stderr.contains("d2"), "\(result)")
            #expect(try Self.snapshot(sandbox) == before)
            // The same id in another entity is a different record.
            let birthdays = try sandbox.write("b.jsonl", #"{"id":"h","name":"Holly","date":"2000-01-01"}"#)
            try sandbox.succeed(["import", "Birthday", birthdays])
            #expect(try sandbox.records("Birthday")["h"]?["name"] == "Holly")
        }
    }
}
