import EventStore
import EventSync
import Foundation

/// `evsync verify --remote`: is the server still what the log believes it holds?
enum VerifyCommand {
    static let verify = Command(
        name: "verify", section: .server,
        usage: "evsync verify --remote [--repair] [--json] [--auth-file FILE]",
        summary: "compare the log with the server's records",
        description: """
        Lists the ids and versions of the server's records (the remembered remote, or EVSYNC_REMOTE) and
        compares them with what the log believes the server holds. Reports, by kind: purged (live here, gone
        there without a tombstone: kinto purge-deleted, or lost), unseen (a version the log never saw, below
        the pull cursor: no pull will bring it), rolledBack (older there than the version the server
        acknowledged: restored from a backup). --repair turns them into events (a remote deletion, the record
        as pulled, the record pending again) so that the next sync converges. Exit 0 when nothing was found
        or everything found was repaired, 1 when differences remain; otherwise the exit codes of sync.
        `evsync log verify` checks the log itself.
        """,
        positionals: 0...0,
        options: [
            Option("--remote", help: "compare with the server (required: the only thing verify compares with so far)"),
            Option("--repair", help: "append the events that make the next sync converge"),
            Option("--json", help: #"one object: {"findings": [{"entity", "id", "kind", "logVersion", "serverVersion"}], "listed": {Entity: n}, "repaired", "unchecked": [Entity…]}"#),
            Option("--auth-file", value: "FILE", help: "a file holding user:password (else EVSYNC_AUTH)"),
        ]
    ) { arguments, global in
        guard arguments.has("--remote") else {
            throw CLIError(.usage, "verify needs --remote (to check the log itself: evsync log verify)")
        }
        let credentials = try SyncCommand.credentials(authFile: arguments.value("--auth-file"))
        // The variables sync reads, checked as sync checks them. Plain http to another machine: EVSYNC_ALLOW_INSECURE_AUTH=1.
        let allowInsecureAuth = try EnvironmentVariable.flag("EVSYNC_ALLOW_INSECURE_AUTH")
        let retries = try EnvironmentVariable.integer("EVSYNC_RETRIES", in: SyncCommand.retriesRange)
        let givenType = try RemoteChoice.Kind.given(option: nil, environment: EnvironmentVariable.value("EVSYNC_REMOTE_TYPE"))
        let store = try global.openStore(create: false)
        guard let url = try EnvironmentVariable.value("EVSYNC_REMOTE") ?? store.rememberedRemote() else {
            throw CLIError(.usage, "no remote: sync with one first (evsync sync --remote URL) or set EVSYNC_REMOTE")
        }
        let choice = try RemoteChoice(url: url, given: givenType)
        try choice.checkIsRemote(of: store)
        _ = try choice.makeRemote(credentials: credentials, allowInsecureAuth: allowInsecureAuth, wantsTotals: false, retries: nil)
        let engine = SyncEngine(store: store) {
            try choice.makeRemote(credentials: credentials, allowInsecureAuth: allowInsecureAuth, wantsTotals: false, retries: retries)
        }
        let repair = arguments.has("--repair")
        let result = try engine.verifyRemote(repair: repair)
        if arguments.has("--json") {
            print(Output.json(.object([
                "findings": .array(result.findings.map { finding in
                    ["entity": .string(finding.entity), "id": .string(finding.id), "kind": .string(finding.kind.rawValue),
                     "logVersion": finding.logVersion.map { .string($0.token) } ?? .null,
                     "serverVersion": finding.serverVersion.map { .string($0.token) } ?? .null]
                }),
                "listed": .object(result.listed.mapValues { .number(JSONNumber($0)) }),
                "repaired": .number(JSONNumber(result.repaired)),
                "unchecked": .array(result.unchecked.map(JSONValue.string)),
            ])))
        } else {
            for finding in result.findings {
                let versions = "log \(finding.logVersion?.token ?? "none"), server \(finding.serverVersion?.token ?? "none")"
                print("\(finding.kind.rawValue)  \(finding.entity)/\(Output.safe(finding.id))  (\(versions)): \(describe(finding))")
            }
            let listed = result.listed.values.reduce(0, +)
            // A scoped entity was not checked: what the line says is of the others only.
            let unchecked = result.unchecked.isEmpty ? ""
                : "; not checked: \(result.unchecked.joined(separator: ", ")) (a scope's listing is not the server's)"
            print((result.findings.isEmpty
                  ? "the server holds what the log believes (\(Plural.count(listed, "record")) listed)"
                  : "\(Plural.count(result.findings.count, "difference")) (\(Plural.count(listed, "record")) listed)"
                    + (repair ? "; \(result.repaired) repaired: the next sync converges" : "; evsync verify --remote --repair mends them"))
                + unchecked)
        }
        if !result.findings.isEmpty, result.repaired < result.findings.count {
            throw CLIError(.failure, "\(Plural.count(result.findings.count - result.repaired, "difference")) with the server remain\(result.findings.count - result.repaired == 1 ? "s" : "")")
        }
    }

    static func describe(_ finding: RemoteVerification.Finding) -> String {
        switch finding.kind {
        case .purged: "live here, gone from the server without a tombstone"
        case .unseen where finding.logVersion == finding.serverVersion:
            "live on the server at the version the log has, but deleted here (when another server lacked it?)"
        case .unseen: "on the server at a version the log never saw, below the pull cursor"
        case .rolledBack: "older on the server than the version it acknowledged (restored from a backup?)"
        }
    }
}
