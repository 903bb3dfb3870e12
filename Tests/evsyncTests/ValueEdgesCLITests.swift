import Foundation
import Testing
@testable import EventStore
import TestSupport

/// The edges of what a value may be, through the binary: exact numbers,
/// keys given twice, bytes that are not UTF-8, the deepest nesting, strings
/// a terminal would act on, and the ranges of `--watch` and `--remote`.
@Suite("CLI value edges")
struct ValueEdgesCLITests {
    /// An entity whose fields take any JSON value.
    static let thing = #"{"title": "Thing", "properties": {"name": {"type": "string"}, "v": {}, "w": {}}}"#

    static func withThings(_ body: (Sandbox, _ run: ([String]) throws -> CLIResult) throws -> Void) throws {
        try withSandbox { sandbox in
            let schemas = sandbox.root.appendingPathComponent("schemas").path
            try sandbox.write("schemas/thing.schema.json", Self.thing)
            try body(sandbox) { arguments in try sandbox.run(["--schemas", schemas] + arguments) }
        }
    }

    static let literals = [
        "9007199254740993", "12345678901234567891", "1733011200123456", "1.0", "-0.0", "1e3", "1E+3", "100.00",
        "3.14159265358979323846264338327950288", "1.2345678901234567891e19", "123456789012345678901234567890123456789",
    ]

