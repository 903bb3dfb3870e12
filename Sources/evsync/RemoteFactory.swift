import DAVAdapter
import EventStore
import EventSync
import Foundation
import KintoAdapter
import ParseAdapter

/// One kind of server the CLI can sync with: its `--remote-type` name, the URLs it recognises, how it spells a
/// remembered address, and how its adapter is made. `all` is the list `RemoteChoice` picks from.
struct RemoteFactory: Sendable {
    /// What a sync asks of an adapter beyond its URL.
    struct Options {
        var credentials: Credentials?
        var allowInsecureAuth: Bool
        var wantsTotals: Bool
        var retries: Int?
        var activity: ((RemoteActivity) -> Void)?
        var shouldStop: () -> Bool

        /// The retries, the watcher and the stop every HTTP adapter takes.
        var settings: HTTPRemoteSettings {
            var settings = HTTPRemoteSettings(transferLimits: TestLimits.transfer, onActivity: activity, shouldStop: shouldStop)
            if let retries { settings.retry.attempts = retries }
            return settings
        }
    }

    let type: String
    /// The word of the schema keyword `x-evsync-<word>` this remote reads (`dav`), if any: a schema with one no
    /// factory reads is refused (`GlobalOptions.schemaRegistry`), so that a typo is not kept unread.
    var schemaProtocol: String? = nil
    let recognises: @Sendable (String) -> Bool
    let address: @Sendable (String) throws -> String
    let make: @Sendable (String, Options) throws -> any SyncRemote

    static let all: [RemoteFactory] = [kinto, parse, dav]

    /// The `x-evsync-<word>` schema keywords some remote reads, by word.
    static var schemaProtocols: Set<String> { Set(all.compactMap(\.schemaProtocol)) }

    static let kinto = RemoteFactory(type: "kinto", schemaProtocol: KintoRemote.schemaProtocol, recognises: { url in
        let segments = URLComponents(string: url)?.path.split(separator: "/") ?? []
        return segments.count >= 2 && segments[segments.count - 2] == "buckets"
    }, address: { url in
        try KintoRemote(bucketURL: url, credentials: nil).address
    }, make: { url, options in
        let remote = try KintoRemote(bucketURL: url, credentials: options.credentials, allowingInsecureCredentials: options.allowInsecureAuth,
                                     settings: options.settings)
        remote.wantsTotals = options.wantsTotals
        if let window = TestLimits.value("EVSYNC_SETTLE_WINDOW_MS") { remote.settleWindow = Int64(window) }
        return remote
    })

    static let parse = RemoteFactory(type: "parse", recognises: { url in
        URLComponents(string: url)?.scheme?.lowercased().hasPrefix("parse+") == true
    }, address: { url in
        ParseRemote.address(of: try ParseRemote.checkedServer(url, allowingInsecureCredentials: false))
    }, make: { url, options in
        try ParseRemote(serverURL: url, credentials: try RemoteChoice.parseCredentials(file: options.credentials),
                        allowingInsecureCredentials: options.allowInsecureAuth, settings: options.settings)
    })

    /// CalDAV/CardDAV (docs/dav.md): the server's or the principal's URL, remembered as `dav+https://…`.
    static let dav = RemoteFactory(type: "dav", schemaProtocol: DAVRemote.schemaProtocol, recognises: { url in
        URLComponents(string: url)?.scheme?.lowercased().hasPrefix("dav+") == true
    }, address: { url in
        DAVRemote.address(of: try DAVRemote.checkedServer(url, sendsCredentials: false))
    }, make: { url, options in
        try DAVRemote(serverURL: url, credentials: options.credentials, allowingInsecureCredentials: options.allowInsecureAuth,
                      settings: options.settings)
    })
}

/// Limits the tests shrink so that a trickling or oversized server, or a settling cursor, is met in seconds
/// (docs/contributing.md): read by debug builds only, release builds always use the documented numbers.
/// The library reads no variable; the CLI sets what it read on each adapter.
enum TestLimits {
    /// A positive whole number from the environment, in a debug build.
    static func value(_ name: String) -> Int? {
        #if DEBUG
        EnvironmentVariable.value(name).flatMap(Int.init).flatMap { $0 > 0 ? $0 : nil }
        #else
        nil
        #endif
    }

    static var transfer: TransferLimits {
        var limits = TransferLimits()
        if let seconds = value("EVSYNC_SLOW_TIME") { limits.slowTime = seconds }
        if let bytes = value("EVSYNC_MAX_RESPONSE") { limits.maximumResponseBytes = bytes }
        return limits
    }
}
