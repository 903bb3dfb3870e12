/// An option a command accepts, declared once: the tokenizer parses it and
/// `--help` documents it from the same value.
struct Option: Sendable {
    /// Its spellings, the canonical one first (e.g. `["--follow", "-f"]`);
    /// `Arguments` files every spelling under the first.
    let names: [String]
    /// The placeholder of its value (e.g. `"N"`), or nil for a flag that takes none.
    let value: String?
    /// One line for `--help`.
    let help: String

    init(_ names: String..., value: String? = nil, help: String) {
        self.names = names
        self.value = value
        self.help = help
    }

    var name: String { names[0] }

    /// `--follow, -f` or `-n N`, as `--help` shows it.
    var synopsis: String {
        names.joined(separator: ", ") + (value.map { " \($0)" } ?? "")
    }
}
