import EventStore
import EventSync
import Foundation

/// `evsync remote`: the remote a plain `sync` talks to, shown or set (as `git remote -v` / `set-url`).
enum RemoteCommand {
    static let remote = Command(
        name: "remote", section: .server,
        usage: "evsync remote [URL] [--json]",
        summary: "show or set the remote",
        description: """
        Without URL, prints the remote a plain `evsync sync` talks to (nothing, and a note on stderr, when there
        is none yet). With URL, checks it (a Kinto bucket URL ends in /buckets/<bucket id>; EVSYNC_REMOTE_TYPE
        names another type) and remembers it without contacting the server. `sync --remote URL` remembers its
        URL only once a sync with it has gone through, so a mistyped one never replaces a good one.
        """,
        positionals: 0...1,
        options: [Option("--json", help: #"{"remote": URL or null, "type": TYPE or null}"#)]
    ) { arguments, global in
        let givenType = try RemoteChoice.Kind.given(option: nil, environment: EnvironmentVariable.value("EVSYNC_REMOTE_TYPE"))
        if let url = arguments.positionals.first {
            let choice = try RemoteChoice(url: url, given: givenType)
            let address = try choice.address()
            let store = try global.openStore(create: true)
            try store.rememberRemote(address)
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
