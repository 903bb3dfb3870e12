import EventStore

/// Command-line words split into positionals, options with values and flags.
///
/// Accepts `--key value`, `--key=value`, `-n value`, `-n1`, repeated options, and
/// `--` to end options. Which options take a value is declared per command
/// (`Option`), so an unknown option is reported instead of guessed at.
struct Arguments {
    var positionals: [String] = []
    /// Values by the option's canonical name, whichever spelling was used.
    var options: [String: [String]] = [:]
    /// Flags given, by canonical name.
    var flags: Set<String> = []
    /// The command's usage line, for errors that end in `usage: …`.
    var usage: String

    /// - Parameters:
    ///   - options: the options accepted, with their spellings; those with a `value` take one.
    ///   - usage: the command's usage line, quoted by usage errors.
    init(_ words: some Sequence<String>, options accepted: [Option], usage: String) throws(CLIError) {
        self.usage = usage
        var spellings: [String: Option] = [:]
        for option in accepted {
            for name in option.names { spellings[name] = option }
        }
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
            } else if !word.hasPrefix("--"), spellings[word] == nil, let short = spellings[String(word.prefix(2))], short.value != nil {
                // `-n1`, as getopt reads it: a short option's value may follow it directly.
                name = String(word.prefix(2))
                inlineValue = String(word.dropFirst(2))
            }
            guard let option = spellings[name] else {
                // `--help` is read before the words are, so it is offered here too.
                let known = spellings.keys.sorted() + Help.helpOption.names
                throw CLIError(.usage, "unknown option \(name)\(Suggestion.didYouMean(name, among: known))")
            }
            if option.value != nil {
                guard let value = inlineValue ?? words.popFirst() else {
                    throw CLIError(.usage, "option \(name) needs a value")
                }
                options[option.name, default: []].append(value)
            } else if inlineValue == nil {
                flags.insert(option.name)
            } else {
                throw CLIError(.usage, "option \(name) takes no value")
            }
        }
    }

    /// The last value of an option, by its canonical name.
    func value(_ name: String) -> String? { options[name]?.last }
    /// Every value of a repeated option, in order.
    func values(_ name: String) -> [String] { options[name] ?? [] }
    /// Whether a flag was given, by its canonical name.
    func has(_ flag: String) -> Bool { flags.contains(flag) }

    /// Checks the number of positionals against `range`.
    func checkPositionals(_ range: ClosedRange<Int>) throws(CLIError) {
        if positionals.count < range.lowerBound { throw usageError("missing arguments") }
        if positionals.count > range.upperBound { throw usageError("too many arguments") }
    }

    /// A usage error (exit 64) that ends with the command's usage line.
    func usageError(_ message: String) -> CLIError {
        CLIError(.usage, "\(message); usage: \(usage)")
    }
}
