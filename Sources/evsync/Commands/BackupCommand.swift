import EventStore
import Foundation

/// `evsync backup DIR`: a copy of the store to restore from (see `Store.backup(to:)`).
enum BackupCommand {
    static let backup = Command(
        name: "backup", section: .log,
        usage: "evsync backup DIR [--json]",
        summary: "copy the store to a new directory",
        description: """
        Writes a consistent, compacted copy of the store to DIR, which must not exist or must be empty
        (otherwise exit 64; 66 when its parent does not exist): one read snapshot, so other processes go on
        writing and syncing meanwhile. DIR holds the log, the views, the remembered remote, the pull cursors
        and the last sync; it is written beside DIR and renamed into place once flushed and checked, so a
        crash leaves no partial backup under that name, and it is the owner's only (0700, files 0600).
        A backup is a store: --store DIR reads it as it is. To restore, stop what uses the store, move it
        aside and copy the backup in its place (mv .evsync .evsync.damaged && cp -a DIR .evsync), then
        sync: the pull brings what the server got since the backup, and what the backup still had to push
        but was pushed since is recognised, not pushed twice. Schemas (--schemas) are not part of it.
        """,
        positionals: 1...1,
        options: [Option("--json", help: "one object (backup, store, events, bytes)")]
    ) { arguments, global in
        let store = try global.openStore(create: false)
        let backup: Backup
        do {
            backup = try store.backup(to: arguments.positionals[0])
        } catch let error as StoreError where error.code == .invalidData {
            // Only the destination can be wrong: an argument this command cannot use.
            throw CLIError(.usage, error.message)
        }
        if arguments.has("--json") {
            print(Output.json([
                "backup": .string(backup.directory),
                "store": .string(store.directory),
                "events": .number(JSONNumber(backup.events)),
                "bytes": .number(JSONNumber(backup.bytes)),
            ]))
        } else {
            print("backed up \(Plural.count(Int(backup.events), "event")) to \(Output.safe(backup.directory)) (\(backup.bytes) bytes)")
        }
    }
}
