import Synchronization

/// Hands each sync status to every subscriber, each with a buffer of its own
/// that keeps every start (`.inProgress(nil)`) and finished report but only the
/// latest 16 progress steps of a sync: a subscriber that falls behind misses
/// steps, never a "sync completed" notice, and `sync --watch --json` never
/// loses a sync's line. At most 1,024 statuses wait, the oldest dropped first.
///
/// Subscribers are held weakly: a stream dropped without being iterated to its
/// end leaves nothing behind. A stream subscribed for one scheduler run ends
/// (after what it holds) when that run is stopped.
final class StatusBroadcast: Sendable {
    private struct Entry: Sendable {
        weak var subscriber: StatusSubscriber?
        /// The scheduler run whose end ends this stream; nil for one that never ends.
        let run: UInt64?
    }

    private let entries = Mutex<(live: [Entry], endedRuns: Set<UInt64>)>(([], []))

    func subscribe(run: UInt64? = nil) -> AsyncStream<SyncStatus> {
        let subscriber = StatusSubscriber()
        // A run that ended before this subscription (a stop racing a start) gives a stream that ends at once.
        let ended = entries.withLock { entries in
            if let run, entries.endedRuns.contains(run) { return true }
            entries.live.append(Entry(subscriber: subscriber, run: run))
            return false
        }
        if ended { subscriber.end() }
        // The stream's closures are all that hold the subscriber strongly.
        return AsyncStream(unfolding: { await subscriber.next() }, onCancel: { subscriber.cancel() })
    }

    func yield(_ status: SyncStatus) {
        let live = entries.withLock { entries in
            entries.live.removeAll { $0.subscriber == nil }
            return entries.live.compactMap(\.subscriber)
        }
        for subscriber in live { subscriber.yield(status) }
    }

    /// Subscribers whose stream is still there (tests).
    var count: Int { entries.withLock { $0.live.count { $0.subscriber != nil } } }

    /// Ends the streams of scheduler run `run`, once their subscribers have read what they hold.
    func end(run: UInt64) {
        let ending = entries.withLock { entries in
            entries.endedRuns.insert(run)
            let ending = entries.live.filter { $0.run == run }.compactMap(\.subscriber)
            entries.live.removeAll { $0.run == run || $0.subscriber == nil }
            return ending
        }
        for subscriber in ending { subscriber.end() }
    }
}

/// One subscriber's buffer and the consumer waiting on it, if any.
final class StatusSubscriber: Sendable {
    /// Progress steps kept of one sync, and statuses kept in all.
    static let keptSteps = 16, kept = 1_024

    private struct State {
        var buffer: [SyncStatus] = []
        var waiter: CheckedContinuation<SyncStatus?, Never>?
        var ended = false
    }

    private let state = Mutex(State())

    func yield(_ status: SyncStatus) {
        let waiter = state.withLock { state -> CheckedContinuation<SyncStatus?, Never>? in
            if state.ended { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.buffer.append(status)
            // The steps since the last start or report: the oldest goes when there are too many.
            let steps = state.buffer.reversed().prefix { if case .inProgress(_?) = $0 { true } else { false } }.count
            if steps > Self.keptSteps { state.buffer.remove(at: state.buffer.count - steps) }
            if state.buffer.count > Self.kept { state.buffer.removeFirst() }
            return nil
        }
        waiter?.resume(returning: status)
    }

    /// The next status, or nil once ended and drained (or cancelled).
    func next() async -> SyncStatus? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> SyncStatus?? in
                    if !state.buffer.isEmpty { return .some(state.buffer.removeFirst()) }
                    if state.ended { return .some(nil) }
                    state.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            cancel()
        }
    }

    /// No more statuses come; what the buffer holds is still read.
    func end() {
        let waiter = state.withLock { state in
            state.ended = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// The consumer is gone: nothing more is read.
    func cancel() {
        state.withLock { $0.buffer.removeAll() }
        end()
    }
}
