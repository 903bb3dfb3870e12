import EventStore
import EventSync
import KintoAdapter
import CPrctl
import Foundation
import Synchronization

/// `evsync sync`: the CLI face of `SyncEngine`.
enum SyncCommand {
    static let sync = Command(
        name: "sync", section: .server,
        usage: "evsync sync [--remote URL] [--remote-type TYPE] [--conflicts server-wins|client-wins] [--json] [--watch SECONDS] [--auth-file FILE] [--allow-insecure-auth]",
        summary: "pull, then push",
        description: """
        Pulls what changed on the server, then pushes what changed here.
        The remote's URL says what server it is (a Kinto bucket URL ends in /buckets/<bucket id>);
        --remote-type TYPE (or EVSYNC_REMOTE_TYPE) says it where the URL cannot. Known types: \(RemoteChoice.Kind.known).
        Credentials: EVSYNC_AUTH=user:password or --auth-file FILE holding user:password (warned about when
        others can read it). They are not sent over plain http to another machine unless --allow-insecure-auth
        (or EVSYNC_ALLOW_INSECURE_AUTH=1) is given.
        Exit 69 when the server cannot be reached or keeps failing, 77 when it refuses the credentials,
        75 when a sync is already running.
        """,
        positionals: 0...0,
        options: [
            Option("--remote", value: "URL", help: "a Kinto bucket URL (or EVSYNC_REMOTE); remembered once used"),
            Option("--remote-type", value: "TYPE", help: "the server's type where the URL cannot tell (or EVSYNC_REMOTE_TYPE): \(RemoteChoice.Kind.known)"),
            Option("--conflicts", value: "server-wins|client-wins",
                   help: "who wins a field changed on both sides (default server-wins)"),
            Option("--json", help: #"one object: {"result": "newData"|"noData"|"failed", "pulled", "pushed", "conflicts", "skipped", …}"#),
            Option("--watch", value: "SECONDS", help: "sync again every SECONDS (0.1 to 86400) until interrupted"),
            Option("--auth-file", value: "FILE", help: "a file holding user:password (else EVSYNC_AUTH)"),
            Option("--allow-insecure-auth", help: "send credentials over plain http to another machine (or EVSYNC_ALLOW_INSECURE_AUTH=1)"),
        ]
    ) {
        try run($0, $1)
    }

    static func run(_ arguments: Arguments, _ global: GlobalOptions) throws {
        let policyText = arguments.value("--conflicts") ?? ConflictPolicy.serverWins.rawValue
        guard let policy = ConflictPolicy(rawValue: policyText) else {
            throw CLIError(.usage, "--conflicts takes server-wins or client-wins, not '\(policyText)'")
        }
        var interval: Double?
        if let text = arguments.value("--watch") {
            // Below a tenth of a second a watcher busy-loops on the server; past a day, cron does the job better.
            guard let seconds = Double(text), Self.watchRange.contains(seconds) else {
                throw CLIError(.usage, "--watch takes a number of seconds from \(Self.watchRange.lowerBound) to \(Int(Self.watchRange.upperBound)) (a day), not '\(text)'")
            }
            interval = seconds
        }
        let environment = ProcessInfo.processInfo.environment.filter { !$0.value.isEmpty }
        let givenType = try RemoteChoice.Kind.given(option: arguments.value("--remote-type"), environment: environment["EVSYNC_REMOTE_TYPE"])
        let credentials = try SyncCommand.credentials(authFile: arguments.value("--auth-file"))
        let allowInsecureAuth = arguments.has("--allow-insecure-auth") || environment["EVSYNC_ALLOW_INSECURE_AUTH"] == "1"
        // The adapter refuses a URL it cannot use before anything else: a remote given here
        // before the store is opened (or created), a remembered one right after.
        func checked(_ url: String) throws -> RemoteChoice {
            let choice = try RemoteChoice(url: url, given: givenType)
            _ = try choice.makeRemote(credentials: credentials, allowInsecureAuth: allowInsecureAuth, wantsTotals: false, retries: nil)
            return choice
        }
        let given = try (arguments.value("--remote") ?? environment["EVSYNC_REMOTE"]).map(checked)
        let store = try global.openStore(create: true)
        guard let choice = try given ?? store.rememberedRemote().map(checked) else {
            throw CLIError(.usage, "no remote: give --remote URL (a Kinto bucket URL) or set EVSYNC_REMOTE")
        }
        let showProgress = isatty(STDERR_FILENO) == 1
        let retries = environment["EVSYNC_RETRIES"].flatMap(Int.init)
        let engine = SyncEngine(store: store) {
            try choice.makeRemote(credentials: credentials, allowInsecureAuth: allowInsecureAuth, wantsTotals: showProgress, retries: retries)
        }
        let interruption = Interruption()
        let progress: ((SyncProgress) -> Void)? = showProgress ? { SyncCommand.showProgress($0) } : nil
        while true {
            let report: SyncReport
            do {
                report = try engine.syncBlocking(policy: policy, progress: progress, shouldStop: { interruption.requested() })
            } catch {
                if showProgress { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
                if arguments.has("--json") {
                    var failed = error.partialReport ?? SyncReport()
                    failed.error = error.message
                    print(SyncCommand.json(failed))
                    fflush(nil)
                }
                // A watcher rides out an unreachable or failing server; anything else ends it.
                guard let interval, error.code == .unavailable || error.code == .server, !interruption.requested() else { throw error }
                printError("evsync: \(Output.safe(error.message)); trying again in \(String(format: "%g", interval)) s")
                interruption.wait(seconds: interval)
                if interruption.requested() { return }
                continue
            }
            if showProgress { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
            print(arguments.has("--json") ? SyncCommand.json(report) : SyncCommand.summary(report))
            fflush(nil)
            for rejection in report.rejected { printError("evsync: the server refused \(rejection)") }
            warn(report)
            guard let interval, !interruption.requested() else {
                if !report.rejected.isEmpty { throw CLIError(.failure, "\(report.rejected.count) change(s) refused by the server; they stay pending") }
                return
            }
            interruption.wait(seconds: interval)
            if interruption.requested() { return }
        }
    }

    /// The intervals `--watch` accepts, in seconds.
    static let watchRange = 0.1...86_400.0

    /// `--auth-file`, else `EVSYNC_AUTH`; both hold `user:password`. Never echoed.
    ///
    /// Once credentials are in memory the process is made undumpable
    /// (`PR_SET_DUMPABLE` 0): a crash or a SIGQUIT leaves no core file holding
    /// the password, and no other process of the user can read it through
    /// ptrace or /proc. Marking only the buffer that holds them
    /// (`MADV_DONTDUMP`) would not do: Swift copies strings freely, libcurl
    /// keeps its own copy, and `EVSYNC_AUTH` sits in the environment block.
    static func credentials(authFile: String?) throws -> Credentials? {
        if let path = authFile {
            keepOutOfCoreDumps()
            guard let data = FileManager.default.contents(atPath: path) else { throw CLIError(.noInput, "cannot read the auth file \(path)") }
            warnIfOthersCanRead(path)
            guard let credentials = Credentials(String(decoding: data, as: UTF8.self)) else {
                throw CLIError(.dataError, "the auth file \(path) must hold user:password")
            }
            return credentials
        }
        guard let text = ProcessInfo.processInfo.environment["EVSYNC_AUTH"], !text.isEmpty else { return nil }
        keepOutOfCoreDumps()
        guard let credentials = Credentials(text) else { throw CLIError(.dataError, "EVSYNC_AUTH must be user:password") }
        return credentials
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
            "rejected": .array(report.rejected.map { .string($0.description) }),
            "skipped": .array(report.skipped.map { skip in
                ["entity": .string(skip.entity), "id": skip.id.map(JSONValue.string) ?? .null, "reason": .string(skip.reason)]
            }),
            "reread": .array(report.reread.map(JSONValue.string)),
            "verified": .array(report.verified.map(JSONValue.string)),
        ]
        if report.interrupted { object["interrupted"] = true }
        if let error = report.error { object["error"] = .string(error) }
        return Output.json(.object(object))
    }

    static func summary(_ report: SyncReport) -> String {
        if report.result == .noData, !report.interrupted { return "nothing to do: already in sync" }
        var text = "sync \(report.result == .failed ? "finished with refusals" : "completed"): pulled \(report.pulled), deleted here \(report.deletedHere), pushed \(report.pushed), deleted on the server \(report.deletedThere), conflicts \(report.conflicts)"
        if !report.skipped.isEmpty { text += ", skipped \(report.skipped.count)" }
        if report.interrupted { text += " (interrupted; run sync again to finish)" }
        return text
    }

    /// What went on despite something odd on the server, one line each on
    /// stderr: the sync did what it could, so it still exits 0.
    static func warn(_ report: SyncReport) {
        for entity in report.reread {
            printError("evsync: the server's \(entity) data is older than the last sync (restored from a backup?): read it again from the start")
        }
        for entity in report.verified {
            printError("evsync: the server's \(entity) data lost a change no pull can bring (a purged deletion?): checked it against a listing (evsync verify --remote)")
        }
        let shown = 10
        for skip in report.skipped.prefix(shown) { printError("evsync: skipped a server record that cannot be stored: \(skip)") }
        if report.skipped.count > shown {
            printError("evsync: … and \(report.skipped.count - shown) more skipped records (sync --json lists them all)")
        }
    }

    @Sendable static func showProgress(_ step: SyncProgress) {
        let of = step.total.map { " of \($0)" } ?? ""
        let line = "\r\u{1B}[K\(step.phase.rawValue) \(step.entity): \(step.records)\(of) records, \(step.pages) \(step.phase == .pulling ? "pages" : "batches")"
        FileHandle.standardError.write(Data(line.utf8))
    }
}

/// Ctrl-C during a sync: the first one asks the engine to stop after the
/// current page (its transaction is then committed with the cursor); a second one quits at once.
final class Interruption {
    /// One per process, as the signal is.
    private static let flag = Atomic<Bool>(false)
    private let source: any DispatchSourceSignal
    private let queue = DispatchQueue(label: "evsync.interrupt")

    init() {
        signal(SIGINT, SIG_IGN)
        source = DispatchSource.makeSignalSource(signal: SIGINT, queue: queue)
        source.setEventHandler {
            if Interruption.flag.exchange(true, ordering: .relaxed) { exit(130) }
            printError("evsync: stopping after the current page (Ctrl-C again to quit now)")
        }
        source.resume()
    }

    func requested() -> Bool { Interruption.flag.load(ordering: .relaxed) }

    /// Sleeps up to `seconds`, waking early when interrupted.
    func wait(seconds: Double) {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline, !requested() { Thread.sleep(forTimeInterval: min(0.1, deadline.timeIntervalSinceNow)) }
    }
}
