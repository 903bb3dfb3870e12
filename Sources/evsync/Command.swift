/// One CLI command, declared once: what it is called, how it is used, what it
/// accepts and what it does.
///
/// Everything that describes a command is read from here: the tokenizer takes
/// its options, `evsync --help` lists its usage and summary under its section,
/// `evsync <command> --help` prints its usage, description and options, usage
/// errors quote its usage line, and a test keeps the contract table of docs/cli.md
/// equal to `Commands.all` (swift-argument-parser's `CommandConfiguration`).
///
/// ```swift
/// static let delete = Command(
///     name: "delete", section: .records,
///     usage: "evsync delete <Entity> <id>",
///     summary: "delete a record",
///     description: "Deletes a record. Its events stay in the log; `history` still shows them.",
///     positionals: 2...2
/// ) { arguments, global in … }
/// ```
struct Command: Sendable {
    /// Where the overview lists a command.
    enum Section: String, CaseIterable, Sendable {
        case records = "Records"
        case log = "Log"
        case history = "History"
        case server = "Server"
        case setup = "Setup"
    }

    /// The words that name it: `add`, or `log tail` for a command with a subcommand.
    let name: String
    let section: Section
    /// The usage line, starting with `evsync <name>`, as the contract table of docs/cli.md shows it.
    let usage: String
    /// A few words for the overview.
    let summary: String
    /// What `--help` says after the usage line.
    let description: String
    /// How many positional arguments it takes (after its name).
    let positionals: ClosedRange<Int>
    let options: [Option]
    let run: @Sendable (Arguments, GlobalOptions) throws -> Void

    init(name: String, section: Section, usage: String, summary: String, description: String,
         positionals: ClosedRange<Int>, options: [Option] = [],
         run: @escaping @Sendable (Arguments, GlobalOptions) throws -> Void) {
        self.name = name
        self.section = section
        self.usage = usage
        self.summary = summary
        self.description = description
        self.positionals = positionals
        self.options = options
        self.run = run
    }

    /// The words of the name: `["log", "tail"]`.
    var words: [String] { name.split(separator: " ").map(String.init) }

    /// The usage line without the leading `evsync `, as the overview lists it.
    var synopsis: String { String(usage.dropFirst("evsync ".count)) }
}
