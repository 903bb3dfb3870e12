import EventStore
import Foundation

/// history, log tail, log verify, rebuild-views, status.
enum LogCommands {
    static let history = Command(
        name: "history", section: .log,
        usage: "evsync history <id> [--json]",
        summary: "every event of a record",
        description: "Every event of the record, oldest first: when, who, from where, and what each field became.",
        positionals: 1...1,
        options: [Option("--json", help: "an array of events (seq, kind, origin, at, entity, id, set, unset, …)")]
    ) { arguments, global in
        let words = arguments.positionals
        let store = try global.openStore(create: false)
        let (events, missingArchives) = try store.historyReport(of: words[0])
        for file in missingArchives {
            printError("evsync: older events of '\(Output.safe(words[0]))' are in the archive segment \(Output.safe(file)), which is missing: its baseline stands in for them")
        }
        let misstamped = try store.misstampedEvents()
        if arguments.has("--json") {
            // Still `[]` for scripts that read it, and exit 66 as the text form.
            print("[" + events.map { event in
                // An event stamped while the clock ran ahead says so: `"timeWrong": true`.
                guard misstamped.contains(where: { $0.contains(event.seq) }),
                      var object = try? JSONParser.parse(Output.json(event)).objectValue else { return Output.json(event) }
                object["timeWrong"] = true
                return Output.json(.object(object))
            }.joined(separator: ",") + "]")
        }
        if events.isEmpty {
            throw CLIError(.noInput, "no events for id '\(words[0])'")
        }
        if !arguments.has("--json") {
            print(Output.history(events, misstamped: misstamped))
        }
    }

    static let tail = Command(
        name: "log tail", section: .log,
        usage: "evsync log tail [-n N] [--follow] [--json]",
        summary: "the newest events",
        description: "Prints the last N events, newest last.",
        positionals: 0...0,
        options: [
            Option("-n", value: "N", help: "how many (default 10)"),
            Option("--follow", "-f", help: "keep printing events as they are appended, by this or any other process"),
            Option("--json", help: "one event object per line"),
        ]
    ) { arguments, global in
        let countText = arguments.value("-n") ?? "10"
        guard let count = Int(countText), count >= 0 else { throw CLIError(.usage, "-n takes a whole number, not '\(countText)'") }
        let store = try global.openStore(create: false)
        let json = arguments.has("--json")
        let render: @Sendable (Event) -> String = { json ? Output.json($0) : Output.line($0) }
        let initial = try store.lastEvents(count)
        for event in initial { print(render(event)) }
        fflush(nil)
        guard arguments.has("--follow") else { return }
        // Follow on from the last event printed (read in the same snapshot), so
        // an event appended meanwhile is printed once rather than twice.
        let last = try initial.last?.seq ?? (count == 0 ? store.lastSeq() : 0)
        // The library follows the log in read snapshots, so followers never slow writers down.
        let events = store.observeEvents(after: last)
        try runBlocking {
            for try await event in events {
                print(render(event))
                fflush(nil)
            }
        }
    }

