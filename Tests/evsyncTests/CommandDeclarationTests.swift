import Foundation
import Testing
@testable import evsync

/// Each command is declared once (`Commands.all`); the help, the usage errors
/// and the contract table of docs/cli.md must all say what the declarations say.
@Suite("CLI command declarations")
struct CommandDeclarationTests {
    /// The CLI reference, docs/cli.md: this file is Tests/evsyncTests/CommandDeclarationTests.swift.
    static let reference = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/cli.md")

    /// The first cells of the contract table (the one with `` `evsync add …` `` in its first column),
    /// without the backticks and with `\|` read as `|`.
    static func contractTableUsages() throws -> [String] {
        let lines = try String(contentsOf: reference, encoding: .utf8).components(separatedBy: "\n")
        let add = try #require(lines.firstIndex { $0.hasPrefix("| `evsync add ") }, "no contract table in docs/cli.md")
        var start = add, end = add
        while start > 0, lines[start - 1].hasPrefix("|") { start -= 1 }
        while end + 1 < lines.count, lines[end + 1].hasPrefix("|") { end += 1 }
        // The rows after the header and its separator line.
        return try lines[(start + 2)...end].map { row in
            let cell = try #require(row.components(separatedBy: "` |").first, "\(row)")
            #expect(cell.hasPrefix("| `"), "a contract row's first cell is code: \(row)")
            return String(cell.dropFirst("| `".count)).replacingOccurrences(of: "\\|", with: "|")
        }
    }

    @Test("the contract table of docs/cli.md lists exactly the declared commands and usages")
    func contractTable() throws {
        let usages = try Self.contractTableUsages()
        let declared = Commands.all.map(\.usage)
        #expect(usages == declared, "docs/cli.md: \(usages.filter { !declared.contains($0) }), declared: \(declared.filter { !usages.contains($0) })")
    }

    @Test("each declaration is consistent: unique name, usage starting with it, every option in the usage")
    func declarations() {
        let names = Commands.all.map(\.name)
        #expect(Set(names).count == names.count, "\(names)")
        // A first word names one command, or a group whose commands all have a second word (`log tail`, `log verify`).
        for (word, group) in Dictionary(grouping: Commands.all, by: { $0.words[0] }) where group.count > 1 {
            #expect(group.allSatisfy { $0.words.count == 2 }, "\(word): \(group.map(\.name))")
        }
        for command in Commands.all {
            #expect(command.usage.hasPrefix("evsync \(command.name)"), "\(command.usage)")
            let words = Set(command.usage.split(whereSeparator: { " []".contains($0) }).map(String.init))
            for option in command.options {
                #expect(words.contains(option.name), "\(command.name): \(option.name) missing from its usage line \(command.usage)")
            }
            let spellings = (command.options + GlobalOptions.options).flatMap(\.names)
            #expect(Set(spellings).count == spellings.count, "\(command.name): an option spelled twice in \(spellings)")
        }
    }

    @Test("evsync --help lists every command with its summary")
    func overview() throws {
        try withSandbox { sandbox in
            let result = try sandbox.run(["--help"])
            #expect(result.status == Exit.ok, "\(result)")
            for command in Commands.all {
                #expect(result.stdout.contains("  \(command.synopsis)"), "\(command.name) missing from the overview: \(result)")
                #expect(result.stdout.contains(command.summary), "\(command.name)'s summary missing from the overview")
            }
            for section in Command.Section.allCases { #expect(result.stdout.contains("\(section.rawValue):")) }
        }
    }

    @Test("evsync <command> --help starts with its declared usage and documents every option",
          arguments: Commands.all.map(\.name))
    func commandHelp(name: String) throws {
        let command = try #require(Commands.all.first { $0.name == name })
        try withSandbox { sandbox in
            // A command of a group (`log verify`) is named in full; `log -h` is the group's first one's help.
            let name = Commands.named(command.words[0])?.name == command.name ? [command.words[0]] : command.words
            for arguments in [command.words + ["--help"], name + ["-h"], ["help"] + name] {
                let result = try sandbox.run(arguments)
                #expect(result.status == Exit.ok, "\(arguments): \(result)")
                #expect(result.lines.first == "Usage: \(command.usage)", "\(arguments): \(result)")
                for spelling in command.options.flatMap(\.names) {
                    #expect(result.stdout.contains(spelling), "\(arguments): \(spelling) undocumented")
                }
            }
        }
    }

    @Test("usage errors quote the declared usage line", arguments: Commands.all.map(\.name))
    func usageErrors(name: String) throws {
        let command = try #require(Commands.all.first { $0.name == name })
        try withSandbox { sandbox in
            var cases = [command.words + ["--no-such-option"]]
            if command.positionals.upperBound != .max {
                cases.append(command.words + Array(repeating: "x", count: command.positionals.upperBound + 1))
            }
            if command.positionals.lowerBound > 0 { cases.append(command.words) }
            for arguments in cases {
                let result = try sandbox.run(arguments)
                #expect(result.status == Exit.usage, "\(arguments): \(result)")
                #expect(result.stderr.split(separator: "\n").count == 1, "\(arguments): \(result)")
                if arguments.last != "--no-such-option" {
                    #expect(result.stderr.hasSuffix("usage: \(command.usage)\n"), "\(arguments): \(result)")
                }
            }
        }
    }
}
