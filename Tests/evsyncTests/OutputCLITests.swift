import Foundation
import Testing
@testable import EventStore

/// Output for people and for scripts, beyond `list`: --json on the writing commands, the same exit
/// code in both modes, import's input forms and error positions, local times, wording.
@Suite("CLI output for people and scripts")
struct OutputCLITests {
    @Test("add, edit, delete, import and rebuild-views --json print one object each")
    func writingCommandsSpeakJSON() throws {
        try withSandbox { sandbox in
            let added = try sandbox.succeed(["add", "Holiday", "--id", "ny", "name=New Year", "date=2027-01-01", "--json"])
            #expect(try added.json() == ["entity": "Holiday", "id": "ny", "seq": 1,
                                         "record": ["id": "ny", "name": "New Year", "date": "2027-01-01"]])
            let edited = try sandbox.succeed(["edit", "holiday", "ny", "details=Fireworks", "--json"])
            #expect(try edited.json() == ["entity": "Holiday", "id": "ny", "seq": 2,
                                          "record": ["id": "ny", "name": "New Year", "date": "2027-01-01", "details": "Fireworks"]])
            let unchanged = try sandbox.succeed(["edit", "Holiday", "ny", "details=Fireworks", "--json"])
            #expect(try unchanged.json().objectValue?["seq"] == .null)
            #expect(unchanged.stderr.contains("no change"))
            let deleted = try sandbox.succeed(["delete", "Holiday", "ny", "--json"])
            #expect(try deleted.json() == ["entity": "Holiday", "id": "ny", "seq": 3, "record": nil])
            let imported = try sandbox.succeed(["import", "Holiday", "-", "--json"], stdin: Data(#"{"name":"A","date":"2027-01-01"}"#.utf8))
            #expect(try imported.json() == ["entity": "Holiday", "imported": 1])
            #expect(try sandbox.succeed(["rebuild-views", "--json"]).json() == ["events": 4])
            #expect(try sandbox.succeed(["rebuild-views", "--verify", "--json"]).json() == ["events": 4, "match": true, "differences": []])
            // The text forms are unchanged.
            #expect(try sandbox.succeed(["add", "Holiday", "--id", "x", "name=X", "date=2027-01-01"]).stdout == "x\n")
            #expect(try sandbox.succeed(["rebuild-views"]).stdout == "rebuilt the views from 5 events\n")
        }
    }

    @Test("history of an unknown id exits 66 with --json too, still printing []")
    func sameExitCodeInBothModes() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "--id", "ny", "name=New Year", "date=2027-01-01"])
            let text = try sandbox.run(["history", "nope"])
            let json = try sandbox.run(["history", "nope", "--json"])
            #expect(text.status == Exit.noInput && json.status == Exit.noInput, "\(text)\n\(json)")
            #expect(json.stdout == "[]\n")
            #expect(json.stderr == text.stderr)
        }
    }

    @Test("import takes what list --json prints, and a pretty-printed array")
    func importsAnArray() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "--id", "a", "name=A", "date=2027-01-01", #"observedBy:=["US"]"#])
            try sandbox.succeed(["add", "Holiday", "--id", "b", "name=B b", "date=2027-01-02"])
            let listed = try sandbox.succeed(["list", "Holiday", "--json"]).stdout
            let copy = sandbox.root.appendingPathComponent("copy").path
            #expect(try sandbox.succeed(["--store", copy, "import", "Holiday", sandbox.write("all.json", listed)]).stdout == "imported 2 Holiday records\n")
            #expect(try sandbox.succeed(["--store", copy, "list", "Holiday", "--json"]).stdout == listed)
            let pretty = "\u{FEFF}\n  [\n  {\"name\": \"C\",\n   \"date\": \"2027-01-03\"}\n]\n"
            #expect(try sandbox.succeed(["--store", copy, "import", "Holiday", "-"], stdin: Data(pretty.utf8)).stdout == "imported 1 Holiday record\n")
            #expect(try sandbox.run(["--store", copy, "import", "Holiday", "-"], stdin: Data("[]".utf8)).stdout == "imported 0 Holiday records\n")
            // Brackets, commas and quotes inside strings; tokens spread over lines; each element a record.
            let tricky = #"[ {"id": "t1", "name": "a ] b, \"c\" { [", "date":"2027-01-04"},"# + "\n\t"
                + #"{"id":"t2","name":"\\","observedBy":[ "X" ,"#  + "\r\n" + #" "Y" ],"date":"2027-01-05"} ]"#
            #expect(try sandbox.succeed(["--store", copy, "import", "Holiday", "-"], stdin: Data(tricky.utf8)).stdout == "imported 2 Holiday records\n")
            let records = try sandbox.succeed(["--store", copy, "list", "Holiday", "--json"]).json().arrayValue ?? []
            let byID = Dictionary(uniqueKeysWithValues: records.compactMap { $0.objectValue }.map { ($0["id"]?.stringValue ?? "", $0) })
            #expect(byID["t1"]?["name"] == #"a ] b, "c" { ["#)
            #expect(byID["t2"]?["name"] == "\\" && byID["t2"]?["observedBy"] == ["X", "Y"], "\(records)")
        }
    }

    @Test("import errors say FILE:LINE:, or FILE: element N: for an array; nothing is written")
    func importErrorsNameTheirPlace() throws {
        try withSandbox { sandbox in
            let lines = try sandbox.write("bad.jsonl", "{\"name\":\"A\",\"date\":\"2027-01-01\"}\n\n{\"name\":\"B\"}\n")
            let fromFile = try sandbox.run(["import", "Holiday", lines])
            #expect(fromFile.status == Exit.dataError)
            // The first import made the store (and said so), then refused the file.
            #expect(fromFile.stderr.split(separator: "\n").last?.hasPrefix("evsync: \(lines):3: Holiday") == true, "\(fromFile)")
            let fromStdin = try sandbox.run(["import", "Holiday", "-"], pipingStdin: Data("{}\n".utf8))
            #expect(fromStdin.stderr.hasPrefix("evsync: <stdin>:1: "), "\(fromStdin)")
            let array = try sandbox.run(["import", "Holiday", "-"], stdin: Data(#"[{"name":"A","date":"2027-01-01"}, 7]"#.utf8))
            #expect(array.status == Exit.dataError)
            #expect(array.stderr.hasPrefix("evsync: <stdin>: element 2: expected a JSON object"), "\(array)")
            let broken = try sandbox.run(["import", "Holiday", "-"], stdin: Data("[{},".utf8))
            #expect(broken.status == Exit.dataError)
            #expect(broken.stderr.hasPrefix("evsync: <stdin>: not a JSON array: "), "\(broken)")
            for (text, message) in [
                (#"[{"name":"A","date":"2027-01-01"} {"name":"B"}]"#, "not a JSON array: expected ',' or ']' after element 1"),
                ("[] x", "not a JSON array: text after the array"),
                ("[,]", "not a JSON array: expected an element after '['"),
                (#"[{"name":"A","date":"2027-01-01"},]"#, "not a JSON array: expected an element after ','"),
                // A line break inside a string is invalid JSON, not something to join lines over.
                ("[{\"name\":\"A\",\"date\":\"2027-01-01\"},\n{\"name\":\"B\nC\",\"date\":\"2027-01-02\"}]",
                 "element 2: a control character in a string (it must be escaped)"),
                ("[{\"name\":\"A\\\n\",\"date\":\"2027-01-02\"}]", "element 1: a control character in a string (it must be escaped)"),
                (#"[{"name":"A","date":"2027-01-01"},{"name":"B","date":"2027-01-02","name":"C"}]"#, "element 2: invalid JSON"),
            ] {
                let result = try sandbox.run(["import", "Holiday", "-"], stdin: Data(text.utf8))
                #expect(result.status == Exit.dataError && result.stderr.hasPrefix("evsync: <stdin>: \(message)"), "\(text): \(result)")
            }
            #expect(try sandbox.run(["status"]).status == Exit.ok)
            #expect(try sandbox.eventCount() == 0)
        }
    }

    @Test("times for people are local (TZ), --json stays UTC; --as-of reads a time without an offset as local, and HH:MM")
    func localTimes() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "--id", "ny", "name=New Year", "date=2027-01-01"])
            let tokyo: [String: String?] = ["TZ": "Asia/Tokyo"]
            let event = try #require(try sandbox.succeed(["log", "tail", "-n1", "--json"], environment: tokyo).json().objectValue)
            let utc = try #require(event["at"]?.stringValue)
            #expect(utc.hasSuffix("Z"))
            let milliseconds = try #require(Timestamp.parse(utc))
            let tail = try sandbox.succeed(["log", "tail", "-n1"], environment: tokyo).stdout
            let local = try #require(tail.split(separator: " ").dropFirst().first.map(String.init))
            #expect(local.hasSuffix("+09:00") && Timestamp.parse(local) == milliseconds, "\(tail)")
            #expect(try sandbox.succeed(["history", "ny"], environment: tokyo).stdout.contains(local))
            for command in [["blame", "Holiday", "ny"], ["why", "Holiday", "ny"]] {
                let text = try sandbox.succeed(command, environment: tokyo).stdout
                #expect(text.contains(local) && !text.contains(utc), "\(command): \(text)")
            }
            #expect(try sandbox.succeed(["log", "tail", "-n1"], environment: ["TZ": "UTC"]).stdout.contains(utc), "UTC is written as the log writes it")

            // The same moment, written in Tokyo's time without an offset, a second after the event and a second before it.
            func tokyoClock(_ milliseconds: Int64) -> String { String(Timestamp.iso8601(milliseconds: milliseconds + 9 * 3_600_000).dropLast(5)) }
            let after = try sandbox.succeed(["show", "Holiday", "ny", "--json", "--as-of", tokyoClock(milliseconds + 1000)], environment: tokyo)
            #expect(try after.json().objectValue?["name"] == "New Year")
            let before = try sandbox.run(["show", "Holiday", "ny", "--as-of", tokyoClock(milliseconds - 1000)], environment: tokyo)
            #expect(before.status == Exit.noInput, "\(before)")
            // Midnight today, local: before the event (made just now).
            let midnight = try sandbox.succeed(["list", "Holiday", "--json", "--as-of", "00:00"], environment: tokyo)
            #expect(midnight.stdout == "[]\n" || Timestamp.now() - milliseconds > 60_000, "\(midnight)")
            #expect(try sandbox.run(["list", "Holiday", "--as-of", "24:00"]).status == Exit.usage)
            #expect(try sandbox.run(["list", "Holiday", "--as-of", "2027-02-30T10:00"]).status == Exit.usage)
        }
    }

    @Test("log tail quotes an author with spaces; values are quoted JSON")
    func logTailQuotes() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "--id", "ny", "name=New Year", "date=2027-01-01"], environment: ["EVSYNC_AUTHOR": "Jane Doe"])
            let line = try sandbox.succeed(["log", "tail"]).stdout
            #expect(line.contains(#"by "Jane Doe"  "#) && line.contains(#"name="New Year""#), "\(line)")
            try sandbox.succeed(["add", "Holiday", "--id", "x", "name=X", "date=2027-01-01"])
            #expect(try sandbox.succeed(["log", "tail", "-n1"]).stdout.contains("by \(Sandbox.author)  "), "no quotes without spaces")
        }
    }

    @Test("wording: did you mean, the JSON value hint, how to make a store, -n1, --version after a command")
    func wording() throws {
        try withSandbox { sandbox in
            let typo = try sandbox.run(["lsit", "Holiday"])
            #expect(typo.status == Exit.usage && typo.stderr.contains("unknown command 'lsit' (did you mean 'list'?)"), "\(typo)")
            let option = try sandbox.run(["show", "Holiday", "x", "--jsno"])
            #expect(option.status == Exit.usage && option.stderr.contains("(did you mean '--json'?)"), "\(option)")
            let missing = try sandbox.run(["list", "Holiday"])
            #expect(missing.stderr.contains("`evsync add` or `evsync import` creates one"), "\(missing)")

            let hint = try sandbox.run(["add", "Holiday", "name=X", "date=2027-01-01", "observedBy=US"])
            #expect(hint.status == Exit.dataError)
            #expect(hint.stderr.hasSuffix("(use observedBy:='[…]' for JSON values)\n"), "\(hint)")
            let literal = try sandbox.run(["add", "Holiday", "name=X", "date=2027-01-01", #"observedBy=["US"]"#])
            #expect(literal.stderr.hasSuffix(#"(use observedBy:='["US"]' for JSON values)"# + "\n"), "\(literal)")
            let plain = try sandbox.run(["add", "Holiday", "name=", "date=2027-01-01"])
            #expect(plain.status == Exit.dataError && !plain.stderr.contains("JSON values"), "no hint for a string field: \(plain)")

            for index in 1...3 { try sandbox.succeed(["add", "Holiday", "--id", "h\(index)", "name=N", "date=2027-01-01"]) }
            #expect(try sandbox.succeed(["log", "tail", "-n1"]).lines.count == 1)
            #expect(try sandbox.succeed(["log", "tail", "-n2", "--json"]).lines.count == 2)
            for words in [["list", "Holiday", "--version"], ["log", "tail", "--version"], ["--store", "/nonexistent", "show", "--version"]] {
                let version = try sandbox.run(words)
                #expect(version.status == Exit.ok && version.stdout.hasPrefix("evsync "), "\(words): \(version)")
            }
            #expect(try sandbox.run(["add", "Holiday", "--", "--version"]).status != Exit.ok, "after --, a word is not an option")
        }
    }

    @Test("import shows progress on a terminal, and nothing through a pipe")
    func importProgress() throws {
        try withSandbox { sandbox in
            var lines = ""
            for index in 0..<20_000 { lines += #"{"name":"Holiday number \#(index) with a longer name","date":"2027-01-01"}"# + "\n" }
            let file = try sandbox.write("big.jsonl", lines)
            let onTerminal = try sandbox.launchShell("script -q -e -c '\"$EVSYNC_BINARY_PATH\" import Holiday big.jsonl' /dev/null").wait()
            #expect(onTerminal.status == Exit.ok, "\(onTerminal)")
            #expect(onTerminal.stdout.contains("importing big.jsonl: 0% (0 of 1 MB)") && onTerminal.stdout.contains("imported 20000 Holiday records"), "\(onTerminal)")
            let piped = try sandbox.run(["--store", sandbox.root.appendingPathComponent("other").path, "import", "Holiday", file])
            #expect(piped.status == Exit.ok && piped.stderr == "evsync: created a new store in \(sandbox.root.appendingPathComponent("other").path)\n",
                    "no progress: \(piped)")
        }
    }
}
