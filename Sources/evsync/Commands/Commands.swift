import EventStore

/// Every command, in the order the overview and docs/cli.md list them.
enum Commands {
    static let all: [Command] = [
        RecordCommands.add,
        RecordCommands.edit,
        RecordCommands.delete,
        RecordCommands.show,
        ListCommand.list,
        RecordCommands.importLines,
        SchemaCommand.check,
        LogCommands.history,
        LogCommands.tail,
        LogCommands.verify,
        CompactCommand.compact,
        LogCommands.rebuildViews,
        LogCommands.status,
        BackupCommand.backup,
        AuditCommands.blame,
        AuditCommands.diff,
        AuditCommands.conflicts,
        AuditCommands.resolve,
        AuditCommands.revert,
        AuditCommands.why,
        SyncCommand.sync,
        RemoteCommand.remote,
        ScopeCommand.scope,
        KeysCommand.keys,
        VerifyCommand.verify,
        CompletionsCommand.completions,
    ]

    /// The command named by `word`, then `next` when `word` names a group
    /// (`log tail`, `log verify`); without a matching `next`, the group's first (`log` finds `log tail`).
    static func named(_ word: String, then next: String? = nil) -> Command? {
        let group = all.filter { $0.words.first == word }
        return group.first { $0.words.dropFirst().first == next } ?? group.first
    }

    /// ` (did you mean 'delete'?)` for a mistyped command, or for the name another tool gives it
    /// (`rm`, `ls`), which no spelling distance would find; "" when nothing is close.
    static func suggestion(for word: String) -> String {
        if let meant = synonyms[word.lowercased()] { return " (did you mean '\(meant)'?)" }
        return Suggestion.didYouMean(word, among: all.map { $0.words[0] })
    }

    /// What people type from git, docker, package managers and shells.
    private static let synonyms = [
        "rm": "delete", "remove": "delete", "del": "delete",
        "ls": "list", "new": "add", "create": "add", "set": "edit", "update": "edit",
        "get": "show", "cat": "show", "push": "sync", "pull": "sync", "undo": "revert", "info": "status",
    ]
}
