public import EventStore
import Synchronization

extension SyncEngine {
    /// Starts syncing by itself, as an app's sync engine does: at once, shortly after each local change (made
    /// by this process or another), every `interval`, and whenever `syncNow()` asks, until `stop()`.
    ///
    /// ```swift
    /// Task {
    ///     for await status in engine.start(every: .seconds(300)) {
    ///         indicator.isAnimating = status.isInProgress
    ///         if let report = status.finishedReport { showNotice("Sync completed: \(report.result)") }
    ///     }
    /// }
    /// // the refresh button:   let report = try await engine.syncNow()
    /// // at logout:            await engine.stop()   (the loop above then ends)
    /// ```
    ///
    /// One sync runs at a time; whatever asks for one while it runs (a local change, a tick, any number of
    /// `syncNow()` calls) is answered by exactly one more sync after it. A local change is one the log records
    /// with origin `local`; what a sync writes itself (pulled records, acknowledgements, conflicts) never
    /// starts another. A sync that fails because the server cannot be reached or keeps failing (`.unavailable`,
    /// `.server`) or the store is busy with another process's sync (`.busy`) is tried again after 1 s, then 2,
    /// 4, … up to `interval`; any other failure waits a whole `interval`. A failure other than `.unavailable` and
    /// `.busy` that is the same as the one before (code and message) goes on doubling past `interval`, up to 5
    /// minutes (or `interval`, if longer). Until then neither local changes nor
    /// ticks start a sync, only `syncNow()`; the wait is the finished report's `retryIn`. Each sync runs on a
    /// thread of its own, never on the concurrency pool.
    ///
    /// Started already, the engine goes on as it was started (stop it first to change the settings) and this
    /// returns another stream of its statuses.
    /// - Parameters:
    ///   - interval: the longest time between two syncs (a periodic sync pulls what others pushed): the next
    ///     comes `interval` after the last one started, and at least half an interval after it ended, so that a
    ///     sync slower than the interval never runs back to back. At least 0.1 s (a shorter one counts as 0.1 s).
    ///   - debounce: how long the log must stay quiet after a local change before the sync it asks for starts,
    ///     so that a burst of writes is pushed by one sync. Writes that never pause wait at most ten times this.
    ///   - policy: the conflict policy of every sync (see `sync(policy:missing:)`).
    ///   - missing: what every sync does with records the server lost (see `MissingRecords`).
    /// - Returns: the statuses of this run's syncs, as `statusUpdates()` gives them, ending once `stop()` has
    ///   stopped the run.
    @discardableResult
    public func start(every interval: Duration, debounce: Duration = .milliseconds(100), policy: ConflictPolicy = .serverWins,
                      missing: MissingRecords? = nil) -> AsyncStream<SyncStatus> {
        start(SyncScheduler.Settings(interval: interval, debounce: debounce, policy: policy, missing: missing))
    }

    /// `start(every:)` with all its settings; `probe` sees each look the local-change watcher takes at the log (tests).
    func start(_ settings: SyncScheduler.Settings, probe: (@Sendable (SyncScheduler.Look) -> Void)? = nil) -> AsyncStream<SyncStatus> {
        let (scheduler, isNew) = self.scheduler.withLock { current in
            if let running = current, !running.isStopping { return (running, false) }
            let next = SyncScheduler(engine: self, settings: settings, after: current, probe: probe)
            current = next
            return (next, true)
        }
        // Subscribed before the first sync starts, so that the stream holds all of them.
        let statuses = statuses.subscribe(run: scheduler.run)
        if isNew { scheduler.begin() }
        return statuses
    }

    /// Syncs as soon as possible and returns that sync's report: the refresh button.
    ///
    /// Started, the engine runs it at once (even while it waits to try a failing server again); called while
    /// a sync runs, it is answered by the one sync that follows it, shared with every other call made
    /// meanwhile. Not started, this is `sync()`.
    /// - Throws: that sync's `SyncError`; `CancellationError` when `stop()` is called before it starts.
    ///   Cancelling the calling task does not cancel the sync, which others may be waiting for.
    public func syncNow() async throws -> SyncReport {
        guard let scheduler = scheduler.withLock({ $0 }) else { return try await sync() }
        return try await scheduler.syncNow()
    }

