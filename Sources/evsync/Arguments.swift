/// Command-line words split into positionals, options with values and flags.
///
/// Accepts `--key value`, `--key=value`, `-n value`, repeated options, and
/// `--` to end options. Which options take a value is declared per command,
/// so an unknown option is reported instead of guessed at.
struct Arguments {
    var positionals: [String] = []
    var options: [String: [String]] = [:]
    var flags: Set<String> = []

    /// - Parameters:
    ///   - valueOptions: option names (with dashes) that take a value.
    ///   - flagOptions: option names that take none.
    init(_ words: some Sequence<String>, valueOptions: Set<String>, flagOptions: Set<String>) throws(CLIError) {
        var words = Array(words)[...]
        while let word = words.popFirst() {
            if word == "--" {
                positionals.append(contentsOf: words)
                break
            }
            guard word.hasPrefix("-"), word.count > 1 else {
                positionals.append(word)
                continue
            }
            var name = word
            var inlineValue: String?
            if word.hasPrefix("--"), let equals = word.firstIndex(of: "=") {
                name = String(word[..<equals])
                inlineValue = String(word[word.index(after: equals)...])
            }
            if valueOptions.contains(name) {
                guard let value = inlineValue ?? words.popFirst() else {
                    throw CLIError(.usage, "option \(name) needs a value")
                }
                options[name, default: []].append(value)
            } else if flagOptions.contains(name), inlineValue == nil {
                flags.insert(name)
            } else {
                throw CLIError(.usage, "unknown option \(name)")
            }
        }
    }

    func value(_ name: String) -> String? { options[name]?.last }
    func values(_ name: String) -> [String] { options[name] ?? [] }
    func has(_ flag: String) -> Bool { flags.contains(flag) }

    /// The positionals, checked to be between `minimum` and `maximum` in number.
    func positionals(_ minimum: Int, _ maximum: Int = .max, usage: String) throws(CLIError) -> [String] {
        guard positionals.count >= minimum, positionals.count <= maximum else {
            throw CLIError(.usage, positionals.count < minimum ? "missing arguments; usage: \(usage)" : "too many arguments; usage: \(usage)")
        }
        return positionals
    }
}
