import EventStore
import EventSync
import Foundation

/// `evsync remote`: the remote a plain `sync` talks to, shown or set (as `git remote -v` / `set-url`).
enum RemoteCommand {
    static let remote = Command(
        name: "remote", section: .server,
        usage: "evsync remote [set URL] [--json]",
        summary: "show or set the remote",
        description: """
        Without URL, prints the remote a plain `evsync sync` talks to (nothing, and a note on stderr, when there
        is none yet). `evsync remote set URL` (or `evsync remote URL`) checks URL (a Kinto bucket URL ends in
        /buckets/<bucket id>; EVSYNC_REMOTE_TYPE names another type) and makes it the store's remote, without
        contacting the server: the one way to move a store that has synced to another server, since a sync
        naming another remote (sync --remote, EVSYNC_REMOTE) is refused once the store has synced. The first
        sync with a new remote reads it from the start; when the store holds records as synced and the new
        remote holds none of them, that sync changes nothing and says so (sync --missing push-back copies them
        there). `sync --remote URL` remembers its URL once a sync with it has gone through.
        """,
        positionals: 0...2,
        options: [Option("--json", help: #"{"remote": URL or null, "type": TYPE or null}"#)]
    ) { arguments, global in
        let givenType = try RemoteChoice.Kind.given(option: nil, environment: EnvironmentVariable.value("EVSYNC_REMOTE_TYPE"))
        var positionals = arguments.positionals
        if positionals.count == 2 {
            guard positionals.removeFirst() == "set" else {
                throw CLIError(.usage, "evsync remote takes set URL (or URL alone), not two arguments")
            }
        } else if positionals == ["set"] {
            throw CLIError(.usage, "evsync remote set needs the remote's URL")
        }
        if let url = positionals.first {
            let choice = try RemoteChoice(url: url, given: givenType)
            let address = try choice.address()
            let store = try global.openStore(create: true)
            let previous = try store.rememberedRemote()
            try store.rememberRemote(address)
            if let previous, previous != address {
                printError("evsync: the store's remote is now \(Output.safe(address)) (was \(Output.safe(previous))); "
                    + "the next sync reads it from the start")
            }
            return
        }
        let store = try global.openStore(create: false)
        let remote = try store.rememberedRemote()
        if arguments.has("--json") {
            let type = remote.flatMap { RemoteChoice.Kind.recognising($0) ?? givenType }
            print(Output.json(["remote": remote.map(JSONValue.string) ?? .null, "type": type.map { .string($0.rawValue) } ?? .null]))
        } else if let remote {
            print(Output.safe(remote))
        } else {
            printError("evsync: no remote yet: set one with evsync remote URL, or sync once with evsync sync --remote URL")
        }
    }
}
