/// Every command, in the order the overview and docs/cli.md list them.
enum Commands {
    static let all: [Command] = [
        RecordCommands.add,
        RecordCommands.edit,
        RecordCommands.delete,
        RecordCommands.show,
        ListCommand.list,
        RecordCommands.importLines,
        LogCommands.history,
        LogCommands.tail,
        LogCommands.verify,
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
        VerifyCommand.verify,
        CompletionsCommand.completions,
    ]

    /// The command named by `word`, then `next` when `word` names a group
    /// (`log tail`, `log verify`); without a matching `next`, the group's first (`log` finds `log tail`).
    static func named(_ word: String, then next: String? = nil) -> Command? {
        let group = all.filter { $0.words.first == word }
        return group.first { $0.words.dropFirst().first == next } ?? group.first
    }
}
