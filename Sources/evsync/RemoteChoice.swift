import EventStore
import EventSync
import Foundation
import KintoAdapter
import ParseAdapter
import DAVAdapter
import CPrctl

/// Which remote adapter a sync talks to: read from the remote URL, or given
/// with `--remote-type TYPE` (or `EVSYNC_REMOTE_TYPE`) where the URL cannot tell.
///
/// - A URL whose path ends in `/buckets/<id>` is Kinto.
/// - A URL whose scheme is `parse+http(s)` is Parse, `dav+http(s)` CalDAV/CardDAV: the forms those remotes
///   are remembered in, so that `--protocol` need not be given again.
/// - A given type is used whatever the URL; the adapter refuses a URL it
///   cannot use, with its own one-line error.
/// - An unknown type, or a URL no adapter recognises and no type, is bad
///   usage (exit 64), and the error says what to give.
///
/// Adding a server is one `RemoteFactory` in `RemoteFactory.all`.
struct RemoteChoice: Sendable {
    /// A known remote type, as `--remote-type` spells it: one factory of `RemoteFactory.all`.
    struct Kind: Sendable {
        let factory: RemoteFactory

        var rawValue: String { factory.type }

        /// `--remote-type` (or its alias `--protocol`), else `EVSYNC_REMOTE_TYPE`, checked; nil when none is given.
        static func given(option: String?, environment: String?, optionName: String = "--remote-type") throws(CLIError) -> Kind? {
            guard let text = option ?? environment else { return nil }
            guard let factory = RemoteFactory.all.first(where: { $0.type == text.lowercased() }) else {
                let source = option != nil ? optionName : "EVSYNC_REMOTE_TYPE"
                throw CLIError(.usage, "unknown remote type '\(text)' (\(source)); known types: \(known)")
            }
            return Kind(factory: factory)
        }

        /// The type a URL's shape names, if any.
        static func recognising(_ url: String) -> Kind? {
            RemoteFactory.all.first { $0.recognises(url) }.map(Kind.init)
        }

        static var known: String { RemoteFactory.all.map(\.type).joined(separator: ", ") }
    }

    let kind: Kind
    let url: String

    /// - Parameter given: the type given with `--remote-type` or `EVSYNC_REMOTE_TYPE`, which wins over the URL's shape.
    init(url: String, given: Kind?) throws(CLIError) {
        // Checked before the URL can appear in any message: a password in it must not reach stderr.
        guard url.utf8.count <= Store.maxRemoteAddressLength else {
            throw CLIError(.usage, "the remote URL is too long (\(url.utf8.count) bytes; evsync takes at most \(Store.maxRemoteAddressLength))")
        }
        if let components = URLComponents(string: url), components.user != nil || components.password != nil {
            throw CLIError(.usage, "put credentials in EVSYNC_AUTH or --auth-file, not in the remote URL")
        }
        guard let kind = given ?? Kind.recognising(url) else {
            throw CLIError(.usage, "cannot tell what server \(Self.shown(url)) is (a Kinto remote ends in /buckets/<bucket id>); "
                + "give --remote-type TYPE or set EVSYNC_REMOTE_TYPE (known types: \(Kind.known))")
        }
        self.kind = kind
        self.url = url
    }

    /// A URL as an error may show it: only one that is plainly scheme://host/path. Anything else
    /// (`user:password@host`, no scheme) may hold a password where the parser saw none.
    static func shown(_ url: String) -> String {
        guard let components = URLComponents(string: url), components.host?.isEmpty == false, !url.contains("@") else { return "the remote URL" }
        return Output.safe(url)
    }

    /// The remote's address as its adapter checks and spells it (what keys the pull cursors), without
    /// credentials: `evsync remote URL` remembers a remote that only a sync needs the keys of.
    func address() throws -> String {
        try kind.factory.address(url)
    }

    /// Refuses to talk to a remote other than the store's own (`evsync remote`) once the store has synced:
    /// a store never changes its server silently, since a mistyped URL would then be taken for a server
    /// that lost every record. `evsync remote set URL` moves it on purpose.
    func checkIsRemote(of store: Store) throws {
        guard let current = try store.rememberedRemote(), try store.syncedRemote() != nil else { return }
        let address = try address()
        guard address != current else { return }
        throw CLIError(.usage, "this store syncs with \(Output.safe(current)), not \(Output.safe(address)): "
            + "to move it there on purpose, evsync remote set \(Output.safe(address))")
    }

    /// A new adapter for the remote; called once per sync.
    ///
    /// - Parameters:
    ///   - allowInsecureAuth: the user's explicit consent to send credentials over plain http to another machine.
    ///   - wantsTotals: ask the server for record counts first, to show progress.
    ///   - retries: attempts per request, when not the adapter's default.
    ///   - activity: told of each request and retry, for `-v` and a terminal.
    ///   - shouldStop: true once the user asked to stop (Ctrl-C): no more retries.
    func makeRemote(credentials: Credentials?, allowInsecureAuth: Bool, wantsTotals: Bool, retries: Int?,
                    activity: ((RemoteActivity) -> Void)? = nil, shouldStop: @escaping () -> Bool = { false }) throws -> any SyncRemote {
        try kind.factory.make(url, RemoteFactory.Options(credentials: credentials, allowInsecureAuth: allowInsecureAuth, wantsTotals: wantsTotals,
                                                         retries: retries, activity: activity, shouldStop: shouldStop))
    }

    /// Parse's keys: `EVSYNC_PARSE_APPLICATION_ID` with `EVSYNC_PARSE_REST_API_KEY`,
    /// `EVSYNC_PARSE_SESSION_TOKEN` or `EVSYNC_PARSE_MASTER_KEY` (warned about), else
    /// the auth file's `applicationId:restApiKey`. Never echoed.
    static func parseCredentials(file: Credentials?) throws(CLIError) -> ParseCredentials {
        let environment = ProcessInfo.processInfo.environment.filter { !$0.value.isEmpty }
        guard let applicationID = environment["EVSYNC_PARSE_APPLICATION_ID"] ?? file?.user else {
            throw CLIError(.usage, "no Parse credentials: set EVSYNC_PARSE_APPLICATION_ID and EVSYNC_PARSE_REST_API_KEY "
                + "(or EVSYNC_PARSE_SESSION_TOKEN), or give --auth-file FILE holding applicationId:restApiKey")
        }
        // Keys in memory: no core file may hold them (as for EVSYNC_AUTH).
        _ = evsync_prctl_set_undumpable()
        let masterKey = environment["EVSYNC_PARSE_MASTER_KEY"]
        if masterKey != nil { _ = warnOfMasterKey }
        return ParseCredentials(applicationID: applicationID,
                                restAPIKey: environment["EVSYNC_PARSE_REST_API_KEY"] ?? (environment["EVSYNC_PARSE_APPLICATION_ID"] == nil ? file?.password : nil),
                                sessionToken: environment["EVSYNC_PARSE_SESSION_TOKEN"], masterKey: masterKey)
    }

    /// Said once per process, however many remotes are made.
    private static let warnOfMasterKey: Void = {
        printError("evsync: warning: syncing with the Parse master key (EVSYNC_PARSE_MASTER_KEY): it bypasses every "
            + "permission and ACL on the server; prefer a REST API key or a session token")
    }()
}