    static let verify = Command(
        name: "log verify", section: .log,
        usage: "evsync log verify [--archive FILE] [--json]",
        summary: "check every event for damage",
        description: """
        Reads every event of the log and checks its checksum, that it decodes, and that the events are
        numbered without a gap. Then checks each archive segment a compaction sealed against its seal, and
        that every event of its range is in it or still live, so the whole history from event 1 is accounted
        for. Prints a summary and exits 0, or names the first damaged event or segment and exits 74.
        With --archive, checks one segment file on its own (moved to other media, say), without a store.
        Takes no write lock and changes nothing. Events written before events had a checksum
        (evsync's format 1) can only be checked to decode; the summary counts them.
        """,
        positionals: 0...0,
        options: [
            Option("--archive", value: "FILE", help: "check this archive segment alone"),
            Option("--json", help: "one object (store, events, withoutChecksum, damaged: null or {seq, problem}, archives: [{file, events, problem}])"),
        ]
    ) { arguments, global in
        if let file = arguments.value("--archive") {
            let result = Store.verifyArchive(at: file)
            if arguments.has("--json") { print(Output.json(try JSONValueEncoder.encode(result))) }
            if let problem = result.problem { throw CLIError(result.events == 0 && !FileManager.default.fileExists(atPath: file) ? .noInput : .damaged, problem) }
            if !arguments.has("--json") { print("archive segment is sound: \(Plural.count(Int(result.events), "event")) checked") }
            return
        }
        let store = try global.openStore(create: false)
        let result = try store.verifyLog()
        if arguments.has("--json") {
            let damaged: JSONValue = result.damage.map { ["seq": .number(JSONNumber($0.seq)), "problem": .string($0.problem)] } ?? .null
            print(Output.json(.object([
                "store": .string(store.directory),
                "events": .number(JSONNumber(result.eventsChecked)),
                "withoutChecksum": .number(JSONNumber(result.withoutChecksum)),
                "damaged": damaged,
                "archives": try JSONValueEncoder.encode(result.archives),
            ])))
        }
        if let damage = result.damage {
            // Worded as every other command words the same damage (`StoreError`).
            let what = damage.isNewerFormat
                ? "was written by a newer evsync (event \(damage.seq): \(damage.problem)): use that evsync or a newer one"
                : "is damaged (corrupt event \(damage.seq) in the log: \(damage.problem)): \(StoreError.restoreAdvice)"
            throw CLIError(.damaged, "the store at \(store.directory) \(what)")
        }
        if let bad = result.archives.first(where: { $0.problem != nil }), let problem = bad.problem {
            throw CLIError(.damaged, "the log is sound but its history is not whole: \(Output.safe(problem))")
        }
        guard !arguments.has("--json") else { return }
        let unchecked = result.withoutChecksum == 0 ? ""
            : "; \(result.withoutChecksum) of them, written before events had a checksum, \(result.withoutChecksum == 1 ? "was" : "were") only checked to decode"
        let archived = result.archives.reduce(0) { $0 + $1.events }
        let archives = result.archives.isEmpty ? ""
            : "; \(Plural.count(Int(archived), "archived event")) in \(Plural.count(result.archives.count, "segment")) match their seals"
        print("log is sound: \(Plural.count(result.eventsChecked, "event")) checked\(unchecked)\(archives)")
    }

    static let rebuildViews = Command(
        name: "rebuild-views", section: .log,
        usage: "evsync rebuild-views [--verify] [--json]",
        summary: "replay the log into the views",
        description: "Replays the whole log into fresh views and swaps them in atomically.",
        positionals: 0...0,
        options: [
            Option("--verify", help: "rebuild aside, compare, print every difference; exit 1 if there is one"),
            Option("--json", help: "one object: {events} or, with --verify, {events, match, differences}"),
        ]
    ) { arguments, global in
        if arguments.has("--verify") {
            let store = try global.openStore(create: false)
            let differences = try store.verifyViews()
            // The events replayed, as rebuild-views counts them: after a compaction, fewer than the last seq.
            let replayed = try store.status().liveEvents
            if arguments.has("--json") {
                print(Output.json([
                    "events": .number(JSONNumber(replayed)),
                    "match": .bool(differences.isEmpty),
                    "differences": .array(differences.map { .string($0.description) }),
                ]))
            }
            guard differences.isEmpty else {
                if !arguments.has("--json") { for difference in differences { print(difference) } }
                throw CLIError(.failure, "the views differ from the log (\(differences.count)\(differences.count >= 100 ? "+" : "") difference\(differences.count == 1 ? "" : "s")); run `evsync rebuild-views` to repair them")
            }
            if !arguments.has("--json") { print("views match the log (\(Plural.count(Int(replayed), "event")))") }
        } else {
            let count = try global.openStoreRepairingViews().rebuildViews()
            print(arguments.has("--json") ? Output.json(["events": .number(JSONNumber(count))])
                : "rebuilt the views from \(Plural.count(Int(count), "event"))")
        }
    }