    @Test("numbers keep their literal from add, edit and import to show, list, history and log tail")
    func exactNumbers() throws {
        try Self.withThings { sandbox, run in
            let array = "[" + Self.literals.joined(separator: ",") + "]"
            #expect(try run(["add", "Thing", "--id", "a", "v:=\(array)", "w:=9007199254740993"]).status == Exit.ok)
            #expect(try run(["edit", "Thing", "a", "name=renamed", "w:=12345678901234567891"]).status == Exit.ok)
            let file = try sandbox.write("things.jsonl", #"{"id":"i","v":\#(array),"w":1.0}"# + "\n")
            #expect(try run(["import", "Thing", file]).status == Exit.ok)
            for (command, wanted) in [
                (["show", "Thing", "a", "--json"], [array, "12345678901234567891"]),
                (["show", "Thing", "i", "--json"], [array, #""w":1.0"#]),
                (["list", "Thing", "--json"], [array, "12345678901234567891", #""w":1.0"#]),
                (["history", "a", "--json"], [array, "9007199254740993", "12345678901234567891"]),
                (["log", "tail", "--json"], [array, "9007199254740993", "12345678901234567891", #""w":1.0"#]),
                (["show", "Thing", "a"], [array]),
                (["log", "tail"], ["w=9007199254740993", "w=12345678901234567891", "w=1.0"]),
            ] {
                let result = try run(command)
                #expect(result.status == Exit.ok, "\(command): \(result)")
                for text in wanted { #expect(result.stdout.contains(text), "\(command) shows \(text): \(result)") }
            }
            // Setting the same value again, as another literal of the same kind, is no change.
            let same = try run(["edit", "Thing", "i", "w:=1.00"])
            #expect(same.status == Exit.ok && same.stderr.contains("no change"), "\(same)")
            // Of another kind, it is one: 1 is an integer, 1.0 is not.
            #expect(try run(["edit", "Thing", "i", "w:=1"]).status == Exit.ok)
            #expect(try run(["show", "Thing", "i", "--json"]).stdout.contains(#""w":1}"#))
            #expect(try sandbox.eventCount() == 4)
        }
    }

    @Test("a key given twice is refused with 65, in field:=json and in import lines")
    func duplicateKeys() throws {
        try Self.withThings { sandbox, run in
            #expect(try run(["add", "Thing", "--id", "a", "name=A"]).status == Exit.ok)
            let file = try sandbox.write("dup.jsonl", "{\"name\":\"ok\"}\n{\"name\":\"x\",\"name\":\"y\"}\n")
            for arguments in [
                ["add", "Thing", "v:={\"k\":1,\"k\":2}"],
                ["edit", "Thing", "a", "v:=[{\"k\":1,\"j\":{\"z\":0,\"z\":0}}]"],
                ["import", "Thing", file],
            ] {
                let result = try run(arguments)
                #expect(result.status == Exit.dataError, "\(arguments): \(result)")
                #expect(result.stderr.contains("duplicate key") && result.stderr.split(separator: "\n").count == 1, "\(result)")
            }
            #expect(try run(["import", "Thing", file]).stderr.contains("\(file):2: "))
            #expect(try sandbox.eventCount() == 1)
        }
    }

    @Test("an argument that is not UTF-8 is refused with 65, not repaired into U+FFFD")
    func invalidUTF8Arguments() throws {
        try withSandbox { sandbox in
            // Only a shell passes raw bytes: Foundation's Process takes Strings.
            for arguments in [#""name=bad $(printf '\377')" date=2026-01-01"#, #""name=$(printf '\300\257')" date=2026-01-01"#,
                              #"name=x "date=$(printf '2026-01-01\355\240\200')""#] {
                let script = #""$EVSYNC_BINARY_PATH" add Holiday "# + arguments
                let result = try sandbox.launchShell(script).wait()
                #expect(result.status == Exit.dataError, "\(arguments): \(result)")
                #expect(result.stderr.contains("not valid UTF-8"), "\(result)")
            }
            #expect(!FileManager.default.fileExists(atPath: sandbox.store.appendingPathComponent("data.mdb").path), "nothing written")
        }
    }

    static func nested(_ levels: Int) -> String {
        String(repeating: "[", count: levels) + "1" + String(repeating: "]", count: levels)
    }

    @Test("a value nested to the limit goes everywhere; one level more is refused at add, edit and import")
    func nestingLimit() throws {
        try Self.withThings { sandbox, run in
            let limit = JSONValue.maxFieldNesting
            #expect(try run(["add", "Thing", "--id", "deep", "v:=\(Self.nested(limit))"]).status == Exit.ok)
            let file = try sandbox.write("deep.jsonl", #"{"id":"deep2","v":{"k":\#(Self.nested(limit - 1))}}"# + "\n")
            #expect(try run(["import", "Thing", file]).status == Exit.ok)
            for command in [["show", "Thing", "deep"], ["show", "Thing", "deep", "--json"], ["list", "Thing"], ["list", "Thing", "--json"],
                            ["history", "deep"], ["history", "deep2", "--json"], ["log", "tail"], ["log", "tail", "--json"],
                            ["rebuild-views", "--verify"], ["rebuild-views"], ["status"]] {
                let result = try run(command)
                #expect(result.status == Exit.ok, "\(command): \(result)")
            }
            let shown = try #require(try run(["show", "Thing", "deep", "--json"]).json().objectValue?["v"])
            #expect(JSONWriter.string(shown) == Self.nested(limit))

            let before = try sandbox.eventCount()
            let tooDeep = try sandbox.write("deeper.jsonl", #"{"v":{"k":\#(Self.nested(limit))}}"# + "\n")
            for arguments in [["add", "Thing", "v:=\(Self.nested(limit + 1))"], ["add", "Thing", "v:=\(Self.nested(50_000))"],
                              ["edit", "Thing", "deep", "w:={\"a\":\(Self.nested(limit))}"], ["import", "Thing", tooDeep]] {
                let result = try run(arguments)
                #expect(result.status == Exit.dataError, "\(arguments.prefix(2)): \(result)")
                #expect(result.stderr.contains("\(limit)") && result.stderr.split(separator: "\n").count == 1, "\(result)")
            }
            #expect(try sandbox.eventCount() == before)
        }
    }

    static let hostile = "Evil\u{1B}]0;pwned\u{07}\r\u{9B}2J\u{202E}gnp.exe\u{7F}"

    @Test("strings a terminal would act on are escaped in human output, exact in --json")
    func safePrinting() throws {
        try withSandbox { sandbox in
            let id = try sandbox.succeed(["add", "Holiday", "name=\(Self.hostile)", "date=2026-01-01"]).stdout
                .trimmingCharacters(in: .newlines)
            try sandbox.succeed(["edit", "Holiday", id, "details=a b\nc \u{1B}[31m"])
            let escaped = #"Evil\u001b]0;pwned\u0007\r\u009b2J\u202egnp.exe\u007f"#
            for command in [["list", "Holiday"], ["show", "Holiday", id], ["history", id], ["log", "tail"]] {
                let result = try sandbox.succeed(command)
                let unsafe = result.stdout.unicodeScalars.filter {
                    ($0.value < 0x20 && $0 != "\n") || (0x7F...0x9F).contains($0.value) || $0 == "\u{202E}"
                }
                #expect(unsafe.isEmpty, "\(command) prints \(unsafe.map { String($0.value, radix: 16) })")
                // Tables and log lines shorten long values.
                #expect(result.stdout.contains(command[0] == "list" || command[0] == "log" ? String(escaped.prefix(25)) : escaped),
                        "\(command): \(result)")
                #expect(result.stdout.contains(#"a b\nc \u001b[31m"#), "\(command): \(result)")
            }
            // log tail quotes string values, so a value with spaces reads as one.
            #expect(try sandbox.succeed(["log", "tail"]).stdout.contains(#"details="a b\nc \u001b[31m""#))
            for command in [["list", "Holiday", "--json"], ["show", "Holiday", id, "--json"]] {
                let json = try sandbox.succeed(command).json()
                let record = try #require(json.arrayValue?.first ?? json)
                #expect(record.objectValue?["name"] == .string(Self.hostile), "\(command)")
            }
            let tail = try sandbox.succeed(["log", "tail", "--json", "-n", "2"])
            #expect(try JSONParser.parse(try #require(tail.lines.first)).objectValue?["set"]?.objectValue?["name"] == .string(Self.hostile))
            // Error messages quote what they refuse, safely and on one line.
            let refused = try sandbox.run(["show", "Holiday", "x\u{1B}[2J\ny"])
            #expect(refused.status == Exit.dataError)
            #expect(refused.stderr.contains(#"x\u001b[2J\ny"#) && refused.stderr.split(separator: "\n").count == 1, "\(refused)")
        }
    }

    @Test("--watch takes 0.1 s to a day; anything else is a usage error", arguments: ["inf", "-inf", "nan", "1e-9", "0", "0.09", "86401", "1e300", "x"])
    func watchRange(value: String) throws {
        try withSandbox { sandbox in
            let result = try sandbox.run(["sync", "--remote", "http://127.0.0.1:9/v1/buckets/b", "--watch", value])
            #expect(result.status == Exit.usage, "\(result)")
            #expect(result.stderr.contains("--watch takes a number of seconds from 0.1 to 86400"), "\(result)")
        }
    }

    @Test("a remote URL too long to key a pull cursor is a usage error, before anything is sent")
    func longRemote() throws {
        try withSandbox { sandbox in
            let url = "http://127.0.0.1:9/v1/buckets/" + String(repeating: "b", count: 500)
            let result = try sandbox.run(["sync", "--remote", url])
            #expect(result.status == Exit.usage, "\(result)")
            #expect(result.stderr.contains("too long") && result.stderr.split(separator: "\n").count == 1, "\(result)")
        }
    }
}
