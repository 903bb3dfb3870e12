import EventStore
import Foundation

/// log compact: old events out of the live log into a sealed archive segment.
enum CompactCommand {
    static let compact = Command(
        name: "log compact", section: .log,
        usage: "evsync log compact --before POINT [--dry-run] [--wait SECONDS] [--no-shrink] [--json]",
        summary: "move old events into an archive segment",
        description: """
        Moves the events appended before POINT (an event number, a date or time, or last-sync, as `diff` takes
        it) out of the live log into a zstd-compressed, sealed segment in the store's archive/ directory, and
        leaves one baseline event per record that says what each field was and which event set it. show, list,
        blame, why, conflicts and sync answer as before, with or without the archive; history, diff and --as-of
        read the archive for what is before the cut. A record with a change not yet pushed, an open conflict,
        or an event after POINT stays whole in the live log. Other processes may write and sync meanwhile.
        A compaction interrupted by a crash is finished by the next one.
        Then the data file is rewritten compactly, giving its free pages back to the disk: only when no other
        process has the store open, so it waits up to --wait seconds for them to close it (when it moved nothing,
        only if --wait is given), and says so; if they have not, the file stays as it is, and
        `evsync log compact --before 1` shrinks it later.
        """,
        positionals: 0...0,
        options: [
            Option("--before", value: "POINT", help: "the events before this point move (required)"),
            Option("--dry-run", help: "say what would move, change nothing"),
            Option("--wait", value: "SECONDS", help: "how long to wait for other processes to close the store before shrinking its file (default 10)"),
            Option("--no-shrink", help: "leave the data file as it is"),
            Option("--json", help: "one object (cut, archivedEvents, records, keptRecords, segment, segmentBytes, changedDuringCompaction, dryRun, resumed, and dataFile: {bytesBefore, bytesAfter, heldOpenBy?} when it tried to shrink)"),
        ]
    ) { arguments, global in
        guard let text = arguments.value("--before") else { throw CLIError(.usage, "log compact needs --before POINT (an event number, a date or time, or last-sync)") }
        let waitText = arguments.value("--wait") ?? "10"
        guard let wait = Double(waitText), (0...86_400).contains(wait) else {
            throw CLIError(.usage, "--wait takes a number of seconds from 0 to 86400, not '\(waitText)'")
        }
        let (report, archiveDirectory) = try {
            let store = try global.openStore(create: false)
            let point = try AuditCommands.point(text, option: "--before", store: store)
            return (try store.compact(before: point, dryRun: arguments.has("--dry-run")), store.archiveDirectory)
        }()
        // The store is closed by now: the shrink opens it alone. A compaction that moved nothing waits for no one
        // unless told to (--wait): the file is shrunk if it can be at once, else left as it is.
        let movedNothing = report.segment == nil && !report.resumed
        let waiting = movedNothing && arguments.value("--wait") == nil ? 0 : wait
        let shrink = report.dryRun || arguments.has("--no-shrink") ? nil : try shrinkDataFile(global, waiting: waiting, quiet: arguments.has("--json"))
        if arguments.has("--json") {
            var object = try JSONValueEncoder.encode(report).objectValue ?? [:]
            if let shrink { object["dataFile"] = try JSONValueEncoder.encode(shrink) }
            print(Output.json(.object(object)))
            return
        }
        let events = Plural.count(Int(report.archivedEvents), "event")
        let records = Plural.count(Int(report.records), "record")
        if report.resumed { print("finished the compaction a crash had interrupted") }
        if report.dryRun {
            print("would move \(events) of \(records) into an archive segment (events up to #\(report.cut))")
        } else if let segment = report.segment {
            let path = (archiveDirectory as NSString).appendingPathComponent(segment)
            print("moved \(events) of \(records) into \(Output.safe(path)) (\(report.segmentBytes) bytes)")
        } else {
            print("nothing to compact before #\(report.cut + 1)")
        }
        if report.keptRecords > 0 {
            print("kept whole in the live log: \(Plural.count(Int(report.keptRecords), "record")) changed since, pending or in conflict")
        }
        if report.changedDuringCompaction > 0 {
            print("\(Plural.count(Int(report.changedDuringCompaction), "record")) changed while compacting: their events stay live too")
        }
        if let shrink {
            if shrink.shrunk {
                print("data file rewritten compactly: \(shrink.bytesBefore) bytes before, \(shrink.bytesAfter) after")
            } else {
                print("data file left as it is (\(shrink.bytesBefore) bytes): \(holder(shrink)) still has the store open; `evsync log compact --before 1` shrinks it once it has closed it")
            }
        }
    }

    /// Shrinks the data file, waiting up to `seconds` for other processes to close the store, and saying so on stderr.
    private static func shrinkDataFile(_ global: GlobalOptions, waiting seconds: Double, quiet: Bool) throws -> Store.Shrink {
        let configuration = try global.storeConfiguration(create: false)
        let deadline = Date(timeIntervalSinceNow: seconds)
        var said = false
        while true {
            let shrink = try Store.shrinkDataFile(in: global.storeDirectory, configuration: configuration)
            guard !shrink.shrunk, Date() < deadline, !Interruption.requested else { return shrink }
            if !said && !quiet {
                printError("evsync: waiting up to \(Plural.count(Int(seconds.rounded(.up)), "second")) for \(holder(shrink)) to close the store, to shrink its data file")
                said = true
            }
            Thread.sleep(forTimeInterval: 0.2)
        }
    }

    private static func holder(_ shrink: Store.Shrink) -> String {
        shrink.heldOpenBy.map { $0 > 0 ? "process \($0)" : "another process" } ?? "another process"
    }
}
