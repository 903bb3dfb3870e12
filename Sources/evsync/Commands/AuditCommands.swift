import EventStore
import Foundation

/// blame, diff, conflicts, resolve, revert, why: acting on the history. The questions are answered by
/// the store (`Store+Audit`, `Store+Restore`); these only parse and print.
enum AuditCommands {
    static let blame = Command(
        name: "blame", section: .history,
        usage: "evsync blame <Entity> <id> [--json]",
        summary: "who set each field, when, from where",
        description: """
        For each field of the record: its value, the event that set it (its number and time), who made it,
        and whether it was made here or came from the server (with the server's version).
        """,
        positionals: 2...2,
        options: [Option("--json", help: "{entity, id, fields: {field: {value, seq, at, by, origin, kind, version?}}}")]
    ) { arguments, global in
        let words = arguments.positionals
        let store = try global.openStore(create: false)
        guard let blame = try store.blame(words[0], id: words[1]) else {
            throw CLIError(.noInput, "no \(try store.entity(words[0]).name) with id '\(words[1])'")
        }
        if arguments.has("--json") {
            print(try AuditJSON.text(AuditJSON.BlameResult(blame)))
        } else {
            // As `list`: fitted on a terminal, whole through a pipe.
            var table = TableWriter(header: ["field", "value", "event", "at", "from", "by"], columns: Terminal.columns) { print($0) }
            for origin in blame.fields {
                table.add([Output.safe(origin.field), Output.cell(origin.value), "#\(origin.event.seq)",
                           LocalTime.iso8601(milliseconds: origin.event.at), source(origin.event), Output.safe(origin.event.author)])
            }
            table.finish()
            if !table.hidden.isEmpty { printError("(too wide to show: \(table.hidden.joined(separator: ", ")))") }
        }
    }

    static let diff = Command(
        name: "diff", section: .history,
        usage: "evsync diff --from POINT [--to POINT] [Entity] [--json]",
        summary: "records added, changed, deleted between two points",
        description: """
        The records added, changed (field by field, old → new) and deleted between two points of the log,
        in the order of their last change. A POINT is an event number (the state after it), an ISO 8601
        date or date-time, or last-sync (the state before the last sync's changes); --to defaults to now.
        """,
        positionals: 0...1,
        options: [
            Option("--from", value: "POINT", help: "the earlier point"),
            Option("--to", value: "POINT", help: "the later point (default: now)"),
            Option("--json", help: "an array of {entity, id, change: added|changed|deleted, fields: {field: {old?, new?}}}"),
        ]
    ) { arguments, global in
        guard let fromText = arguments.value("--from") else { throw arguments.usageError("--from is required") }
        let store = try global.openStore(create: false)
        let from = try point(fromText, option: "--from", store: store)
        let to = try arguments.value("--to").map { try point($0, option: "--to", store: store) }
        let json = arguments.has("--json")
        var counts: [RecordDiff.Kind: Int] = [:]
        // The array opens with its first entry, so that an error before it (an archive segment missing) leaves stdout empty.
        let (start, end) = try store.diff(from: from, to: to, entity: arguments.positionals.first) { change in
            if json {
                print((counts.isEmpty ? "[" : ",") + (try AuditJSON.text(AuditJSON.DiffEntry(change))), terminator: "")
            } else {
                let mark = switch change.kind { case .added: "+" case .changed: "~" case .deleted: "-" case .left: "<" }
                print("\(mark) \(Output.safe("\(change.entity)/\(change.id)"))  \(change.kind.rawValue)")
                for field in change.changes { print("    " + fieldChange(field)) }
            }
            counts[change.kind, default: 0] += 1
        }
        if json {
            print(counts.isEmpty ? "[]" : "]")
        } else {
            let total = counts.values.reduce(0, +)
            let left = counts[.left].map { ", \($0) left (not deleted)" } ?? ""
            print("\(total == 0 ? "no change" : "\(counts[.added] ?? 0) added, \(counts[.changed] ?? 0) changed, \(counts[.deleted] ?? 0) deleted\(left)") between event \(start) and event \(end)")
        }
    }

