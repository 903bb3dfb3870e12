import EventStore
import Foundation

/// Shell completion scripts for bash, zsh and fish, generated from the
/// commands' declarations (`Commands.all`), so a new command or option
/// completes without anyone writing completion code.
///
/// What completes: command names (and `log tail`), each command's options,
/// option values where their placeholder says what they are (`DIR`, `FILE`,
/// a `|`-separated choice, the remote types), and the positionals of the
/// usage line: `<Entity>`, `<id>`, `field=value…`, `FILE` and `DIR`. Entities, ids
/// and fields come from `evsync __complete` (`CompletionsCommand.complete`),
/// run as the line's own `evsync` with its `--store` and `--schemas`, so
/// custom schemas and the store's records complete as the command would see them.
enum Completion {
    enum Shell: String, CaseIterable {
        case bash, zsh, fish
    }

    /// What a word in some position can be.
    enum Value: Equatable, Sendable {
        case anything
        case files
        case directories
        case choices([String])
        /// `<Entity>`: the entities of the built-in and custom schemas.
        case entities
        /// `<id>`: the ids of the entity that is positional `entity` (every entity's when nil).
        case ids(entity: Int?)
        /// `field=value…` (repeated to the end of the line): `name=`, … of the entity that is positional `entity`.
        case assignments(entity: Int)
        /// A field's name, as `--unset` takes it.
        case fields(entity: Int)

        /// The `evsync __complete` words that list the candidates, then the positional they need, if any.
        var helper: (words: String, entity: Int?)? {
            switch self {
            case .entities: ("entities", nil)
            case .ids(let entity): (#"ids "$cur""#, entity)
            case .assignments(let entity): ("assignments", entity)
            case .fields(let entity): ("fields", entity)
            default: nil
            }
        }
    }

    static func script(for shell: Shell) -> String {
        switch shell {
        case .bash: Script(dialect: .bash).text
        case .zsh: Script(dialect: .zsh).text
        case .fish: fishScript
        }
    }

    // MARK: The model, read from the declarations

    /// What the value of `option` is, from its placeholder.
    static func value(of option: Option) -> Value? {
        guard let placeholder = option.value else { return nil }
        if placeholder == "DIR" { return .directories }
        if placeholder == "field" { return .fields(entity: 0) }
        if placeholder == "FILE" { return .files }
        if option.name == "--remote-type" || option.name == "--protocol" { return .choices(RemoteFactory.all.map(\.type)) }
        if placeholder.contains("|"), placeholder == placeholder.lowercased() {
            return .choices(placeholder.split(separator: "|").map(String.init))
        }
        return .anything
    }

    /// What each positional of `command` is, from its usage line: the words outside brackets that are
    /// neither options nor an option's value (`--to POINT`).
    static func positionals(of command: Command) -> [Value] {
        var values: [Value] = []
        var depth = 0, afterOption = false
        for word in command.usage.split(separator: " ").dropFirst(1 + command.words.count) {
            let skipped = depth > 0 || word.hasPrefix("[") || word.hasPrefix("-") || afterOption
            depth += word.filter { $0 == "[" }.count - word.filter { $0 == "]" }.count
            afterOption = word.hasPrefix("-")
            if skipped { continue }
            let entity = values.firstIndex(of: .entities)
            if word == "<Entity>" {
                values.append(.entities)
            } else if word == "<id>" {
                values.append(.ids(entity: entity))
            } else if word.hasPrefix("field="), let entity {
                values.append(.assignments(entity: entity))
            } else if word.hasPrefix("FILE") {
                values.append(.files)
            } else if word == "DIR" {
                values.append(.directories)
            } else if word.contains("|"), word == word.lowercased() {
                values.append(.choices(word.split(separator: "|").map(String.init)))
            } else {
                values.append(.anything)
            }
        }
        return values
    }

    static let globalOptions = GlobalOptions.options + [Help.helpOption]

    /// The commands named by two words, by their first word: `log` → `tail`, `verify`.
    static var groups: [(first: String, seconds: [String])] {
        var groups: [(first: String, seconds: [String])] = []
        for command in Commands.all where command.words.count > 1 {
            if let index = groups.firstIndex(where: { $0.first == command.words[0] }) {
                groups[index].seconds.append(command.words[1])
            } else {
                groups.append((command.words[0], [command.words[1]]))
            }
        }
        return groups
    }

    // MARK: bash and zsh

    /// bash and zsh run the same scan of the words typed so far; they differ
    /// in how words are indexed and how candidates are offered.
    private struct Dialect: Sendable {
        let header: String
        let footer: String
        /// The index of the first word after `evsync`, and of the word being completed.
        let first: String, current: String
        let word: @Sendable (String) -> String
        /// The `evsync` typed on the line, which the helper calls run.
        let program: String
        /// The positional at this index (from 0) after the command's name.
        let argument: @Sendable (Int) -> String
        let offer: @Sendable (Value) -> String
        /// Offers the lines the shell command prints; `joined`: no space after the word (`name=`).
        let offerLines: @Sendable (_ command: String, _ joined: Bool) -> String

        static let bash = Dialect(
            header: "# bash completion for evsync (generated by `evsync completions bash`)\n_evsync() {",
            footer: "}\ncomplete -F _evsync evsync",
            first: "1", current: "COMP_CWORD",
            word: { "${COMP_WORDS[\($0)]}" },
            program: "${COMP_WORDS[0]}",
            argument: { "${args[\($0)]}" },
            offer: { value in
                switch value {
                case .files: #"COMPREPLY=($(compgen -f -- "$cur")); return"#
                case .directories: #"COMPREPLY=($(compgen -d -- "$cur")); return"#
                case .choices(let words): #"COMPREPLY=($(compgen -W "\#(words.joined(separator: " "))" -- "$cur")); return"#
                default: "return"
                }
            },
            offerLines: { command, joined in
                (joined ? "compopt -o nospace 2>/dev/null; " : "") + #"COMPREPLY=($(compgen -W "$(\#(command))" -- "$cur")); return"#
            })

