import EventStore
import EventSync
import Foundation
import Synchronization

/// What `sync` prints when a sync ends, once or under `--watch`: the report on stdout (a line, or one JSON
/// object), refusals and warnings on stderr, and what ends the command thrown.
final class SyncOutput: Sendable {
    let json: Bool
    let quiet: Bool
    let feedback: SyncFeedback
    /// Under `--watch`: a sync that did nothing prints nothing, and a warning is printed once, until the
    /// situation it describes changes (a watcher's log is read for what happened, not for every tick).
    let watching: Bool
    /// The warnings the last sync printed, under `--watch`.
    private let lastWarnings = Mutex<[String]>([])

    init(json: Bool, quiet: Bool, feedback: SyncFeedback, watching: Bool) {
        (self.json, self.quiet, self.feedback, self.watching) = (json, quiet, feedback, watching)
    }

    /// - Parameters:
    ///   - failure: the error the sync stopped on, if it did.
    ///   - retryIn: when a watcher tries again; nil ends the command on any failure.
    /// - Throws: `failure` when nothing tries again; `.interrupted` for a sync that Ctrl-C stopped.
    func show(_ report: SyncReport, failure: SyncError?, retryIn: Duration?) throws {
        feedback.clearProgress()
        if let failure {
            var failed = report
            failed.error = failure.message
            let unreachable = failure.code == .unavailable || failure.code == .server
            // Ctrl-C while the server was being waited for (a retry): the sync stopped, as asked.
            if Interruption.requested, unreachable {
                failed.interrupted = true
                print(json ? SyncCommand.json(failed) : feedback.line(SyncCommand.summary(failed)))
                fflush(nil)
                throw CLIError(.interrupted, "sync interrupted: \(failure.message); run sync again to finish")
            }
            if json {
                print(SyncCommand.json(failed))
                fflush(nil)
            }
            // A watcher rides out an unreachable or failing server; anything else ends it.
            guard let retryIn, unreachable else { throw failure }
            let seconds = Double(retryIn.components.seconds) + Double(retryIn.components.attoseconds) / 1e18
            printError(feedback.line("evsync: \(Output.safe(failure.message)); trying again in \(String(format: "%g", seconds)) s"))
            return
        }
        // Changes held since an earlier refusal keep a sync from `.noData`; a watcher says so once, not at every tick.
        var unheld = report
        unheld.held = []
        let idle = unheld.result == .noData && !report.interrupted && (report.held.isEmpty || watching)
        if json {
            print(SyncCommand.json(report))
        } else if !((quiet || watching) && idle) {
            print(feedback.line(SyncCommand.summary(report)))
        }
        fflush(nil)
        for rejection in report.rejected { printError(feedback.line("evsync: the server refused \(rejection)")) }
        let warnings = SyncCommand.warnings(report)
        let repeated = lastWarnings.withLock { last in
            defer { last = warnings }
            return watching && last == warnings
        }
        if !repeated { for warning in warnings { printError(feedback.line(warning)) } }
        if report.interrupted {
            throw CLIError(.interrupted, "sync interrupted; run sync again to finish")
        }
    }
}