    static let conflicts = Command(
        name: "conflicts", section: .history,
        usage: "evsync conflicts [--open] [--json]",
        summary: "every conflict, and what won",
        description: """
        Every conflict the log holds, oldest first: the record, each field changed on both sides with the local
        and the server's value, what won and under which policy, and the resolve that decided it again.
        """,
        positionals: 0...0,
        options: [
            Option("--open", help: "only the conflicts no `evsync resolve` has decided"),
            Option("--json", help: "an array of {seq, at, entity, id, policy, won, deleted, fields: [{field, local?, server?, won}], resolvedBy}"),
        ]
    ) { arguments, global in
        let conflicts = try global.openStore(create: false).conflicts(openOnly: arguments.has("--open"))
        if arguments.has("--json") {
            print(try AuditJSON.text(conflicts.map(AuditJSON.ConflictDetails.entry)))
            return
        }
        for conflict in conflicts {
            let event = conflict.event
            let state = conflict.resolvedBy.map { "resolved by #\($0.seq)" } ?? "open"
            print("#\(event.seq)  \(LocalTime.iso8601(milliseconds: event.at))  \(Output.safe("\(event.entity)/\(event.recordID)"))  \(event.policy?.rawValue ?? "")  \(state)")
            if let deleted = conflict.deleted {
                print("    deleted \(deleted == .local ? "here" : "on the server"), changed \(deleted == .local ? "on the server" : "here"): \(conflict.won.rawValue) won")
            }
            for field in conflict.fields {
                print("    \(Output.safe(field.field)): local \(value(field.local)), server \(value(field.server)): \(field.won.rawValue) won")
            }
        }
        print("(\(conflicts.count) \(arguments.has("--open") ? "open " : "")conflict\(conflicts.count == 1 ? "" : "s"))")
    }

    static let resolve = Command(
        name: "resolve", section: .history,
        usage: "evsync resolve <event> --take local|server [--json]",
        summary: "decide a conflict again",
        description: """
        Decides the conflict event <event> (its number, as `conflicts` lists it) again: appends a local change that
        gives the fields changed on both sides the chosen side's values (for an update against a delete, that side's
        whole record). The next sync pushes it through the usual conditional writes; `conflicts --open` no longer lists it.
        """,
        positionals: 1...1,
        options: [
            Option("--take", value: "local|server", help: "whose values to keep"),
            Option("--json", help: "{conflict, take, entity, id, seq, changes: [{field, old?, new?}]}"),
        ]
    ) { arguments, global in
        let text = arguments.positionals[0]
        guard let seq = UInt64(text.hasPrefix("#") ? String(text.dropFirst()) : text), seq > 0 else {
            throw arguments.usageError("<event> is an event number, not '\(text)'")
        }
        guard let side = arguments.value("--take").flatMap(Conflict.Side.init(rawValue:)) else {
            throw arguments.usageError("--take takes local or server")
        }
        let restoration = try global.openStore(create: false).resolve(conflict: seq, take: side)
        if arguments.has("--json") {
            print(try AuditJSON.text(AuditJSON.Merged(first: AuditJSON.RestorationResult(restoration),
                                                      second: AuditJSON.Resolved(conflict: seq, take: side.rawValue))))
        } else {
            for change in restoration.changes { print("    " + fieldChange(change)) }
            print("resolved conflict #\(seq), taking the \(side.rawValue) values (event #\(restoration.event?.seq ?? 0)); the next sync pushes it")
        }
    }

    static let revert = Command(
        name: "revert", section: .history,
        usage: "evsync revert <Entity> <id> --to POINT [--dry-run] [--json]",
        summary: "restore a record as it was",
        description: """
        Appends the local change that restores the record as it was at POINT (an event number, an ISO 8601 date
        or date-time, or last-sync), re-creating it if it was deleted since, after showing it field by field.
        The next sync pushes it. Nothing is written when the record already is so.
        """,
        positionals: 2...2,
        options: [
            Option("--to", value: "POINT", help: "the point to restore"),
            Option("--dry-run", help: "show the change, write nothing"),
            Option("--json", help: "{entity, id, to, dryRun, kind, seq, changes: [{field, old?, new?}]}"),
        ]
    ) { arguments, global in
        let words = arguments.positionals
        guard let toText = arguments.value("--to") else { throw arguments.usageError("--to is required") }
        let store = try global.openStore(create: false)
        let to = try point(toText, option: "--to", store: store)
        let dryRun = arguments.has("--dry-run")
        let restoration = try store.revert(words[0], id: words[1], to: to, dryRun: dryRun)
        let name = Output.safe("\(restoration.entity)/\(restoration.id)")
        if arguments.has("--json") {
            print(try AuditJSON.text(AuditJSON.Merged(first: AuditJSON.RestorationResult(restoration),
                                                      second: AuditJSON.Reverted(to: restoration.point ?? 0, dryRun: dryRun))))
        } else if restoration.changes.isEmpty {
            printError("evsync: no change: \(name) is as it was at event \(restoration.point ?? 0)")
        } else {
            for change in restoration.changes { print("    " + fieldChange(change)) }
            if dryRun {
                print("would restore \(name) as it was at event \(restoration.point ?? 0) (dry run: nothing written)")
            } else {
                print("restored \(name) as it was at event \(restoration.point ?? 0) (event #\(restoration.event?.seq ?? 0)); the next sync pushes it")
            }
        }
    }

