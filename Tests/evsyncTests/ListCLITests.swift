import Foundation
import Testing
@testable import EventStore
import TestSupport

/// `list` for people (fitted, aligned, paged) and for scripts (filters, order, fields).
@Suite("list options and layout")
struct ListCLITests {
    static func seed(_ sandbox: Sandbox) throws {
        try sandbox.succeed(["add", "Holiday", "--id", "a", "name=New Year", "date=2027-01-01", #"observedBy:=["US","FR"]"#,
                             "details=A long description of the holiday that goes on and on for a while"])
        try sandbox.succeed(["add", "Holiday", "--id", "b", "name=春節 Spring Festival", "date=2027-02-06", "details=🎆🧧 fireworks"])
        try sandbox.succeed(["add", "Holiday", "--id", "c", "name=Easter", "date=2027-03-28", "details=eggs; name>x"])
    }

    /// The terminal column at which `text` starts in `line` (CJK and emoji take two).
    static func column(of text: String, in line: String) -> Int? {
        guard let range = line.range(of: text) else { return nil }
        return DisplayColumns.of(String(line[..<range.lowerBound]))
    }

    @Test("at COLUMNS=80 every line fits, CJK and emoji line up, and the hidden columns are named on stderr")
    func fitsTheTerminal() throws {
        try withSandbox { sandbox in
            try Self.seed(sandbox)
            let result = try sandbox.succeed(["list", "Holiday"], environment: ["COLUMNS": "80"])
            let lines = result.lines
            #expect(lines.count == 4, "\(result)")
            for line in lines { #expect(DisplayColumns.of(line) <= 80, "\(line)") }
            #expect(lines.allSatisfy { !$0.hasSuffix(" ") })
            let dates = lines.dropFirst().compactMap { line in ["2027-01-01", "2027-02-06", "2027-03-28"].compactMap { Self.column(of: $0, in: line) }.first }
            #expect(dates.count == 3 && Set(dates).count == 1 && dates.first == Self.column(of: "date", in: lines[0]), "\(result)")
            #expect(Self.column(of: "eggs", in: lines[3]) == Self.column(of: "🎆", in: lines[2]), "\(result)")
            #expect(result.stdout.contains("A long description of the ho…"), "a long cell is shortened: \(result)")
            #expect(result.stderr.contains("(too wide to show: wikipediaLink, image; pick columns with --fields)"), "empty columns give way first: \(result)")
            // Narrower still: the id keeps its place, the rest give way.
            let narrow = try sandbox.succeed(["list", "Holiday"], environment: ["COLUMNS": "30"])
            for line in narrow.lines { #expect(DisplayColumns.of(line) <= 30, "\(narrow)") }
        }
    }

    @Test("a narrow terminal cuts the other columns before the id, which stays whole to be copied into show",
          arguments: [40, 50, 60])
    func narrowTerminalKeepsTheID(columns: Int) throws {
        try withSandbox { sandbox in
            let id = try sandbox.succeed(["add", "Holiday", "name=A rather long holiday name", "date=2027-01-01", "details=more words than fit"])
                .stdout.trimmingCharacters(in: .newlines)
            #expect(id.count == 36, "a UUID: \(id)")
            let result = try sandbox.succeed(["list", "Holiday"], environment: ["COLUMNS": String(columns)])
            #expect(result.lines.count == 2 && result.lines[1].split(separator: " ").first.map(String.init) == id, "the id whole at \(columns) columns: \(result)")
            for line in result.lines { #expect(DisplayColumns.of(line) <= columns, "\(result)") }
        }
    }

    @Test("through 2>&1 the table comes before its count line")
    func countAfterTheTableThroughOnePipe() throws {
        try withSandbox { sandbox in
            try Self.seed(sandbox)
            let result = try sandbox.launchShell("\"$EVSYNC_BINARY_PATH\" list Holiday 2>&1 | cat").wait()
            let lines = result.stdout.split(separator: "\n").map(String.init)
            #expect(lines.count == 5 && lines.first?.hasPrefix("id ") == true && lines.last == "(3 Holiday records)", "\(result)")
        }
    }

    @Test("through a pipe nothing is cut to fit and the count goes to stderr")
    func pipeKeepsWholeCells() throws {
        try withSandbox { sandbox in
            try Self.seed(sandbox)
            let result = try sandbox.succeed(["list", "Holiday"])
            #expect(result.stdout.contains("春節 Spring Festival") && result.stdout.contains(#"["US","FR"]"#), "\(result)")
            #expect(result.stderr == "(3 Holiday records)\n")
        }
    }

    @Test("no table is cut through a pipe: list, blame and show keep every long cell whole")
    func pipeKeepsLongCells() throws {
        try withSandbox { sandbox in
            try Self.seed(sandbox)
            let long = "A long description of the holiday that goes on and on for a while"
            let longer = String(repeating: "and on ", count: 40) + "the end"
            try sandbox.succeed(["edit", "Holiday", "c", "details=\(longer)"])
            let list = try sandbox.succeed(["list", "Holiday"])
            #expect(list.stdout.contains(long) && list.stdout.contains(longer) && !list.stdout.contains("…"), "\(list)")
            // Columns still line up on what the rows measured.
            #expect(Self.column(of: "2027-01-01", in: list.lines[1]) == Self.column(of: "date", in: list.lines[0]), "\(list)")
            let blame = try sandbox.succeed(["blame", "Holiday", "a"])
            #expect(blame.stdout.contains(long) && !blame.stdout.contains("…"), "\(blame)")
            let show = try sandbox.succeed(["show", "Holiday", "c"])
            #expect(show.stdout.contains(longer) && !show.stdout.contains("…"), "\(show)")
            // On a terminal (COLUMNS), cells are still fitted.
            let fitted = try sandbox.succeed(["blame", "Holiday", "a"], environment: ["COLUMNS": "80"])
            #expect(fitted.stdout.contains("…") && fitted.lines.allSatisfy { DisplayColumns.of($0) <= 80 }, "\(fitted)")
        }
    }

    @Test("--where, --sort, --limit/-n, --fields, in the table and in --json")
    func queryOptions() throws {
        try withSandbox { sandbox in
            try Self.seed(sandbox)
            func ids(_ options: [String]) throws -> [String] {
                let result = try sandbox.succeed(["list", "Holiday", "--json"] + options)
                return try #require(try result.json().arrayValue).compactMap { $0.objectValue?["id"]?.stringValue }
            }
            #expect(try ids(["--where", "date>=2027-02-01"]) == ["b", "c"])
            #expect(try ids(["--where", "date<2027-02-06"]) == ["a"])
            #expect(try ids(["--where", "name~SPRING"]) == ["b"], "~ is contains, in any case")
            #expect(try ids(["--where", "observedBy=FR"]) == ["a"], "an array matches when an element does")
            #expect(try ids(["--where", "observedBy!=FR"]) == ["b", "c"], "a missing field is not equal")
            #expect(try ids(["--where", "details~name>x"]) == ["c"], "the value is a value, operators and all")
            #expect(try ids(["--where", "date>=2027-01-01", "--where", "name~ea"]) == ["a", "c"], "repeated: all must hold")
            #expect(try ids(["--sort", "-date"]) == ["c", "b", "a"])
            #expect(try ids(["--sort", "observedBy,-id"]) == ["a", "c", "b"], "records without the field come last")
            #expect(try ids(["--limit", "2"]) == ["a", "b"])
            #expect(try ids(["-n1", "--sort", "name"]) == ["c"])
            #expect(try ids(["--limit", "0"]) == [])
            let fields = try sandbox.succeed(["list", "Holiday", "--json", "--fields", "name", "--where", "id=c"])
            #expect(try fields.json() == [["name": "Easter"]])

            let table = try sandbox.succeed(["list", "Holiday", "--fields", "date,name", "--sort", "-date", "-n", "2"])
            #expect(table.lines.map { $0.split(separator: " ", maxSplits: 1).first.map(String.init) } == ["date", "2027-03-28", "2027-02-06"])
            #expect(table.stderr == "(2 Holiday records, --limit reached)\n")
        }
    }

    @Test("--where on a field the schema indexes is answered by the library's query and its index, as a scan answers it")
    func indexedQueryOptions() throws {
        try withSandbox { sandbox in
            try Self.seed(sandbox)
            for day in 1...28 { try sandbox.succeed(["add", "Holiday", "--id", "d\(day)", "name=Day \(day % 5)", "date=2027-04-\(day < 10 ? "0" : "")\(day)"]) }
            let schemas = (try sandbox.write("indexed/holiday.schema.json", IndexKillTests.schema) as NSString).deletingLastPathComponent
            for options in [["--where", "date>=2027-02-06"], ["--where", "date<2027-04-10", "--sort", "-name,date"],
                            ["--where", "date>2027-04-03", "--where", "date<=2027-04-20", "--limit", "5"],
                            ["--where", "date=2027-04-07", "--where", "name~day"], ["--where", "date>=2027-04-01", "--sort", "-date", "-n", "3"]] {
                let scanned = try sandbox.succeed(["list", "Holiday", "--json"] + options)
                let indexed = try sandbox.succeed(["--schemas", schemas, "list", "Holiday", "--json"] + options)
                #expect(try indexed.json() == scanned.json(), "\(options)")
                #expect(try #require(try indexed.json().arrayValue).count > 0, "\(options)")
            }
            let store = try Store(directory: sandbox.store.path, schemas: SchemaRegistry(directory: schemas))
            #expect(try store.read { try $0.run(Query("Holiday").where("date", .atLeast, "2027-04-20")) }.rowsRead == 9, "the index is kept")
        }
    }

    @Test("a bad --where, --sort or --fields names what was wrong: an unknown field is bad data (65), as anywhere; bad syntax is usage (64)")
    func badQueries() throws {
        try withSandbox { sandbox in
            try Self.seed(sandbox)
            for (options, expected, status) in [(["--where", "nmae~x"], "did you mean 'name'?", Exit.dataError),
                                                (["--where", "name"], "--where takes FIELD OP VALUE", Exit.usage),
                                                (["--sort", "date,"], "no field ''", Exit.dataError), (["--fields", "nope"], "no field 'nope'", Exit.dataError),
                                                (["--limit", "-1"], "--limit takes a whole number", Exit.usage)] {
                let result = try sandbox.run(["list", "Holiday"] + options)
                #expect(result.status == status, "\(options): \(result)")
                #expect(result.stderr.contains(expected), "\(options): \(result)")
                #expect(result.stdout.isEmpty)
            }
        }
    }

    @Test("on a terminal the table goes through PAGER; --no-pager, PAGER=cat and a pipe do without")
    func pager() throws {
        try withSandbox { sandbox in
            try Self.seed(sandbox)
            // `script` gives the command a pseudo-terminal; its output comes back with CRLF line ends.
            func onTerminal(_ environment: String, _ options: String = "") throws -> CLIResult {
                let command = "\(environment) \"$EVSYNC_BINARY_PATH\" list Holiday \(options)"
                let quoted = "'" + command.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
                return try sandbox.launchShell("COLUMNS=200 script -q -e -c \(quoted) /dev/null").wait()
            }
            let paged = try onTerminal("PAGER='sed s/^/paged:/'")
            #expect(paged.status == Exit.ok, "\(paged)")
            #expect(paged.stdout.contains("paged:id") && paged.stdout.contains("paged:a "), "\(paged)")
            #expect(paged.stdout.contains("(3 Holiday records)"), "the count, on the terminal too: \(paged)")
            #expect(!paged.stdout.contains("paged:(3"), "the count does not go through the pager: \(paged)")
            for (environment, options) in [("PAGER='sed s/^/paged:/'", "--no-pager"), ("PAGER=cat", ""), ("PAGER='sed s/^/paged:/'", "--json")] {
                let plain = try onTerminal(environment, options)
                #expect(plain.status == Exit.ok && !plain.stdout.contains("paged:") && plain.stdout.contains("a"), "\(environment) \(options): \(plain)")
            }
            let piped = try sandbox.succeed(["list", "Holiday"], environment: ["PAGER": "sed s/^/paged:/"])
            #expect(!piped.stdout.contains("paged:"))
        }
    }

    @Test("list failing midway still waits for its pager, which keeps the terminal until evsync exits")
    func pagerOnFailure() throws {
        try withSandbox { sandbox in
            try StoreFailureCLITests.seedMany(sandbox, count: 10)
            try StoreFailureCLITests.flipByte(ofEvent: 3, in: sandbox)
            // The pager reads to its end, then takes its time: it outlives an evsync that does not wait for it.
            let result = try sandbox.launchShell(#"""
                script -q -e -c 'PAGER="cat >/dev/null; sleep 1; echo pager-done" "$EVSYNC_BINARY_PATH" list Holiday' /dev/null
                """#).wait()
            #expect(result.status == Exit.damaged, "\(result)")
            #expect(result.stdout.contains("pager-done"), "evsync waited for its pager: \(result)")
        }
    }

    @Test("a reader that stops early stops list: `list | head` ends at once, with the first rows")
    func readerGoesAway() throws {
        try withSandbox { sandbox in
            var lines = ""
            for index in 0..<30_000 { lines += #"{"id":"r\#(index)","name":"n","date":"2027-01-01"}"# + "\n" }
            try sandbox.succeed(["import", "Holiday", sandbox.write("many.jsonl", lines)])
            // With SIGPIPE ignored (as a parent may leave it), only the failed write tells list to stop.
            let result = try sandbox.launchShell(#"""
                trap '' PIPE
                "$EVSYNC_BINARY_PATH" list Holiday 2>err | head -3; cat err
                "$EVSYNC_BINARY_PATH" list Holiday --json 2>/dev/null | head -c 20; echo
                """#).wait()
            #expect(result.lines.count == 4, "three lines, no count, then the start of the array: \(result)")
            #expect(result.lines[1].hasPrefix("r0 "))
            #expect(result.lines[3] == #"[{"date":"2027-01-01"#)
            #expect(!result.stdout.contains("30000"), "no count for a reader that went away: \(result)")
            // A pager quit early: list stops and exits 0 (as git does), without a count.
            let paged = try sandbox.launchShell(#"script -q -e -c 'PAGER="head -2" "$EVSYNC_BINARY_PATH" list Holiday' /dev/null"#).wait()
            #expect(paged.status == Exit.ok, "\(paged)")
            let pagedLines = paged.stdout.split(whereSeparator: \.isNewline).filter { !$0.allSatisfy(\.isWhitespace) }
            #expect(pagedLines.count == 2 && pagedLines[1].hasPrefix("r0 "), "\(paged)")
        }
    }
}

/// Display width, as the tests measure it independently of the CLI: East Asian wide and emoji take two columns.
enum DisplayColumns {
    static func of(_ text: String) -> Int {
        text.reduce(0) { width, character in
            let scalar = character.unicodeScalars.first!
            let wide = scalar.properties.isEmojiPresentation || (0x1100...0x115F).contains(scalar.value)
                || (0x2E80...0xA4CF).contains(scalar.value) || (0xAC00...0xD7A3).contains(scalar.value)
                || (0xF900...0xFAFF).contains(scalar.value) || (0xFF00...0xFF60).contains(scalar.value)
            return width + (wide ? 2 : 1)
        }
    }
}

/// The pager in a real interactive shell: job control on, so a pager outside the
/// terminal's foreground process group would be stopped by it (SIGTTIN) as it reads a key.
@Suite("the pager in an interactive terminal")
struct InteractivePagerTests {
    @Test("list longer than the screen shows its first rows under less, q quits, exit 0")
    func lessInInteractiveBash() throws {
        try withSandbox { sandbox in
            var lines = ""
            for index in 0..<200 { lines += #"{"id":"row\#(index)","name":"Holiday \#(index)","date":"2027-01-01"}"# + "\n" }
            try sandbox.succeed(["import", "Holiday", sandbox.write("many.jsonl", lines)])
            var environment = sandbox.environment
            environment["EVSYNC_BINARY_PATH"] = BuiltProduct.evsync.path
            environment["PAGER"] = nil
            environment["LESS"] = nil
            let terminal = try TmuxTerminal(directory: sandbox.root, environment: environment)
            defer { terminal.close() }
            try terminal.type(#""$EVSYNC_BINARY_PATH" list Holiday; echo "list-exit=$?""#)
            let paged = try terminal.waitFor("row1 ")
            #expect(paged.found, "the first rows are shown under the pager: \(paged.screen)")
            #expect(!paged.screen.contains("list-exit="), "the table is longer than the screen, so less waits: \(paged.screen)")
            try terminal.press("q")
            let quit = try terminal.waitFor("list-exit=")
            #expect(quit.found && quit.screen.contains("list-exit=0"), "q quits and list exits 0: \(quit.screen)")
            // The shell has its terminal back: a command typed now runs.
            try terminal.type("echo shell-is-$((6 * 7))")
            let back = try terminal.waitFor("shell-is-42")
            #expect(back.found, "the shell reads the terminal again: \(back.screen)")
        }
    }
}
