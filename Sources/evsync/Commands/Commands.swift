/// Every command, in the order the overview and the README list them.
enum Commands {
    static let all: [Command] = [
        RecordCommands.add,
        RecordCommands.edit,
        RecordCommands.delete,
        RecordCommands.show,
        RecordCommands.list,
        RecordCommands.importLines,
        LogCommands.history,
        LogCommands.tail,
        LogCommands.rebuildViews,
        LogCommands.status,
        SyncCommand.sync,
        CompletionsCommand.completions,
    ]

    /// The command whose name starts with `word` (`log` finds `log tail`).
    static func named(_ word: String) -> Command? {
        all.first { $0.words.first == word }
    }
}