    static let status = Command(
        name: "status", section: .log,
        usage: "evsync status [--json]",
        summary: "counts and what is waiting to sync",
        description: """
        Events in the log, records per entity, local changes not yet acknowledged by a server,
        the remote and the last sync (when it failed, why), and whether the store is in sync as of it.
        """,
        positionals: 0...0,
        options: [Option("--json", help: "one object (events, records, pendingRecords, unacknowledgedEvents, skippedRecords, missingFromServer, rejectedRecords, openConflicts, inSync, summary, liveEvents, liveBytes, archivedEvents, archiveSegments, archiveBytes, remote, lastSync: {at, result, error?, interrupted?}, access: {Entity: read-write|read-only|read-and-create|create-only|shared-records|read-write-some|none}, scopes: {Entity: [COND…]}, remoteAuthorsKnown, store)")]
    ) { arguments, global in
        let store = try global.openStore(create: false)
        let status = try store.status(countingPending: false)
        // The sync's part comes from `syncState()`, as an app reads it.
        let state = try store.syncState()
        let (remote, lastSync, missing) = (state.remote, state.lastSync, state.missingCount)
        let authorsKnown = try store.remoteAuthorsKnown()
        if arguments.has("--json") {
            var object: JSONObject = [
                "store": .string(store.directory),
                "events": .number(JSONNumber(status.events)),
                "records": .object(status.records.mapValues { .number(JSONNumber($0)) }),
                "pendingRecords": .number(JSONNumber(state.pendingRecords)),
                "unacknowledgedEvents": .number(JSONNumber(state.unacknowledgedEvents)),
                "skippedRecords": .number(JSONNumber(state.skippedRecords)),
                "missingFromServer": .number(JSONNumber(missing)),
                "rejectedRecords": .number(JSONNumber(state.rejectedRecords)),
                "openConflicts": state.openConflicts.map { .number(JSONNumber($0)) } ?? .null,
                "inSync": .bool(state.isInSync),
                "summary": .string(state.summary),
                "liveEvents": .number(JSONNumber(status.liveEvents)),
                "liveBytes": .number(JSONNumber(status.liveBytes)),
                "archivedEvents": .number(JSONNumber(status.archivedEvents)),
                "archiveSegments": .number(JSONNumber(status.archiveSegments)),
                "archiveBytes": .number(JSONNumber(status.archiveBytes)),
                "remote": remote.map(JSONValue.string) ?? .null,
                "lastSync": lastSync.map(lastSyncJSON) ?? .null,
                "access": .object(state.access.mapValues { .string($0.rawValue) }),
                "scopes": .object(try store.scopes().mapValues { .array($0.map { .string($0.description) }) }),
            ]
            object["remoteAuthorsKnown"] = authorsKnown.map(JSONValue.bool) ?? .null
            print(Output.json(.object(object)))
        } else {
            var rows = [["store", store.directory], ["events", "\(status.events)"]]
            if status.archiveSegments > 0 {
                rows.append(["live", "\(Plural.count(Int(status.liveEvents), "event")) in \(status.liveBytes) bytes"])
                rows.append(["archived", "\(Plural.count(Int(status.archivedEvents), "event")) in \(Plural.count(status.archiveSegments, "segment")), \(status.archiveBytes) bytes present"])
            }
            rows += status.records.keys.sorted().map { [$0, Plural.count(status.records[$0] ?? 0, "record")] }
            rows.append(["to push", "\(Plural.count(state.pendingRecords, "record")) (\(Plural.count(state.unacknowledgedEvents, "local event")) not yet acknowledged by a server)"])
            if state.rejectedRecords > 0 {
                rows.append(["refused", "\(Plural.count(state.rejectedRecords, "record")) the server refused at the last push, held: "
                    + "not sent again until edited or reverted (evsync why <Entity> <id> says why; sync --resend-refused sends them again)"])
            }
            switch state.openConflicts {
            case 0: break
            case let open?: rows.append(["conflicts", "\(open) decided by policy, to review (evsync conflicts --open)"])
            case nil: rows.append(["conflicts", "unknown: an event of the log cannot be read (evsync log verify says which)"])
            }
            if missing > 0 {
                rows.append(["missing", "\(Plural.count(missing, "record")) the server lacks, kept here (it lost them?): "
                    + "evsync sync --missing push-back puts them back, evsync sync --missing delete deletes them here"])
            }
            if state.skippedRecords > 0 {
                rows.append(["skipped", "\(state.skippedRecords) server record\(state.skippedRecords == 1 ? "" : "s") could not be stored (their skipped events say why)"])
            }
            rows.append(["remote", remote.map(Output.safe) ?? "none yet (evsync sync --remote URL)"])
            if authorsKnown == false {
                rows.append(["authors", "unknown for remote changes: the server keeps no history (Kinto: kinto.plugins.history), so they are credited to the remote"])
            }
            // Read-write is what a store expects: only what is less is said.
            for (entity, access) in state.access.sorted(by: { $0.key < $1.key }) where access != .readWrite {
                rows.append(["access", "\(entity) \(accessText(access))"])
            }
            // "In sync" below is of what the store holds: a scope says what that is.
            for (entity, conditions) in try store.scopes().sorted(by: { $0.key < $1.key }) {
                rows.append(["scope", Output.safe("\(entity) where " + conditions.map(\.description).joined(separator: " and ")) + " (evsync scope)"])
            }
            rows.append(["last sync", lastSync.map(lastSyncText) ?? "never"])
            rows.append(["sync", Output.safe(state.summary)])
            print(rows.map { $0[0].padding(toLength: 10, withPad: " ", startingAt: 0) + $0[1] }.joined(separator: "\n"))
        }
    }

