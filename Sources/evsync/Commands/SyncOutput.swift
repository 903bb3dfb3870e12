import EventStore
import EventSync
import Foundation

/// What `sync` prints when a sync ends, once or under `--watch`: the report on stdout (a line, or one JSON
/// object), refusals and warnings on stderr, and what ends the command thrown.
struct SyncOutput: Sendable {
    let json: Bool
    let quiet: Bool
    let feedback: SyncFeedback

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
        if json {
            print(SyncCommand.json(report))
        } else if !(quiet && report.result == .noData && !report.interrupted) {
            print(feedback.line(SyncCommand.summary(report)))
        }
        fflush(nil)
        for rejection in report.rejected { printError("evsync: the server refused \(rejection)") }
        SyncCommand.warn(report)
        if report.interrupted {
            throw CLIError(.interrupted, "sync interrupted; run sync again to finish")
        }
    }
}
