import EventStore
import EventSync
import KintoAdapter
import Foundation

/// history, log tail, rebuild-views, status.
enum LogCommands {
    static let history = Command(flagOptions: ["--json"]) { arguments, global in
        let words = try arguments.positionals(1, 1, usage: "evsync history <id> [--json]")
        let events = try global.openStore(create: false).history(of: words[0])
        if arguments.has("--json") {
            print("[" + events.map(Output.json).joined(separator: ",") + "]")
        } else if events.isEmpty {
            throw CLIError(.noInput, "no events for id '\(words[0])'")
        } else {
            print(Output.history(events))
        }
    }

    static let tail = Command(valueOptions: ["-n"], flagOptions: ["--follow", "-f", "--json"]) { arguments, global in
        _ = try arguments.positionals(0, 0, usage: "evsync log tail [-n N] [--follow] [--json]")
        let countText = arguments.value("-n") ?? "10"
        guard let count = Int(countText), count >= 0 else { throw CLIError(.usage, "-n takes a whole number, not '\(countText)'") }
        let store = try global.openStore(create: false)
        let json = arguments.has("--json")
        let render: @Sendable (Event) -> String = { json ? Output.json($0) : Output.line($0) }
        let initial = try store.lastEvents(count)
        for event in initial { print(render(event)) }
        fflush(nil)
        guard arguments.has("--follow") || arguments.has("-f") else { return }
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

    static let rebuildViews = Command(flagOptions: ["--verify"]) { arguments, global in
        _ = try arguments.positionals(0, 0, usage: "evsync rebuild-views [--verify]")
        let store = try global.openStore(create: false)
        if arguments.has("--verify") {
            let differences = try store.verifyViews()
            guard differences.isEmpty else {
                for difference in differences { print(difference) }
                throw CLIError(.failure, "the views differ from the log (\(differences.count)\(differences.count >= 100 ? "+" : "") difference\(differences.count == 1 ? "" : "s")); run `evsync rebuild-views` to repair them")
            }
            print("views match the log (\(try store.lastSeq()) events)")
        } else {
            let count = try store.rebuildViews()
            print("rebuilt the views from \(count) events")
        }
    }

    static let status = Command(flagOptions: ["--json"]) { arguments, global in
        _ = try arguments.positionals(0, 0, usage: "evsync status [--json]")
        let store = try global.openStore(create: false)
        let status = try store.status()
        let remote = try store.rememberedRemote()
        let lastSync = try store.lastSync()
        if arguments.has("--json") {
            var object: JSONObject = [
                "store": .string(store.directory),
                "events": .number(Double(status.events)),
                "records": .object(status.records.mapValues { .number(Double($0)) }),
                "pendingRecords": .number(Double(status.pendingRecords)),
                "unacknowledgedEvents": .number(Double(status.unacknowledgedEvents)),
                "remote": remote.map(JSONValue.string) ?? .null,
                "lastSync": lastSync.map { ["at": .string($0.iso8601), "result": .string($0.result.rawValue)] } ?? .null,
            ]
            print(Output.json(.object(object)))
        } else {
            var rows = [["store", store.directory], ["events", "\(status.events)"]]
            rows += status.records.keys.sorted().map { [$0, "\(status.records[$0] ?? 0) records"] }
            rows.append(["to push", "\(status.pendingRecords) records (\(status.unacknowledgedEvents) local events not yet acknowledged by a server)"])
            rows.append(["remote", remote ?? "none yet (evsync sync --remote URL)"])
            rows.append(["last sync", lastSync.map { "\($0.iso8601) (\($0.result.rawValue))" } ?? "never"])
            print(rows.map { $0[0].padding(toLength: 10, withPad: " ", startingAt: 0) + $0[1] }.joined(separator: "\n"))
        }
    }
}
