import EventStore

/// completions: the shell completion scripts, for users and for `Tools/install`.
enum CompletionsCommand {
    static let completions = Command(
        name: "completions", section: .setup,
        usage: "evsync completions bash|zsh|fish",
        summary: "a shell completion script",
        description: """
            Prints a completion script for the shell, generated from the commands' declarations. \
            bash: `eval "$(evsync completions bash)"` in ~/.bashrc; zsh: save it as `_evsync` in a directory of \
            $fpath; fish: save it as ~/.config/fish/completions/evsync.fish. `Tools/install` installs all three.
            """,
        positionals: 1...1
    ) { arguments, _ in
        let name = arguments.positionals[0]
        guard let shell = Completion.Shell(rawValue: name) else {
            throw arguments.usageError("unknown shell '\(name)' (bash, zsh or fish)")
        }
        print(Completion.script(for: shell), terminator: "")
    }

    /// `evsync __complete entities|fields E|assignments E|ids PREFIX [E]`: what only the schemas and the store
    /// know, one candidate a line, for the completion scripts (hidden: not a command of the contract).
    /// Prints nothing on an error (an unknown entity, no store): a completion must not spill onto the line.
    static func complete(_ words: [String], _ global: GlobalOptions) {
        let registry = (try? global.schemaRegistry()) ?? SchemaRegistry()
        let schema = { (index: Int) in words.count > index ? try? registry.schema(named: words[index]) : nil }
        switch words.first {
        case "entities":
            for name in registry.entityNames { print(name) }
        case "fields":
            for field in schema(1)?.fieldNames ?? [] { print(field) }
        case "assignments":
            for field in schema(1)?.fieldNames ?? [] { print(field + "=") }
        case "ids":
            let prefix = words.count > 1 ? words[1] : ""
            let entities = words.count > 2 ? schema(2).map { [$0.name] } ?? [] : registry.entityNames
            guard let store = try? global.openStore(create: false) else { return }
            // Enough for any screen; a store of a million records stays quick to complete in.
            var left = Self.mostIDs
            for entity in entities where left > 0 {
                try? store.forEachRecord(entity) { record in
                    if record.id.hasPrefix(prefix) { print(record.id); left -= 1 }
                    return left > 0
                }
            }
        default:
            break
        }
    }

    static let mostIDs = 1_000
}
