import EventSync
import EventStore
import Foundation
import Synchronization

/// `sync --watch SECONDS`: the engine's own scheduler (`SyncEngine.start(every:)`) syncs at once, again about
/// 20 ms after each local change made by any process (a person's edit is one commit: a longer debounce only
/// delays it; a burst still waits at most ten times that), every SECONDS, and after a failing server with backoff
/// (1 s doubling up to SECONDS; the same server failure again: on doubling past it, up to 5 minutes); each
/// sync's result is printed as its status arrives.
enum SyncWatch {
    static func run(_ engine: SyncEngine, every seconds: Double, policy: ConflictPolicy, missing: MissingRecords?,
                    output: SyncOutput) throws {
        let stop: @Sendable () -> Void = { Task { await engine.stop() } }
        let interruption = Interruption(isSyncing: { engine.isSyncing }, onRequest: stop) { output.feedback.say($0) }
        defer { withExtendedLifetime(interruption) {} }
        let statuses = engine.start(every: .seconds(seconds), debounce: .milliseconds(20), policy: policy, missing: missing)
        // A Ctrl-C before the scheduler was there to stop.
        if Interruption.requested { stop() }
        try runBlocking {
            do {
                for await status in statuses {
                    switch status {
                    case .inProgress(let step?) where output.feedback.terminal: output.feedback.showProgress(step)
                    case .inProgress: break
                    case .finished(let report): try output.show(report, failure: report.failure, retryIn: report.retryIn)
                    }
                }
            } catch {
                await engine.stop()
                throw error
            }
            // Only `stop()` ends the statuses: Ctrl-C between syncs, or during one that went through anyway. The
            // last sync was done, so there is nothing to run again for.
            throw CLIError(.interrupted, "sync --watch stopped")
        }
    }
}

/// Ctrl-C during a sync: the first one asks the engine to stop after the
/// current page (its transaction is then committed with the cursor) and ends a
/// wait for a retry, or a watcher's wait for its next sync, at once; a second one quits at once.
final class Interruption {
    /// One per process, as the signal is.
    private static let flag = Atomic<Bool>(false)
    private let source: any DispatchSourceSignal
    private let queue = DispatchQueue(label: "evsync.interrupt")

    /// - Parameters:
    ///   - isSyncing: whether a sync runs, so that there is a page to finish (`SyncEngine.isSyncing`: false
    ///     before its result is printed, so a Ctrl-C after that line ends a watcher's wait, nothing more).
    ///   - onRequest: called at the first Ctrl-C (a watcher stops its scheduler).
    ///   - say: writes a line on stderr (clearing a progress line first).
    init(isSyncing: @escaping @Sendable () -> Bool, onRequest: (@Sendable () -> Void)? = nil,
         say: @escaping @Sendable (String) -> Void) {
        // A process may start with SIGINT blocked (a parent's mask is inherited:
        // Foundation's Process spawns from a thread that blocks it). Blocked,
        // the signal would never arrive and Ctrl-C would do nothing.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
        signal(SIGINT, SIG_IGN)
        source = DispatchSource.makeSignalSource(signal: SIGINT, queue: queue)
        source.setEventHandler {
            if Interruption.flag.exchange(true, ordering: .relaxed) {
                say("evsync: sync interrupted")
                exit(CLIError.Code.interrupted.rawValue)
            }
            // Between syncs, the wait ends and says so itself.
            if isSyncing() { say("evsync: stopping after the current page (Ctrl-C again to quit now)") }
            onRequest?()
        }
        source.resume()
    }

    static var requested: Bool { flag.load(ordering: .relaxed) }
}
