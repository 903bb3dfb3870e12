import EventStore
import EventSync
import KintoAdapter
import CPrctl
import Sealing
import Foundation
import Synchronization

/// `evsync sync`: the CLI face of `SyncEngine`.
enum SyncCommand {
    static let sync = Command(
        name: "sync", section: .server,
        usage: "evsync sync [--remote URL] [--remote-type TYPE] [--protocol TYPE] [--conflicts server-wins|client-wins] [--missing push-back|delete] [--json] [--watch SECONDS] [--auth-file FILE] [--allow-insecure-auth] [--encrypt] [--passphrase-file FILE] [--resend-refused] [--quiet] [--verbose]",
        summary: "pull, then push",
        description: """
        Pulls what changed on the server, then pushes what changed here.
        The remote's URL says what server it is (a Kinto bucket URL ends in /buckets/<bucket id>);
        --remote-type TYPE (or EVSYNC_REMOTE_TYPE) says it where the URL cannot. Known types: \(RemoteChoice.Kind.known).
        The remote is remembered once a sync with it has gone through (see evsync remote).
        --protocol parse (an alias of --remote-type) syncs with the Parse Server mounted at URL; credentials then come from
        EVSYNC_PARSE_APPLICATION_ID with EVSYNC_PARSE_REST_API_KEY or EVSYNC_PARSE_SESSION_TOKEN, or --auth-file
        holding applicationId:restApiKey (EVSYNC_PARSE_MASTER_KEY only if set, with a warning).
        Credentials: --auth-file FILE (or EVSYNC_AUTH_FILE) holding user:password (warned about when others
        can read it), or EVSYNC_AUTH=user:password. They are not sent over plain http to another machine unless
        --allow-insecure-auth (or EVSYNC_ALLOW_INSECURE_AUTH=1) is given.
        --encrypt seals every record end to end (Kinto and Parse; docs/encryption.md): the server keeps them and
        reads none. The passphrase comes from --passphrase-file FILE, EVSYNC_PASSPHRASE_FILE, or a prompt without
        echo on the terminal, never from the command line; once a store synced sealed with a remote, it never
        syncs with it in clear.
        A change the server refuses (no permission, invalid for it, too large) is kept here and held: later syncs do
        not send it again by themselves, and say so, until it is edited or reverted (evsync why ENTITY ID tells the
        server's reason), or --resend-refused sends the held changes once more (say, once a permission is granted).
        Exit 1 when changes were refused or are held, or an entity can no longer be read;
        69 when the server cannot be reached or keeps failing, 77 when it refuses the credentials,
        78 when the passphrase does not open the remote's keys,
        75 when a sync is already running, 130 when Ctrl-C stopped it (the next sync finishes the job).
        """,
        positionals: 0...0,
        options: [
            Option("--remote", value: "URL", help: "a Kinto bucket URL (or EVSYNC_REMOTE); remembered once a sync with it goes through"),
            Option("--remote-type", value: "TYPE", help: "the server's type where the URL cannot tell (or EVSYNC_REMOTE_TYPE): \(RemoteChoice.Kind.known)"),
            Option("--protocol", value: "TYPE", help: "the same as --remote-type; a parse remote is remembered with its type"),
            Option("--conflicts", value: "server-wins|client-wins",
                   help: "who wins a field changed on both sides (default server-wins)"),
            Option("--missing", value: "push-back|delete",
                   help: "records the server lost (kept here until you decide): push them back, or delete them here"),
            Option("--json", help: #"one object: {"result": "newData"|"noData"|"failed", "pulled", "pushed", "conflicts", "skipped", …}"#),
            Option("--watch", value: "SECONDS", help: "keep syncing until interrupted: about 20 ms after each local change (by any process) and every SECONDS (0.1 to 86400); each line starts with the time"),
            Option("--auth-file", value: "FILE", help: "a file holding user:password (or EVSYNC_AUTH_FILE; else EVSYNC_AUTH)"),
            Option("--allow-insecure-auth", help: "send credentials over plain http to another machine (or EVSYNC_ALLOW_INSECURE_AUTH=1)"),
            Option("--encrypt", help: "seal every record end to end: the server keeps them and reads none (Kinto, Parse); remembered for the remote"),
            Option("--passphrase-file", value: "FILE", help: "a file holding the passphrase of an encrypted remote (or EVSYNC_PASSPHRASE_FILE; else a prompt)"),
            Option("--resend-refused", help: "send again the changes the server refused before and that are held, unchanged since"),
            Option("--quiet", "-q", help: "print nothing when there is nothing to do"),
            Option("--verbose", "-v", help: "show each HTTP request and its status on stderr (never credentials)"),
        ]
    ) {
        try run($0, $1)
    }

    static func run(_ arguments: Arguments, _ global: GlobalOptions) throws {
        let policyText = arguments.value("--conflicts") ?? ConflictPolicy.serverWins.rawValue
        guard let policy = ConflictPolicy(rawValue: policyText) else {
            throw CLIError(.usage, "--conflicts takes server-wins or client-wins, not '\(policyText)'")
        }
        let missing = try arguments.value("--missing").map { text in
            guard let decision = MissingRecords(rawValue: text) else {
                throw CLIError(.usage, "--missing takes push-back or delete, not '\(text)'")
            }
            return decision
        }
        var interval: Double?
        if let text = arguments.value("--watch") {
            // Below a tenth of a second a watcher busy-loops on the server; past a day, cron does the job better.
            guard let seconds = Double(text), Self.watchRange.contains(seconds) else {
                throw CLIError(.usage, "--watch takes a number of seconds from \(Self.watchRange.lowerBound) to \(Int(Self.watchRange.upperBound)) (a day), not '\(text)'")
            }
            interval = seconds
        }
        let json = arguments.has("--json"), quiet = arguments.has("--quiet"), verbose = arguments.has("--verbose")
        let resendRefused = arguments.has("--resend-refused")
        if resendRefused, interval != nil {
            throw CLIError(.usage, "--resend-refused is for one sync, not --watch: a refusal sent again at every sync is what holding it avoids")
        }
        let givenType = try RemoteChoice.Kind.given(option: arguments.value("--remote-type") ?? arguments.value("--protocol"),
                                                    environment: EnvironmentVariable.value("EVSYNC_REMOTE_TYPE"),
                                                    optionName: arguments.value("--remote-type") == nil ? "--protocol" : "--remote-type")
        let retries = try EnvironmentVariable.integer("EVSYNC_RETRIES", in: Self.retriesRange)
        let allowInsecureAuth = try arguments.has("--allow-insecure-auth") || EnvironmentVariable.flag("EVSYNC_ALLOW_INSECURE_AUTH")
        let credentials = try SyncCommand.credentials(authFile: arguments.value("--auth-file"))
        // The adapter refuses a URL it cannot use before anything else: a remote given here
        // before the store is opened (or created), a remembered one right after.
        func checked(_ url: String) throws -> RemoteChoice {
            let choice = try RemoteChoice(url: url, given: givenType)
            _ = try choice.makeRemote(credentials: credentials, allowInsecureAuth: allowInsecureAuth, wantsTotals: false, retries: nil)
            return choice
        }
        let given = try (arguments.value("--remote") ?? EnvironmentVariable.value("EVSYNC_REMOTE")).map(checked)
        let noRemote = CLIError(.usage, "no remote: give --remote URL (a Kinto bucket URL "
            + "https://…/buckets/<id>, a CalDAV/CardDAV server dav+https://…, or a Parse Server parse+https://…), set EVSYNC_REMOTE, or set one with evsync remote URL")
        // A new store remembers no remote: without one given, none is made (in what may be the wrong directory).
        guard given != nil || global.storeExists else { throw noRemote }
        let terminal = isatty(STDERR_FILENO) == 1
        let feedback = SyncFeedback(terminal: terminal, verbose: verbose, timestamped: interval != nil)
        let output = SyncOutput(json: json, quiet: quiet, feedback: feedback, watching: interval != nil)
        let encrypt = arguments.has("--encrypt"), passphraseFile = arguments.value("--passphrase-file")
        if passphraseFile != nil, !encrypt, !global.storeExists { throw Self.plainWithPassphrase }
        // A wrong passphrase writes nothing, a new store included: before one is made, the passphrase is checked
        // against the remote's keyring (an existing store's is checked by the sync, before it writes or sends).
        var checkedPassphrase: String?
        if encrypt, !global.storeExists, let given {
            let remote = try given.makeRemote(credentials: credentials, allowInsecureAuth: allowInsecureAuth, wantsTotals: false, retries: retries)
            checkedPassphrase = try Self.checkedPassphrase(file: passphraseFile, kind: given.kind, remote: remote, output: output)
        }
        let store = try global.openStore(create: true)
        try given?.checkIsRemote(of: store)
        guard let choice = try given ?? store.rememberedRemote().map(checked) else { throw noRemote }
        let probe = try choice.makeRemote(credentials: credentials, allowInsecureAuth: allowInsecureAuth, wantsTotals: false, retries: nil)
        for schema in store.schemas.entities where !probe.holds(schema) {
            printError("evsync: \(schema.name) has no place on this \(choice.kind.rawValue) server (no mapping for it); left out of this sync")
        }
        // For a sealed sync (`--encrypt`, or a remote this store synced sealed with), the passphrase is read once,
        // before the sync starts: a file's error is then the CLI's own, and a watcher asks once.
        let passphrase: String?
        if let checkedPassphrase {
            passphrase = checkedPassphrase
        } else if try encrypt || store.sealingValue("place", remote: probe.address) != nil {
            passphrase = try Self.passphrase(file: passphraseFile, kind: choice.kind)
        } else {
            if passphraseFile != nil { throw Self.plainWithPassphrase }
            passphrase = nil
        }
        let recheck = TestLimits.value("EVSYNC_ACCESS_RECHECK_MS").map { Duration.milliseconds($0) } ?? .seconds(15 * 60)
        let engine = SyncEngine(store: store, accessRecheck: recheck) {
            let remote = try choice.makeRemote(credentials: credentials, allowInsecureAuth: allowInsecureAuth, wantsTotals: terminal, retries: retries,
                                               activity: feedback.wantsActivity ? { feedback.show($0) } : nil,
                                               shouldStop: { Interruption.requested })
            return passphrase.map { text in SealedRemote(remote, store: store) { text } } ?? remote
        }
        if let interval {
            try SyncWatch.run(engine, every: interval, policy: policy, missing: missing, output: output)
            return
        }
        let interruption = Interruption(isSyncing: { engine.isSyncing }) { feedback.say($0) }
        defer { withExtendedLifetime(interruption) {} }
        let progress: ((SyncProgress) -> Void)? = terminal ? { feedback.showProgress($0) } : nil
        let report: SyncReport
        do {
            report = try engine.syncBlocking(policy: policy, missing: missing, resendRefused: resendRefused, progress: progress,
                                             shouldStop: { Interruption.requested })
        } catch {
            try output.show(error.partialReport ?? SyncReport(), failure: error, retryIn: nil)
            return
        }
        try output.show(report, failure: nil, retryIn: nil)
        if !report.unreadable.isEmpty {
            throw CLIError(.failure, "\(Plural.count(report.unreadable.count, "entity", plural: "entities")) this account may no longer read: "
                + report.unreadable.map(\.entity).joined(separator: ", ") + ", not synced until access is given back")
        }
        if !report.rejected.isEmpty || !report.held.isEmpty {
            var parts: [String] = []
            if !report.rejected.isEmpty { parts.append("\(Plural.count(report.rejected.count, "change")) refused by the server") }
            if !report.held.isEmpty { parts.append("\(Plural.count(report.held.count, "change")) refused before") }
            throw CLIError(.failure, parts.joined(separator: " and ") + ": kept here, held, not sent again until edited or reverted "
                + "(evsync why ENTITY ID says why; --resend-refused sends them again)")
        }
    }

    static let plainWithPassphrase = CLIError(.usage, "--passphrase-file is for an encrypted remote: add --encrypt")

    /// The passphrase of a first sealed sync into a store not made yet, checked against the remote's keyring
    /// first, so that a wrong one leaves no store behind; a failure is said as a sync's is (with --json, the object's `error`).
    static func checkedPassphrase(file: String?, kind: RemoteChoice.Kind, remote: any SyncRemote, output: SyncOutput) throws -> String {
        let text = try passphrase(file: file, kind: kind)
        do {
            try SealedRemote.checkPassphrase(text, of: remote)
        } catch let error as any RemoteError & Sendable {
            try output.show(SyncReport(), failure: SyncError(error.syncCode, error.description, cause: error), retryIn: nil)
            throw error
        }
        return text
    }

    /// The passphrase of a sealed sync; refused with CalDAV/CardDAV, whose apps must read what they show.
    static func passphrase(file: String?, kind: RemoteChoice.Kind) throws -> String {
        guard kind.rawValue != RemoteFactory.dav.type else {
            throw CLIError(.usage, "--encrypt is not offered with CalDAV/CardDAV: calendar and contact apps must read what they show")
        }
        return try PassphraseSource(file: file).read()
    }

    /// The attempts per request `EVSYNC_RETRIES` takes.
    static let retriesRange = 1...100

    /// The intervals `--watch` accepts, in seconds.
    static let watchRange = 0.1...86_400.0

    /// `--auth-file`, else `EVSYNC_AUTH_FILE`, else `EVSYNC_AUTH`; each holds `user:password`. Never echoed.
    ///
    /// Once credentials are in memory the process is made undumpable
    /// (`PR_SET_DUMPABLE` 0): a crash or a SIGQUIT leaves no core file holding
    /// the password, and no other process of the user can read it through
    /// ptrace or /proc. Marking only the buffer that holds them
    /// (`MADV_DONTDUMP`) would not do: Swift copies strings freely, libcurl
    /// keeps its own copy, and `EVSYNC_AUTH` sits in the environment block.
    static func credentials(authFile: String?) throws -> Credentials? {
        if let path = authFile ?? EnvironmentVariable.value("EVSYNC_AUTH_FILE") {
            keepOutOfCoreDumps()
            let source = authFile == nil ? "EVSYNC_AUTH_FILE" : "--auth-file"
            guard let data = FileManager.default.contents(atPath: path) else { throw unreadableAuthFile(path, source: source) }
            warnIfOthersCanRead(path)
            do {
                return try Credentials(userPassword: String(decoding: data, as: UTF8.self))
            } catch {
                throw CLIError(.dataError, "the auth file \(path) must hold user:password (\(error.reason))")
            }
        }
        guard let text = EnvironmentVariable.value("EVSYNC_AUTH") else { return nil }
        keepOutOfCoreDumps()
        do {
            return try Credentials(userPassword: text)
        } catch {
            throw CLIError(.dataError, "EVSYNC_AUTH must be user:password (\(error.reason))")
        }
    }

    /// An auth file that cannot be read, said without its name: a value given where a path belongs
    /// may be the password itself (`EVSYNC_AUTH_FILE=user:password`), and no error prints a secret.
    private static func unreadableAuthFile(_ path: String, source: String) -> CLIError {
        if path.contains(":") {
            return CLIError(.noInput, "\(source) names no readable file (it looks like user:password: did you mean EVSYNC_AUTH?)")
        }
        let reason = access(path, F_OK) == 0 ? "it cannot be read" : "no such file"
        return CLIError(.noInput, "\(source) names no readable file (\(reason); its value is not shown, in case it is a password)")
    }

    private static func keepOutOfCoreDumps() {
        if evsync_prctl_set_undumpable() != 0 {
            printError("evsync: warning: cannot keep the credentials out of core dumps (prctl: \(String(cString: strerror(errno))))")
        }
    }

    /// A password others can read is no longer secret: say so, as ssh and curl's netrc do (a warning, not a refusal).
    private static func warnIfOthersCanRead(_ path: String) {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & 0o044 != 0 else { return }
        printError("evsync: warning: the auth file \(path) can be read by other users (mode \(String(info.st_mode & 0o777, radix: 8))): chmod 600 it")
    }

    static func json(_ report: SyncReport) -> String {
        var object: JSONObject = [
            "result": .string(report.result.rawValue),
            "pulled": .number(JSONNumber(report.pulled)),
            "pushed": .number(JSONNumber(report.pushed)),
            "deletedHere": .number(JSONNumber(report.deletedHere)),
            "deletedThere": .number(JSONNumber(report.deletedThere)),
            "conflicts": .number(JSONNumber(report.conflicts)),
            "conflicted": .array(report.conflicted.map { ["entity": .string($0.entity), "id": .string($0.id)] }),
            "rejected": .array(report.rejected.map { .string($0.description) }),
            "held": .array(report.held.map { ["entity": .string($0.entity), "id": .string($0.id)] }),
            "unreadable": .array(report.unreadable.map { ["entity": .string($0.entity), "reason": .string($0.reason)] }),
            "left": .array(report.left.map { ["entity": .string($0.entity), "id": $0.id.map(JSONValue.string) ?? .null, "reason": .string($0.reason)] }),
            "skipped": .array(report.skipped.map { skip in
                ["entity": .string(skip.entity), "id": skip.id.map(JSONValue.string) ?? .null, "reason": .string(skip.reason)]
            }),
            "reread": .array(report.reread.map(JSONValue.string)),
            "verified": .array(report.verified.map(JSONValue.string)),
            "goneFromServer": .array(report.goneFromServer.map { ["entity": .string($0.entity), "id": $0.id.map(JSONValue.string) ?? .null] }),
        ]
        if report.interrupted { object["interrupted"] = true }
        if let error = report.error { object["error"] = .string(error) }
        return Output.json(.object(object))
    }

    static func summary(_ report: SyncReport) -> String {
        if report.result == .noData, !report.interrupted, report.goneFromServer.isEmpty { return "nothing to do: already in sync" }
        let outcome = report.interrupted ? "interrupted" : report.error != nil ? "failed" : report.result == .failed ? "finished with refusals" : "completed"
        var text = "sync \(outcome): pulled \(report.pulled), deleted here \(report.deletedHere), pushed \(report.pushed), deleted on the server \(report.deletedThere), conflicts \(report.conflicts)"
        if !report.skipped.isEmpty { text += ", skipped \(report.skipped.count)" }
        if !report.left.isEmpty { text += ", left this store \(report.left.count) (not deleted)" }
        if report.interrupted { text += " (run sync again to finish)" }
        if !report.conflicted.isEmpty { text += "\n" + conflictsLine(report.conflicted) }
        if !report.held.isEmpty { text += "\n" + heldLine(report.held) }
        return text
    }

    /// The changes held since an earlier refusal, by name, and the ways out.
    static func heldLine(_ records: [RecordReference]) -> String {
        let shown = 10
        var names = records.prefix(shown).map { Output.safe($0.description) }.joined(separator: ", ")
        if records.count > shown { names += " and \(records.count - shown) more" }
        return "held, refused by the server before and not sent again: \(names) (edit or revert them, or sync --resend-refused)"
    }

    /// The records in conflict, by name, and where to see what was overwritten.
    static func conflictsLine(_ records: [RecordReference]) -> String {
        let shown = 10
        var unique: [RecordReference] = []
        for record in records where !unique.contains(record) { unique.append(record) }
        var names = unique.prefix(shown).map { Output.safe($0.description) }.joined(separator: ", ")
        if unique.count > shown { names += " and \(unique.count - shown) more" }
        let example = unique.count == 1 ? Output.safe(unique[0].id) : "<id>"
        return "in conflict: \(names) (evsync history \(example) shows what each side had)"
    }

    /// What went on despite something odd on the server, one line each for
    /// stderr: the sync did what it could, so it still exits 0.
    static func warnings(_ report: SyncReport) -> [String] {
        var lines: [String] = []
        for entity in report.reread {
            lines.append("evsync: the server's \(entity) data is older than the last sync (restored from a backup?): read it again from the start")
        }
        for entity in report.verified {
            lines.append("evsync: the server's \(entity) data lost a change no pull can bring (a purged deletion?): checked it against a listing (evsync verify --remote)")
        }
        let shown = 10
        for entity in Set(report.goneFromServer.map(\.entity)).sorted() {
            let count = report.goneFromServer.count { $0.entity == entity }
            lines.append("evsync: the server lacks \(Plural.count(count, "\(Output.safe(entity)) record")) this store holds as synced, "
                + "with no tombstone (wiped, re-created, restored, or another server?): kept here; "
                + "evsync sync --missing push-back puts them back, evsync sync --missing delete deletes them here")
        }
        // One line per entity and reason.
        for (_, group) in Dictionary(grouping: report.left, by: { "\($0.entity)\u{0}\($0.reason)" }).sorted(by: { $0.key < $1.key }) {
            guard let first = group.first else { continue }
            let back = first.reason == Store.movedOutOfScope ? "one that moves back comes back" : "they come back if shared again"
            lines.append("evsync: \(Plural.count(group.count, "\(Output.safe(first.entity)) record")) left this store, "
                + "\(Output.safe(first.reason)): not deleted, here or on the server; \(back)")
        }
        for lost in report.unreadable {
            lines.append("evsync: \(Output.safe(lost.entity)) is not synced: \(Output.safe(lost.reason)); the records made or changed here "
                + "stay, and access given back brings back what left")
        }
        for skip in report.skipped.prefix(shown) { lines.append("evsync: skipped a server record that cannot be stored: \(skip)") }
        if report.skipped.count > shown {
            lines.append("evsync: … and \(report.skipped.count - shown) more skipped records (sync --json lists them all)")
        }
        return lines
    }
}
