/// One CLI command: the options it accepts and what it does.
struct Command: Sendable {
    var valueOptions: Set<String> = []
    var flagOptions: Set<String> = []
    let run: @Sendable (Arguments, GlobalOptions) throws -> Void
}

enum Commands {
    static let all: [String: Command] = [
        "add": RecordCommands.add,
        "edit": RecordCommands.edit,
        "delete": RecordCommands.delete,
        "show": RecordCommands.show,
        "list": RecordCommands.list,
        "import": RecordCommands.importLines,
        "history": LogCommands.history,
        "log": LogCommands.tail,
        "rebuild-views": LogCommands.rebuildViews,
        "status": LogCommands.status,
        "sync": SyncCommand.sync,
    ]
}
