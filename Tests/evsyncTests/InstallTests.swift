import Foundation
import Testing
import TestSupport
@testable import evsync

/// What `Tools/install` puts on a machine: the completions, the man page and
/// the layout, each generated from the commands' declarations and tried in
/// the real shells and in man.
@Suite("Install: completions, man page, layout")
struct InstallTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    static let environment = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin", "HOME": NSTemporaryDirectory()]

    /// Runs `script` in `shell`, which must be installed (Tools/test installs bash, zsh, fish and groff).
    static func run(_ shell: String, _ arguments: [String]) async throws -> ProcessOutput {
        let path = try #require(ProcessRunner.which(shell), "\(shell) is not installed (Tools/test installs it)")
        return try await ProcessRunner.run(path, arguments, environment: environment)
    }

    /// What bash offers for the words typed, through the generated completion function.
    static func bashCompletions(_ script: URL, _ words: [String], environment: [String: String] = environment) async throws -> [String] {
        let typed = words.map { "'\($0)'" }.joined(separator: " ")
        let program = """
            cd \(repository.path) && source \(script.path)
            COMP_WORDS=(\(typed)); COMP_CWORD=\(words.count - 1); COMPREPLY=(); _evsync; printf '%s\\n' "${COMPREPLY[@]}"
            """
        let path = try #require(ProcessRunner.which("bash"), "bash is not installed")
        let run = try await ProcessRunner.run(path, ["-c", program], environment: environment)
        #expect(run.status == 0, "\(run)")
        return run.stdoutLines
    }

    @Test("bash completes commands, subcommands, options, option values, entities and files")
    func bash() async throws {
        let temporary = try TemporaryDirectory("install")
        let directory = URL(fileURLWithPath: temporary.path)
        let script = directory.appendingPathComponent("evsync.bash")
        try Completion.script(for: .bash).write(to: script, atomically: true, encoding: .utf8)
        #expect(try await Self.bashCompletions(script, ["evsync", ""]) == ["add", "edit", "delete", "show", "list", "import",
            "schema", "history", "log", "rebuild-views", "status", "backup", "blame", "diff", "conflicts", "resolve", "revert", "why", "sync", "remote", "scope", "keys", "verify", "completions"])
        #expect(try await Self.bashCompletions(script, ["evsync", "--store", "/tmp", "sy"]) == ["sync"])
        #expect(try await Self.bashCompletions(script, ["evsync", "resolve", "4", "--take", ""]) == ["local", "server"])
        #expect(Set(try await Self.bashCompletions(script, ["evsync", "log", ""])) == ["compact", "tail", "verify"])
        #expect(try await Self.bashCompletions(script, ["evsync", "log", "verify", "--j"]) == ["--json"])
        #expect(try await Self.bashCompletions(script, ["evsync", "log", "tail", "--f"]) == ["--follow"])
        #expect(try await Self.bashCompletions(script, ["evsync", "add", "Ho"]) == ["Holiday"])
        #expect(try await Self.bashCompletions(script, ["evsync", "edit", "--unset", "x", ""]) == ["Birthday", "Holiday"])
        #expect(try await Self.bashCompletions(script, ["evsync", "sync", "--conflicts", ""]) == ["server-wins", "client-wins"])
        #expect(try await Self.bashCompletions(script, ["evsync", "sync", "--remote-type", ""]) == ["kinto", "parse", "dav"])
        #expect(try await Self.bashCompletions(script, ["evsync", "sync", "--protocol", ""]) == ["kinto", "parse", "dav"])
        #expect(try await Self.bashCompletions(script, ["evsync", "completions", "z"]) == ["zsh"])
        #expect(try await Self.bashCompletions(script, ["evsync", "import", "Holiday", "Packag"]) == ["Package.swift"])
        #expect(try await Self.bashCompletions(script, ["evsync", "--schemas", "Schem"]) == ["Schemas"])
        #expect(try await Self.bashCompletions(script, ["evsync", "backup", "Schem"]) == ["Schemas"])
    }

    @Test("fish completes the commands with their summaries, and each command's options and values")
    func fish() async throws {
        let temporary = try TemporaryDirectory("install")
        let directory = URL(fileURLWithPath: temporary.path)
        let script = directory.appendingPathComponent("evsync.fish")
        try Completion.script(for: .fish).write(to: script, atomically: true, encoding: .utf8)
        func complete(_ line: String) async throws -> [String] {
            let run = try await Self.run("fish", ["--no-config", "-c", "source \(script.path); complete -C '\(line)'"])
            #expect(run.status == 0, "\(run)")
            return run.stdoutLines.map { String($0.split(separator: "\t")[0]) }
        }
        #expect(Set(try await complete("evsync ")) == Set(Commands.all.map { $0.words[0] }))
        #expect(Set(try await complete("evsync log ")) == ["compact", "tail", "verify"])
        #expect(try await complete("evsync log tail --fo") == ["--follow"])
        #expect(Set(try await complete("evsync sync --conflicts ")) == ["server-wins", "client-wins"])
        #expect(Set(try await complete("evsync show ")) == ["Holiday", "Birthday"])
    }

    @Test("bash, zsh and fish complete field names for add and edit, and record ids, from the line's own store and schemas")
    func fieldsAndIDs() async throws {
        let temporary = try TemporaryDirectory("install")
        let directory = URL(fileURLWithPath: temporary.path)
        let store = directory.appendingPathComponent("store").path, schemas = directory.appendingPathComponent("schemas")
        try FileManager.default.createDirectory(at: schemas, withIntermediateDirectories: true)
        try SchemaDirectoryCLITests.book.write(to: schemas.appendingPathComponent("book.schema.json"), atomically: true, encoding: .utf8)
        // The scripts run the `evsync` typed on the line, found on PATH.
        var environment = Self.environment
        environment["PATH"] = BuiltProduct.evsync.deletingLastPathComponent().path + ":" + (environment["PATH"] ?? "")
        for arguments in [["add", "Holiday", "--id", "xmas", "name=Christmas", "date=2026-12-25"],
                          ["add", "Holiday", "--id", "xday", "name=X", "date=2026-12-26"],
                          ["--schemas", schemas.path, "add", "Book", "--id", "dune", "title=Dune"]] {
            let added = try await ProcessRunner.run(BuiltProduct.evsync.path, ["--store", store] + arguments, environment: environment)
            #expect(added.status == 0, "\(added)")
        }
        let line = ["evsync", "--store", store, "--schemas", schemas.path]
        let holidayFields = ["name=", "date=", "details=", "wikipediaLink=", "observedBy=", "image="]

        let bash = directory.appendingPathComponent("evsync.bash")
        try Completion.script(for: .bash).write(to: bash, atomically: true, encoding: .utf8)
        func bashOffers(_ words: [String]) async throws -> [String] { try await Self.bashCompletions(bash, line + words, environment: environment) }
        #expect(try await bashOffers(["show", ""]) == ["Birthday", "Book", "Holiday"], "custom schemas too")
        #expect(try await bashOffers(["add", "Holiday", ""]) == holidayFields)
        #expect(try await bashOffers(["add", "Holiday", "name=X", "d"]) == ["date=", "details="])
        #expect(try await bashOffers(["edit", "Book", "dune", "a"]) == ["author="])
        #expect(try await bashOffers(["edit", "Holiday", "xmas", "--unset", "wiki"]) == ["wikipediaLink"])
        #expect(try await bashOffers(["show", "Holiday", ""]) == ["xday", "xmas"])
        #expect(try await bashOffers(["delete", "Holiday", "xm"]) == ["xmas"])
        #expect(try await bashOffers(["revert", "holiday", "x", "--to", "1"]) == [], "an option's value is not an id")
        #expect(try await bashOffers(["history", ""]) == ["dune", "xday", "xmas"])
        #expect(try await bashOffers(["show", "Book", ""]) == ["dune"])
        #expect(try await Self.bashCompletions(bash, ["evsync", "--store", directory.appendingPathComponent("none").path, "show", "Holiday", ""],
                                               environment: environment) == [], "no store: nothing, and no store made")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("none").path))

        // zsh: the script's offers, through a compadd that prints them (flags first: -S '' is "no space after").
        let zsh = directory.appendingPathComponent("_evsync")
        try Completion.script(for: .zsh).write(to: zsh, atomically: true, encoding: .utf8)
        func zshOffers(_ words: [String]) async throws -> [String] {
            let typed = (line + words).map { "'\($0)'" }.joined(separator: " ")
            let program = """
                compadd() { local flags=; while [[ $1 != -- ]]; do flags+=$1; shift; done; shift; print -l -- "[$flags]" "$@"; }
                words=(\(typed)); CURRENT=${#words}; source \(zsh.path)
                """
            let path = try #require(ProcessRunner.which("zsh"), "zsh is not installed (Tools/test installs it)")
            let run = try await ProcessRunner.run(path, ["-f", "-c", program], environment: environment)
            #expect(run.status == 0 && run.stderr.isEmpty, "\(run)")
            return run.stdoutLines
        }
        #expect(try await zshOffers(["edit", "Holiday", "xmas", ""]) == ["[-S]"] + holidayFields)
        #expect(try await zshOffers(["blame", "Holiday", ""]) == ["[]", "xday", "xmas"])
        #expect(try await zshOffers(["why", ""]) == ["[]", "Birthday", "Book", "Holiday"])

        let fish = directory.appendingPathComponent("evsync.fish")
        try Completion.script(for: .fish).write(to: fish, atomically: true, encoding: .utf8)
        func fishOffers(_ words: [String]) async throws -> [String] {
            let typed = (line + words).joined(separator: " ")
            let path = try #require(ProcessRunner.which("fish"), "fish is not installed (Tools/test installs it)")
            let run = try await ProcessRunner.run(path, ["--no-config", "-c", "source \(fish.path); complete -C '\(typed)'"], environment: environment)
            #expect(run.status == 0 && run.stderr.isEmpty, "\(run)")
            return run.stdoutLines.map { String($0.split(separator: "\t")[0]) }
        }
        #expect(try await fishOffers(["add", "Book", "t"]) == ["title="])
        #expect(try await fishOffers(["show", "Holiday", ""]) == ["xday", "xmas"])
        #expect(try await fishOffers(["show", "Holiday", "xmas", ""]) == [], "show takes two positionals")
        #expect(try await fishOffers(["edit", "Holiday", "xmas", "--unset", "im"]) == ["image"])
        #expect(Set(try await fishOffers(["log", "verify", "--"])).isDisjoint(with: ["--remote", "--repair"]), "those are verify's")
    }

    @Test("Tools/demo writes bold headings on a terminal only")
    func demoHeadings() async throws {
        // Its heading function, run alone: the demo itself builds a release and starts a server.
        let demo = try String(contentsOf: Self.repository.appendingPathComponent("Tools/demo"), encoding: .utf8)
        let say = demo.split(separator: "\n").filter { $0.contains("bold=") || $0.hasPrefix("say()") }.joined(separator: "\n")
        #expect(say.contains("say()"), "\(say)")
        let program = say + "\nsay Heading"
        let piped = try await Self.run("bash", ["-c", program])
        #expect(piped.stdout == "\n== Heading\n", "\(piped.stdout.debugDescription)")
        let terminal = try await Self.run("script", ["-qc", "bash -c \(shellQuoted(program))", "/dev/null"])
        #expect(terminal.stdout.contains("\u{1B}[1m== Heading\u{1B}[0m"), "\(terminal.stdout.debugDescription)")
    }

    private func shellQuoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }

    @Test("the zsh completion parses, and scans the words as the bash one does")
    func zsh() async throws {
        let temporary = try TemporaryDirectory("install")
        let directory = URL(fileURLWithPath: temporary.path)
        let script = directory.appendingPathComponent("_evsync")
        let text = Completion.script(for: .zsh)
        try text.write(to: script, atomically: true, encoding: .utf8)
        let run = try await Self.run("zsh", ["-n", script.path])
        #expect(run.status == 0, "\(run)")
        #expect(text.hasPrefix("#compdef evsync\n"))
        for command in Commands.all { #expect(text.contains("\"\(command.name)\")"), "no case for \(command.name)") }
    }

    @Test("the man page renders without a warning and documents every command, option and exit code")
    func manPage() async throws {
        let temporary = try TemporaryDirectory("install")
        let directory = URL(fileURLWithPath: temporary.path)
        let page = directory.appendingPathComponent("evsync.1")
        try ManPage.text.write(to: page, atomically: true, encoding: .utf8)
        let lint = try await Self.run("groff", ["-man", "-ww", "-z", page.path])
        #expect(lint.status == 0 && lint.stderr.isEmpty, "\(lint)")
        let rendered = try await Self.run("groff", ["-man", "-Tutf8", "-P-cbou", page.path])
        let text = rendered.stdout.replacingOccurrences(of: "\u{2010}", with: "-").split(whereSeparator: \.isWhitespace).joined(separator: " ")
        for command in Commands.all {
            #expect(text.contains(command.usage), "the man page lacks \(command.usage)")
            for option in command.options { #expect(text.contains(option.synopsis), "\(command.name): no \(option.synopsis)") }
        }
        for code in CLIError.Code.allCases { #expect(text.contains("\(code.rawValue) \(code.meaning.prefix(12))"), "no exit code \(code)") }
        for (name, _) in ManPage.environment { #expect(text.contains(name), "no \(name)") }
    }

    @Test("every exit code the CLI can return, and every variable the man page lists, is in docs/cli.md")
    func exitCodesAndEnvironment() throws {
        let reference = try String(contentsOf: Self.repository.appendingPathComponent("docs/cli.md"), encoding: .utf8)
        for code in CLIError.Code.allCases {
            #expect(reference.contains("\n| \(code.rawValue) | "), "docs/cli.md's exit codes lack \(code.rawValue)")
        }
        for (name, _) in ManPage.environment {
            #expect(reference.contains("\n| `\(name)`"), "docs/cli.md's environment lacks \(name)")
        }
    }

    @Test("Tools/progress shows long work on one line of a terminal, nothing in a pipe, and keeps it all in its log")
    func progressLine() async throws {
        let directory = try TemporaryDirectory("evsync-tests")
        let script = Self.repository.appendingPathComponent("Tools/progress").path
        let piped = directory.file("piped.log"), shown = directory.file("shown.log")
        let pipe = try await Self.run("bash", ["-c", "printf 'one\\ntwo\\n' | \(script) \(piped) 2>&1"])
        #expect(pipe.status == 0 && pipe.stdout.isEmpty, "\(pipe)")
        #expect(try String(contentsOfFile: piped, encoding: .utf8) == "one\ntwo\n")
        // script(1) gives the command a terminal; its output is what the terminal received.
        let terminal = try await Self.run("script", ["-qc", "printf 'one\\ntwo\\n' | \(script) \(shown)", "/dev/null"])
        #expect(terminal.status == 0, "\(terminal)")
        #expect(terminal.stdout.contains("\r\u{1B}[Kone\r\u{1B}[Ktwo\r\u{1B}[K"), "\(terminal.stdout.debugDescription)")
        #expect(try String(contentsOfFile: shown, encoding: .utf8) == "one\ntwo\n")
    }

    @Test("Tools/install puts the binary, the man page and the completions under DESTDIR/PREFIX")
    func install() async throws {
        let temporary = try TemporaryDirectory("install")
        let directory = URL(fileURLWithPath: temporary.path)
        let script = Self.repository.appendingPathComponent("Tools/install").path
        var environment = Self.environment
        environment["DESTDIR"] = directory.path
        let run = try await ProcessRunner.run(script, ["--prefix", "/opt/ev", "--binary", BuiltProduct.evsync.path],
                                              environment: environment)
        #expect(run.status == 0, "\(run)")
        let root = directory.appendingPathComponent("opt/ev")
        let installed = root.appendingPathComponent("bin/evsync").path
        let version = try await ProcessRunner.run(installed, ["--version"], environment: Self.environment)
        #expect(version.stdout == Help.version + "\n")
        func file(_ path: String) throws -> String {
            try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
        }
        #expect(try file("share/man/man1/evsync.1") == ManPage.text)
        #expect(try file("share/bash-completion/completions/evsync") == Completion.script(for: .bash))
        #expect(try file("share/zsh/site-functions/_evsync") == Completion.script(for: .zsh))
        #expect(try file("share/fish/vendor_completions.d/evsync.fish") == Completion.script(for: .fish))
        let relative = try await ProcessRunner.run(script, ["--prefix", "opt"], environment: environment)
        #expect(relative.status == 64 && relative.stderr.contains("absolute"), "\(relative)")
    }
}