    /// Stops what `start(every:)` started: a sync running stops after its current page or batch (all before it
    /// is committed; its report says `interrupted`), and this returns once it has, its status sent.
    /// `syncNow()` calls still waiting for a sync throw `CancellationError`. Not started, it does nothing.
    public func stop() async {
        guard let current = scheduler.withLock({ $0 }) else { return }
        await current.stop()
        scheduler.withLock { if $0 === current { $0 = nil } }
    }
}

/// The loop behind `SyncEngine.start(every:)`: when a sync is due, it runs one (on the engine's sync thread);
/// a watcher of the log notes local changes. Its rules are on `start(every:)`.
final class SyncScheduler: Sendable {
    struct Settings: Sendable {
        var interval: Duration
        var debounce: Duration
        /// The first wait after a failure (1 s, or the interval if shorter); tests shorten it.
        var firstRetry: Duration
        var policy: ConflictPolicy
        var missing: MissingRecords?

        init(interval: Duration, debounce: Duration, firstRetry: Duration = .seconds(1), policy: ConflictPolicy = .serverWins,
             missing: MissingRecords? = nil) {
            self.interval = max(interval, .milliseconds(100))
            self.debounce = max(debounce, .zero)
            self.firstRetry = min(max(firstRetry, .milliseconds(1)), self.interval)
            self.policy = policy
            self.missing = missing
        }
    }

    /// One look of the local-change watcher at the log: read up to `seq`, and whether it found a local change.
    struct Look: Sendable, Equatable {
        let seq: UInt64
        let foundLocalChange: Bool
    }

    private typealias Waiter = CheckedContinuation<SyncReport, any Error>

    private struct State {
        /// The first and the last local change no sync has started after (the debounce's window).
        var localChanges: (first: ContinuousClock.Instant, last: ContinuousClock.Instant)?
        /// `syncNow()` calls waiting for the next sync.
        var waiting: [Waiter] = []
        var nextTick: ContinuousClock.Instant = .now
        /// After a failure: when the loop may sync again on its own.
        var retryAt: ContinuousClock.Instant?
        var failures = 0
        /// The last failure, and how many syncs in a row failed just so (`retryDelay`'s `repeats`).
        var lastFailure: (code: SyncError.Code, message: String)?
        var repeats = 0
        var stopping = false
    }

    private enum Step {
        case stop
        case wait(until: ContinuousClock.Instant)
        case sync([Waiter])
    }

    /// Numbers the runs, whose status streams end with them.
    private static let runs = Atomic<UInt64>(0)

    let engine: SyncEngine
    let settings: Settings
    let run: UInt64
    /// The run this one replaced while it was stopping: this one starts once it has stopped.
    private let previous: SyncScheduler?
    private let probe: (@Sendable (Look) -> Void)?
    private let state = Mutex(State())
    private let wakeup = Wakeup()
    /// What the running sync asks between pages and batches.
    private let stopRequested = Atomic<Bool>(false)
    private let loop = Mutex<Task<Void, Never>?>(nil)

    init(engine: SyncEngine, settings: Settings, after previous: SyncScheduler?, probe: (@Sendable (Look) -> Void)?) {
        self.engine = engine
        self.settings = settings
        self.previous = previous
        self.probe = probe
        run = Self.runs.add(1, ordering: .relaxed).newValue
    }

    var isStopping: Bool { state.withLock { $0.stopping } }

    /// `syncNow()` calls waiting for the next sync (tests).
    var waitingCount: Int { state.withLock { $0.waiting.count } }

    /// Whether a local change waits for a sync (tests).
    var hasLocalChangeWaiting: Bool { state.withLock { $0.localChanges != nil } }

    func begin() {
        loop.withLock { $0 = Task { await self.runLoop() } }
    }

    func syncNow() async throws -> SyncReport {
        try await withCheckedThrowingContinuation { (continuation: Waiter) in
            let queued = state.withLock { state in
                if !state.stopping { state.waiting.append(continuation) }
                return !state.stopping
            }
            if queued { wakeup.signal() } else { continuation.resume(throwing: CancellationError()) }
        }
    }