    static let why = Command(
        name: "why", section: .history,
        usage: "evsync why <Entity> <id> [--json]",
        summary: "why a record is pending, or that it is in step",
        description: """
        Whether the record differs from the server's state as the log last heard it: which fields, the event that
        set each here, since when it has been pending, and the last exchange with the server about it.
        """,
        positionals: 2...2,
        options: [Option("--json", help: "{entity, id, pending, state, version, fields: [{field, local?, server?, since}], pendingSince, lastExchange, missingFromServer, held}")]
    ) { arguments, global in
        let words = arguments.positionals
        let store = try global.openStore(create: false)
        guard let reason = try store.whyPending(words[0], id: words[1]) else {
            throw CLIError(.noInput, "no \(try store.entity(words[0]).name) with id '\(words[1])' in the log")
        }
        let lost = try store.recordsMissingFromServer()[reason.entity]?.contains(reason.id) == true
        if arguments.has("--json") {
            var result = AuditJSON.WhyResult(reason)
            result.missingFromServer = lost
            print(try AuditJSON.text(result))
            return
        }
        let name = Output.safe("\(reason.entity)/\(reason.id)")
        let version = reason.projection.version.map { Output.safe(" (server version \($0))") } ?? ""
        switch reason.state {
        case .inStep where lost:
            print("\(name) is kept here, but the server lacks it (lost, wiped or restored from an older backup?)\(version): "
                + "evsync sync --missing push-back puts it back, evsync sync --missing delete deletes it here")
        case .inStep: print("\(name) is in step with the server\(version)")
        case .deleted: print("\(name) is deleted, here and on the server")
        case .left: print("\(name) left this store, not deleted: \(Output.safe(reason.lastEvent.reason ?? "no longer readable")); it comes back if access is given back")
        case .createdHere: print("\(name) is pending: created here, not on the server yet")
        case .deletedHere: print("\(name) is pending: deleted here, still on the server\(version)")
        case .changedHere: print("\(name) is pending: \(reason.fields.count) field\(reason.fields.count == 1 ? "" : "s") differ\(reason.fields.count == 1 ? "s" : "") from the server's state\(version)")
        }
        if reason.state == .changedHere {
            for field in reason.fields {
                let since = field.since.map { "  (\(describe($0)))" } ?? ""
                print("    \(Output.safe(field.field)): here \(value(field.local)), server \(value(field.server))\(since)")
            }
        }
        if let since = reason.pendingSince { print("pending since \(describe(since))") }
        if let last = reason.lastExchange {
            let outcome = switch last.kind {
            case .acknowledged: "the server accepted a push\(last.version.map { " as version \($0)" } ?? "")"
            case .rejected: "the server refused a push: \(last.reason ?? "")"
            default: "a conflict with the server's version \(last.version.map(\.token) ?? "?"), settled \(last.policy?.rawValue ?? "")"
            }
            print(Output.safe("last exchange: \(outcome) (#\(last.seq) \(LocalTime.iso8601(milliseconds: last.at)))"))
            if reason.isHeld {
                print("held: syncs do not send it again until it is edited or reverted (evsync sync --resend-refused sends it)")
            }
        } else {
            print("last exchange: none (never pushed, and no conflict)")
        }
    }

    // MARK: Helpers

    /// A point given to `--from`/`--to`: what `--as-of` takes (`LocalTime.logPoint`: a time without an
    /// offset is local, as the times printed for people), or `last-sync`.
    static func point(_ text: String, option: String, store: Store) throws -> LogPoint {
        if text == "last-sync" { return try store.lastSyncPoint() }
        guard let point = LocalTime.logPoint(text) else {
            throw CLIError(.usage, "\(option) takes an event number, an ISO 8601 date or time (local without an offset), HH:MM "
                + "or last-sync, not '\(Output.safe(text))'")
        }
        return point
    }

    /// `local`, `server v123`, or `conflict (server-wins)`: where an event's change came from.
    static func source(_ event: Event) -> String {
        if event.kind == .conflict { return "conflict (\(event.policy?.rawValue ?? ""))" }
        guard event.origin == .remote else { return "local" }
        return Output.safe("server" + (event.version.map { " v\($0)" } ?? ""))
    }

    /// `#12 2026-…+01:00 local by me@host` (local time, as `log tail`).
    static func describe(_ event: Event) -> String {
        Output.safe("#\(event.seq) \(LocalTime.iso8601(milliseconds: event.at)) \(event.kind.rawValue) \(source(event)) by \(event.author)")
    }

    static func value(_ value: JSONValue?) -> String { value.map(Output.display) ?? "(unset)" }

    static func fieldChange(_ change: FieldChange) -> String {
        "\(Output.safe(change.field)): \(value(change.old)) → \(value(change.new))"
    }
}