        static let zsh = Dialect(
            header: "#compdef evsync\n# zsh completion for evsync (generated by `evsync completions zsh`)\n_evsync() {",
            footer: "}\n_evsync \"$@\"",
            first: "2", current: "CURRENT",
            word: { "${words[\($0)]}" },
            program: "${words[1]}",
            argument: { "${args[\($0 + 1)]}" },
            offer: { value in
                switch value {
                case .files: "_files; return"
                case .directories: "_directories; return"
                case .choices(let words): "compadd -- \(words.joined(separator: " ")); return"
                default: "return"
                }
            },
            offerLines: { command, joined in
                "compadd \(joined ? "-S '' " : "")-- ${(f)\"$(\(command))\"}; return"
            })
    }

    private struct Script {
        let dialect: Dialect

        /// What the shell runs to offer `value`: `evsync __complete …` for what the store and schemas know.
        func offer(_ value: Value) -> String {
            guard let helper = value.helper else { return dialect.offer(value) }
            var command = #""\#(dialect.program)" "${global[@]}" __complete \#(helper.words)"#
            if let entity = helper.entity { command += " \"\(dialect.argument(entity))\"" }
            command += " 2>/dev/null"
            // Without a reachable evsync (`evsync` not on PATH), the built-in entities still complete.
            if value == .entities { command += " || printf '%s\\n' \(SchemaRegistry().entityNames.joined(separator: " "))" }
            if case .assignments = value { return dialect.offerLines(command, true) }
            return dialect.offerLines(command, false)
        }

        var text: String {
            let valued = (Commands.all.flatMap(\.options) + globalOptions).filter { $0.value != nil }.flatMap(\.names)
            let globalNames = GlobalOptions.options.map(\.name)
            var lines = [
                dialect.header,
                "    local cur=\(dialect.word("\(dialect.current)")) prev=\(dialect.word("\(dialect.current)-1"))",
                "    local command=\"\" word option=\"\" i skip=0",
                "    local -a args=() global=()",
                "    # The command's name, the positionals typed after it (option values skipped), and --store and --schemas.",
                "    for ((i = \(dialect.first); i < \(dialect.current); i++)); do",
                "        word=\(dialect.word("i"))",
                "        if ((skip)); then",
                "            skip=0",
                "            case $option in \(globalNames.joined(separator: "|"))) global+=(\"$option\" \"$word\") ;; esac",
                "            continue",
                "        fi",
                "        case $word in",
                "            \(globalNames.map { "\($0)=*" }.joined(separator: "|"))) global+=(\"$word\") ;;",
                "            \(unique(valued).joined(separator: "|"))) skip=1; option=$word ;;",
                "            -*) ;;",
                "            *)",
                "                if [[ -z $command ]]; then command=$word",
            ]
            for command in Commands.all where command.words.count > 1 {
                let (first, rest) = (command.words[0], command.words.dropFirst().joined(separator: " "))
                lines.append("                elif [[ $command == \(first) && ${#args[@]} -eq 0 && $word == \(rest) ]]; then command=\"\(command.name)\"")
            }
            lines += [
                "                else args+=(\"$word\"); fi ;;",
                "        esac",
                "    done",
                "    case $command in",
                "        \"\")",
            ]
            lines += optionValueCases(globalOptions, indent: 12)
            let commandNames = unique(Commands.all.map { $0.words[0] })
            lines.append("            if [[ $cur == -* ]]; then \(offer(.choices(globalOptions.flatMap(\.names) + ["--version"])));"
                + " else \(offer(.choices(commandNames))); fi")
            lines.append("            ;;")
            // A group's first word typed so far (`log`): offer the second words of its commands.
            for (first, seconds) in groups {
                lines.append("        \"\(first)\") \(offer(.choices(seconds))) ;;")
            }
            for command in Commands.all {
                lines.append("        \"\(command.name)\")")
                let options = command.options + globalOptions
                lines += optionValueCases(options, indent: 12)
                lines.append("            if [[ $cur == -* ]]; then \(offer(.choices(options.flatMap(\.names)))); fi")
                let positionals = positionals(of: command)
                if positionals.contains(where: { $0 != .anything }) {
                    lines.append("            case ${#args[@]} in")
                    for (index, value) in positionals.enumerated() where value != .anything {
                        // `field=value…` goes on to the end of the line.
                        let position = if case .assignments = value { "*" } else { "\(index)" }
                        lines.append("                \(position)) \(offer(value)) ;;")
                    }
                    lines.append("            esac")
                }
                lines.append("            ;;")
            }
            lines += ["    esac", dialect.footer]
            return lines.joined(separator: "\n") + "\n"
        }

        /// `case $prev in --store|--schemas) <directories> ;; … esac` for the options that take a value.
        private func optionValueCases(_ options: [Option], indent: Int) -> [String] {
            let pad = String(repeating: " ", count: indent)
            let withValues = options.compactMap { option in value(of: option).map { (option, $0) } }
            guard !withValues.isEmpty else { return [] }
            return ["\(pad)case $prev in"]
                + withValues.map { option, value in "\(pad)    \(option.names.joined(separator: "|"))) \(offer(value)) ;;" }
                + ["\(pad)esac"]
        }

        private func unique(_ words: [String]) -> [String] {
            var seen: Set<String> = []
            return words.filter { seen.insert($0).inserted }
        }
    }
}