    /// An entity's access in words, for `status`'s `access` line.
    private static func accessText(_ access: EntityAccess) -> String {
        switch access {
        case .readWrite: "read-write"
        case .readOnly: "read-only: a change made here is refused before it is written (--force keeps it, held until access is granted)"
        case .readAndCreate: "read and create: new records go up; a change to another's record is refused by the server, and held"
        case .createOnly: "create-only: records made here go up; the server shows only those"
        case .sharedRecords: "shared records: only those shared with this account arrive; the server decides each change"
        case .readWriteSome: "read, and write some: only records shared for writing or made here may change; the server decides each change"
        case .noAccess: "none: the server lets this account neither read nor write it; a change made here is refused"
        }
    }

    /// `lastSync` of `status --json`: `{"at", "result"}`, with `error` when it failed on one and `interrupted` when stopped.
    private static func lastSyncJSON(_ sync: LastSync) -> JSONValue {
        var object: JSONObject = ["at": .string(sync.iso8601), "result": .string(sync.result.rawValue)]
        if let error = sync.error { object["error"] = .string(error) }
        if sync.interrupted { object["interrupted"] = true }
        return .object(object)
    }

    /// `2026-12-01T06:00:00+01:00 (failed: cannot reach …)`: what happened in words (`--json` keeps `newData`, …).
    private static func lastSyncText(_ sync: LastSync) -> String {
        let outcome = if sync.interrupted {
            "interrupted before it was done"
        } else {
            switch sync.result {
            case .newData: "changes synced"
            case .noData: "nothing new"
            case .failed: sync.error == nil ? "done, but the server refused changes" : "failed"
            }
        }
        return "\(LocalTime.iso8601(milliseconds: sync.at)) (\(outcome)\(sync.error.map { ": " + Output.safe($0) } ?? ""))"
    }
}
