public import EventStore

extension SyncEngine {
    /// Returns once every local change made before the call is acknowledged by the server, syncing until
    /// it is: the "is everything saved?" before a logout, or a test's wait for a push.
    ///
    /// ```swift
    /// do {
    ///     try await engine.waitUntilSynced(timeout: .seconds(30))
    ///     show("Everything is on the server")
    /// } catch let stuck as StillPending {
    ///     show(stuck.description)   // "not in sync after 30 s: 2 local changes not acknowledged (Holiday/h1: …)"
    /// }
    /// ```
    ///
    /// It syncs by itself (`syncNow()`: through the scheduler when it runs, so that the two share syncs, else
    /// a plain `sync()`), and again after a sync that cannot reach the server, is busy or gets a server
    /// failure, 0.25 s later, doubling up to 5 s, until `timeout`. It gives up at once when waiting cannot
    /// help: every change left was refused by the server, or a sync failed for another reason (credentials,
    /// the remote's URL, the store). Changes made after the call are not waited for, though a sync pushes
    /// them too. See docs/decisions/waiting-for-a-sync-syncs.md.
    /// - Returns: the sync state once it holds.
    /// - Throws: `StillPending`, naming what is stuck and why; `CancellationError` when the task is cancelled, or
    ///   when `stop()` stops the scheduler while the wait's sync was waiting for it.
    @discardableResult
    public func waitUntilSynced(timeout: Duration) async throws -> SyncState {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        let before = try store.lastSeq()
        var lastFailure: SyncError?
        var wentThrough = false
        var delay = Duration.milliseconds(250)
        while true {
            try Task.checkCancellation()
            let stuck = try store.unacknowledgedChanges(through: before, limit: StillPending.listed)
            if stuck.count == 0 { return try store.syncState() }
            func giveUp(_ reason: StillPending.Reason) throws -> StillPending {
                StillPending(reason: reason, timeout: timeout, count: stuck.count, records: stuck.records,
                             lastFailure: lastFailure, state: try store.syncState())
            }
            // A refusal is the server's answer: a sync that went through offers the change again, and gets it again.
            if wentThrough, stuck.refused == stuck.count {
                throw try giveUp(.refused)
            }
            guard clock.now < deadline else { throw try giveUp(.timedOut) }
            switch await attempt(before: deadline) {
            case .success:
                (wentThrough, lastFailure) = (true, nil)
                // Went through and left a change unacknowledged: give the server (or another process) a moment.
                if try store.unacknowledgedChanges(through: before, limit: 0).count > 0 { await pause(delay, before: deadline) }
            case .failure(let error as SyncError) where [.unavailable, .server, .busy].contains(error.code):
                (wentThrough, lastFailure) = (false, error)
                await pause(delay, before: deadline)
            case .failure(let error as SyncError):
                lastFailure = error
                throw try giveUp(.failed)
            case .failure(let error):
                throw error
            case nil:
                continue  // the deadline came first: the loop's top says what is stuck
            }
            delay = min(delay * 2, .seconds(5))
        }
    }

    /// One sync, or nil when `deadline` comes first (the sync is then cancelled: a plain one stops at its next
    /// page or batch; one the scheduler runs goes on, for others may wait for it).
    private func attempt(before deadline: ContinuousClock.Instant) async -> Result<SyncReport, any Error>? {
        let sync = Task { try await self.syncNow() }
        let (outcomes, continuation) = AsyncStream.makeStream(of: Result<SyncReport, any Error>?.self)
        Task { continuation.yield(await sync.result) }
        let timer = Task {
            try? await Task.sleep(until: deadline, clock: .continuous)
            continuation.yield(nil)
        }
        var iterator = outcomes.makeAsyncIterator()
        let first = await iterator.next() ?? nil
        timer.cancel()
        if first == nil { sync.cancel() }
        return first
    }

    /// Sleeps `delay`, or until `deadline` if that is sooner.
    private func pause(_ delay: Duration, before deadline: ContinuousClock.Instant) async {
        try? await Task.sleep(until: min(ContinuousClock.now.advanced(by: delay), deadline), clock: .continuous)
    }
}

/// What `SyncEngine.waitUntilSynced(timeout:)` throws when a local change made before the call is still not
/// acknowledged: which records, why each is pending, and what the last sync met.
public struct StillPending: Error, Sendable, CustomStringConvertible {
    public enum Reason: String, Sendable {
        /// The timeout passed.
        case timedOut
        /// The server refused every change left (`PendingReason.lastExchange` says why); syncing again would not help.
        case refused
        /// A sync failed in a way waiting does not mend (`lastFailure`: credentials, the remote, the store).
        case failed
    }

    /// How many records it lists at most.
    static let listed = 100

    public let reason: Reason
    public let timeout: Duration
    /// How many records hold a change made before the call that the server has not acknowledged.
    public let count: Int
    /// The first of them (at most 100), with why each is pending.
    public let records: [PendingReason]
    /// The error of the last sync, if it failed.
    public let lastFailure: SyncError?
    /// The sync state when it gave up.
    public let state: SyncState

    /// "not in sync after 30 s: 2 local changes not acknowledged (Holiday/h1: created here, not on the server
    /// yet; …); the last sync failed: …".
    public var description: String {
        let when = switch reason {
        case .timedOut: "after \(timeout)"
        case .refused: "(the server refused what is left)"
        case .failed: "(a sync failed)"
        }
        let shown = records.prefix(5).map { record in
            let why = switch record.state {
            case .createdHere: "created here, not on the server yet"
            case .deletedHere: "deleted here, still on the server"
            case .changedHere: "changed here"
            case .inStep, .deleted, .left: "in step"
            }
            let refusal = record.lastExchange?.kind == .rejected ? ", refused: \(record.lastExchange?.reason ?? "")" : ""
            return "\(record.entity)/\(record.id): \(why)\(refusal)"
        }
        let more = count > shown.count ? "; and \(count - shown.count) more" : ""
        let failure = lastFailure.map { "; the last sync failed: \($0.message)" } ?? ""
        return "not in sync \(when): \(count) record\(count == 1 ? "" : "s") with local changes not acknowledged ("
            + shown.joined(separator: "; ") + more + ")" + failure
    }
}