    func stop() async {
        let waiting = state.withLock { state in
            state.stopping = true
            defer { state.waiting = [] }
            return state.waiting
        }
        stopRequested.store(true, ordering: .relaxed)
        wakeup.signal()
        for waiter in waiting { waiter.resume(throwing: CancellationError()) }
        await loop.withLock({ $0 })?.value
        engine.statuses.end(run: run)
    }

    // MARK: The loop

    private func runLoop() async {
        if let previous { await previous.loop.withLock({ $0 })?.value }
        // Read before the first sync starts: a change made after it is one the watcher sees.
        let seen = try? engine.store.lastSeq()
        let watcher = Task { await watchLocalChanges(after: seen) }
        defer { watcher.cancel() }
        while true {
            let waiting: [Waiter]
            switch nextStep() {
            case .stop: return
            case .wait(let deadline):
                await wakeup.wait(until: deadline)
                continue
            case .sync(let callers): waiting = callers
            }
            // Stopped between the look and the start: the sync would only stop after its first page.
            if stopRequested.load(ordering: .relaxed) {
                for waiter in waiting { waiter.resume(throwing: CancellationError()) }
                return
            }
            let started = ContinuousClock.now
            let outcome: Result<SyncReport, any Error>
            do {
                outcome = .success(try await engine.syncOnThread(
                    policy: settings.policy, missing: settings.missing,
                    shouldStop: { [self] in stopRequested.load(ordering: .relaxed) },
                    retryIn: { [self] error in backOff(after: error) }))
            } catch {
                outcome = .failure(error)
            }
            let ended = ContinuousClock.now
            state.withLock { state in
                state.nextTick = max(started + settings.interval, ended + settings.interval / 2)
                if case .success = outcome {
                    state.failures = 0
                    state.repeats = 0
                    state.lastFailure = nil
                    state.retryAt = nil
                }
            }
            for waiter in waiting { waiter.resume(with: outcome) }
        }
    }

    /// What the loop does next: sync now (for the `syncNow()` calls returned), or wait until a sync is due.
    private func nextStep() -> Step {
        state.withLock { state in
            if state.stopping { return .stop }
            var due = state.retryAt ?? state.nextTick
            if let local = state.localChanges {
                let settled = min(local.last + settings.debounce, local.first + settings.debounce * 10)
                due = min(due, max(settled, state.retryAt ?? settled))
            }
            guard !state.waiting.isEmpty || due <= .now else { return .wait(until: due) }
            // Whatever asks for a sync from now on asks for the next one.
            state.localChanges = nil
            defer { state.waiting = [] }
            return .sync(state.waiting)
        }
    }

    /// Counts a failure and says how long to wait before trying again (on the sync thread, before the
    /// finished status is sent, so that its report carries the wait).
    private func backOff(after error: SyncError) -> Duration {
        state.withLock { state in
            state.failures += 1
            let same = state.lastFailure.map { $0.code == error.code && $0.message == error.message } ?? false
            state.repeats = same ? state.repeats + 1 : 1
            state.lastFailure = (error.code, error.message)
            let delay = Self.retryDelay(after: error.code, failures: state.failures, repeats: state.repeats,
                                        first: settings.firstRetry, interval: settings.interval)
            state.retryAt = .now + delay
            return delay
        }
    }

    /// The wait after the `failures`-th failure in a row: doubling from `first` up to `interval` for a server
    /// that cannot be reached or fails, or a store busy with another sync; `interval` for anything else, which
    /// waiting a little would not mend (credentials, the store, the remote's URL).
    ///
    /// A failure that is not a server out of reach or a busy store, and that is the same as the one before
    /// (its code and message: the `repeats`-th in a row), goes on doubling past the interval, up to
    /// `maximumRepeatWait` (or the interval, if longer): such a server answers, and each sync would fetch again
    /// what failed (a page too large, refused data) at the watch's full rate. A server failure doubles from
    /// `first` as before; any other failure from the interval.
    static func retryDelay(after code: SyncError.Code, failures: Int, repeats: Int = 1, first: Duration,
                           interval: Duration) -> Duration {
        let repeating = repeats > 1 && code != .unavailable && code != .busy
        let ceiling = repeating ? max(interval, maximumRepeatWait) : interval
        guard [.unavailable, .server, .busy].contains(code) else { return doubled(interval, times: repeats - 1, upTo: ceiling) }
        return doubled(min(first, interval), times: failures - 1, upTo: ceiling)
    }

