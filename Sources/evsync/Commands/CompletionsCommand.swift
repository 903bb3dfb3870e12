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
}
