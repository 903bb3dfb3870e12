import CBuildInfo
import EventSync
import Foundation

/// The help texts, rendered from the commands' declarations (`Commands.all`,
/// `GlobalOptions.options`); nothing about a command is written here.
enum Help {
    /// `evsync 0.1.0`, and the commit when the build was given one (`evsync 0.1.0 (commit 1a2b3c4d5e6f)`).
    static let version: String = {
        let commit = String(cString: evsync_build_commit())
        return "evsync \(EvsyncVersion.current)" + (commit.isEmpty ? "" : " (commit \(Output.safe(commit)))")
    }()

    /// `-h`, `--help`: accepted by every command and before any.
    static let helpOption = Option("--help", "-h", help: "help for any command (or evsync help <command>)")

    /// `evsync --help`: every command's usage and summary, by section.
    static var overview: String {
        var lines = [
            "evsync: an offline-first sync engine. Every change is an event in an append-only log;",
            "the tables are views of it.",
            "",
            "Usage: evsync [--store DIR] [--schemas DIR] <command> [arguments]",
            "",
        ]
        for section in Command.Section.allCases {
            lines.append("\(section.rawValue):")
            for command in Commands.all where command.section == section {
                lines.append(contentsOf: columns("  " + command.synopsis, command.summary, width: 56))
            }
        }
        lines.append("")
        lines.append("Options:")
        lines += optionLines(GlobalOptions.options + [helpOption, Option("--version", help: "print the version")])
        lines.append("")
        // The codes in order, 1 ("anything else") last.
        let codes = CLIError.Code.allCases.filter { $0 != .failure } + [.failure]
        var line = "Exit codes: 0 ok,"
        for (index, code) in codes.enumerated() {
            let item = " \(code.rawValue) \(code.summary)" + (index == codes.count - 1 ? "." : ",")
            if line.count + item.count > 100 { lines.append(line); line = String(item.dropFirst()) } else { line += item }
        }
        lines.append(line)
        return lines.joined(separator: "\n")
    }

    /// `evsync <command> --help`: its usage line, what it does, and its options.
    static func text(for command: Command) -> String {
        var lines = ["Usage: \(command.usage)", "", command.description, "", "Options:"]
        lines += optionLines(command.options + [Option("--help", "-h", help: "print this help")])
        lines.append("Global options (before or after the command): "
            + GlobalOptions.options.map(\.synopsis).joined(separator: ", ") + "; see evsync --help.")
        return lines.joined(separator: "\n")
    }

    private static func optionLines(_ options: [Option]) -> [String] {
        options.flatMap { columns("  " + $0.synopsis, $0.help, width: 22) }
    }

    /// `left` padded to `width`, then `right`; `right` goes on a line of its own, indented, when `left` is too long.
    private static func columns(_ left: String, _ right: String, width: Int) -> [String] {
        if left.count < width - 1 { return [left.padding(toLength: width, withPad: " ", startingAt: 0) + right] }
        return [left, String(repeating: " ", count: width) + right]
    }
}