    /// The longest wait after failures that repeat (`retryDelay`), unless the interval is longer.
    static let maximumRepeatWait = Duration.seconds(300)

    /// `delay` doubled `times` times, stopping at `ceiling`.
    private static func doubled(_ delay: Duration, times: Int, upTo ceiling: Duration) -> Duration {
        var delay = delay
        var count = 0
        while count < times, delay < ceiling {
            delay *= 2
            count += 1
        }
        return min(delay, ceiling)
    }

    // MARK: Local changes

    /// Follows the log (`Store.logChanges`, which yields when it grows, by this process or another) and notes each
    /// local change. Ends with the loop; a store that can no longer be read ends it early, and the syncs the
    /// ticks start then report why.
    private func watchLocalChanges(after start: UInt64?) async {
        let store = engine.store
        do {
            var seen = try start ?? store.lastSeq()
            for try await newest in store.logChanges() where newest > seen {
                let look = try Self.look(at: store, after: seen, newest: newest)
                seen = look.seq
                probe?(look)
                if look.foundLocalChange { noteLocalChange() }
            }
        } catch {}
    }

    /// Whether the log after `seq` holds a local change, the log having grown to `newest`.
    ///
    /// Nothing pending means nothing to push, whatever was written: then no event is read, and a pull of
    /// thousands of records costs the watcher one look at the outbox. Otherwise the new events are read for one
    /// of origin `local` (the app's, the CLI's, an import's): a sync's own events are all `remote`, and a change
    /// the server refused stays pending without asking for a sync each time the log grows.
    static func look(at store: Store, after seq: UInt64, newest: UInt64) throws -> Look {
        var pending = false
        for schema in store.schemas.entities where try store.pendingCount(entity: schema.name) > 0 {
            pending = true
            break
        }
        guard pending else { return Look(seq: newest, foundLocalChange: false) }
        var after = seq
        while true {
            let events = try store.events(after: after, limit: 512)
            guard let last = events.last else { return Look(seq: after, foundLocalChange: false) }
            if events.contains(where: { $0.origin == .local && !$0.kind.isNote }) { return Look(seq: last.seq, foundLocalChange: true) }
            after = last.seq
        }
    }

    private func noteLocalChange() {
        let now = ContinuousClock.now
        state.withLock { $0.localChanges = ($0.localChanges?.first ?? now, now) }
        wakeup.signal()
    }
}

/// A loop's sleep that a signal ends early. A signal sent while nobody waits ends the next wait at once, so
/// none is lost between the loop's look at its state and its wait; a spurious wake-up only makes it look again.
final class Wakeup: Sendable {
    private struct State {
        var signalled = false
        var waiter: CheckedContinuation<Void, Never>?
        var generation: UInt64 = 0
    }

    private let state = Mutex(State())

    func signal() {
        state.withLock { state in
            guard let waiter = state.waiter else {
                state.signalled = true
                return
            }
            state.waiter = nil
            waiter.resume()
        }
    }

    /// Returns when signalled, or at `deadline`.
    func wait(until deadline: ContinuousClock.Instant) async {
        let generation = state.withLock { state in
            state.generation &+= 1
            return state.generation
        }
        let timer = Task { [self] in
            guard (try? await Task.sleep(until: deadline, clock: .continuous)) != nil else { return }
            state.withLock { state in
                guard state.generation == generation else { return }
                if let waiter = state.waiter {
                    state.waiter = nil
                    waiter.resume()
                } else {
                    state.signalled = true
                }
            }
        }
        defer { timer.cancel() }
        await withCheckedContinuation { continuation in
            state.withLock { state in
                if state.signalled {
                    state.signalled = false
                    continuation.resume()
                } else {
                    state.waiter = continuation
                }
            }
        }
    }
}
