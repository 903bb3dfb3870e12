public import EventStore
import Foundation
import Synchronization

/// Syncs a store with a remote: pull, then push, everything learnt written as events.
///
/// ```swift
/// let engine = SyncEngine(store: store) {
///     try KintoRemote(bucketURL: "http://127.0.0.1:8888/v1/buckets/evsync", credentials: try Credentials(userPassword: "me:secret"))
/// }
/// for await status in engine.statusUpdates() { … }   // in another task
/// let report = try await engine.sync()
/// ```
///
/// Or let it sync by itself (`start(every:)`, in SyncScheduler.swift): shortly after each local change, every
/// interval, and when `syncNow()` asks.
///
/// Nothing but the log says what to push: a record is pending exactly when
/// its view row differs from the server state the log last recorded for it
/// (the `outbox` view). Pulled pages are written a few to a transaction,
/// with the cursor after the last of them; each pushed batch's
/// acknowledgements in one transaction. A crash at any point therefore
/// resumes cleanly: pages are neither skipped nor repeated, and a push the
/// server applied but the log never acknowledged is recognised on the next pull.
public final class SyncEngine: Sendable {
    public let store: Store
    let makeRemote: @Sendable () throws -> any SyncRemote
    let statuses = StatusBroadcast()
    /// The scheduler `start(every:)` runs, until `stop()` has stopped it.
    let scheduler = Mutex<SyncScheduler?>(nil)
    /// Syncs running (this engine's: one at a time goes through, others find the store busy).
    private let running = Atomic<Int>(0)

    /// How long what the server said of an entity's access stands before a sync asks again, when nothing (a
    /// refusal, a sign of a loss) asks sooner: access withdrawn from records that have not changed shows in no
    /// pull, and asking can cost the server a walk over every permission of the account.
    public let accessRecheck: Duration

    /// - Parameters:
    ///   - store: the store to sync; one sync at a time runs on it, across processes.
    ///   - accessRecheck: how long what the server said of an entity's access stands (`accessRecheck`).
    ///   - remote: makes the remote for one sync (remotes are not shared between syncs).
    public init(store: Store, accessRecheck: Duration = .seconds(15 * 60), remote: @escaping @Sendable () throws -> any SyncRemote) {
        self.store = store
        self.accessRecheck = accessRecheck
        self.makeRemote = remote
    }

    /// Syncs on a thread of its own.
    ///
    /// What comes back says how the sync went, as a background fetch answers: `.newData` or `.noData`, or
    /// `.failed` when it went through but the server refused some changes (`report.rejected`, which stay
    /// pending). A sync that could not go through throws instead, so that an app handles it apart:
    ///
    /// ```swift
    /// do {
    ///     let report = try await engine.sync()
    ///     print("sync: \(report.result)")
    /// } catch let error as SyncError {
    ///     print("sync failed: \(error)")      // one line; error.code tells unreachable from refused
    /// }
    /// ```
    /// - Throws: `SyncError`: `.unavailable` when the server cannot be reached or keeps failing after the
    ///   remote's retries, `.unauthorized` when it refuses the credentials, `.busy` when another sync of
    ///   this store runs, `.server` for an answer evsync cannot use, `.invalidRemote` when the remote cannot
    ///   be made, and the store's failures (`cause` is the `StoreError`); its `partialReport` counts what
    ///   was committed before (kept: the next sync goes on from there). `CancellationError` when the task
    ///   was cancelled: the sync stops at the next page or batch, with everything before it committed.
    /// - Parameters:
    ///   - policy: who wins a field changed on both sides, or an update against a delete.
    ///   - missing: what to do with records the server lacks without a tombstone (see `MissingRecords`).
    ///   - resendRefused: send again the changes the server refused at an earlier sync and that were not
    ///     changed since (`SyncReport.held`): once the server allows them (a permission granted), or to try again.
    public func sync(policy: ConflictPolicy = .serverWins, missing: MissingRecords? = nil,
                     resendRefused: Bool = false) async throws -> SyncReport {
        let cancelled = Atomic<Bool>(false)
        let report = try await withTaskCancellationHandler {
            try await syncOnThread(policy: policy, missing: missing, resendRefused: resendRefused,
                                   shouldStop: { cancelled.load(ordering: .relaxed) })
        } onCancel: {
            cancelled.store(true, ordering: .relaxed)
        }
        if report.interrupted, cancelled.load(ordering: .relaxed) { throw CancellationError() }
        return report
    }

    /// `syncBlocking` on a thread of its own: the sync blocks on the network, and blocking
    /// the concurrency pool's few threads would stall other work (and other syncs).
    /// - Parameter retryIn: for a failed sync, when the scheduler tries again (the report's `retryIn`).
    func syncOnThread(policy: ConflictPolicy, missing: MissingRecords?, resendRefused: Bool = false,
                      shouldStop: @escaping @Sendable () -> Bool,
                      retryIn: @escaping @Sendable (SyncError) -> Duration? = { _ in nil }) async throws -> SyncReport {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result {
                    try self.syncBlocking(policy: policy, missing: missing, resendRefused: resendRefused, progress: nil,
                                          shouldStop: shouldStop, retryIn: retryIn)
                })
            }.start()
        }
    }

    /// The states of every sync of this engine as they happen (`sync()`, `syncBlocking`, the scheduler's):
    /// `.inProgress` while one runs (with progress), then `.finished` with its report, for each sync. A
    /// consumer that falls behind gets every start and finished report, and the latest 16 steps of a sync.
    /// The stream goes on until its consumer stops; `start(every:)` returns one that ends with the run.
    public func statusUpdates() -> AsyncStream<SyncStatus> {
        statuses.subscribe()
    }

    /// Whether a sync of this engine is running. False again before its `.finished` status is sent.
    public var isSyncing: Bool { running.load(ordering: .relaxed) > 0 }

    /// Pulls every entity's changes, then pushes every pending local change.
    /// - Parameters:
    ///   - policy: who wins a field changed on both sides, or an update against a delete.
    ///   - missing: what to do with records the server lacks without a tombstone when that looks like a
    ///     loss (see `MissingRecords`); nil keeps them and lists them in `goneFromServer`, sync after sync.
    ///   - resendRefused: send again the changes the server refused at an earlier sync, unchanged since (`held`).
    ///   - progress: called after each page pulled and each batch pushed.
    ///   - shouldStop: asked between pages and batches; returning true ends the sync cleanly there.
    /// - Returns: the report, as `sync()` returns it (`.failed` only for changes the server refused).
    /// - Throws: `SyncError`, as `sync()` throws it; a sync that `shouldStop` ended between pages or batches returns, with `interrupted` set.
    public func syncBlocking(
        policy: ConflictPolicy = .serverWins,
        missing: MissingRecords? = nil,
        resendRefused: Bool = false,
        progress: ((SyncProgress) -> Void)? = nil,
        shouldStop: () -> Bool = { false }
    ) throws(SyncError) -> SyncReport {
        try syncBlocking(policy: policy, missing: missing, resendRefused: resendRefused, progress: progress, shouldStop: shouldStop,
                         retryIn: { _ in nil })
    }

    func syncBlocking(policy: ConflictPolicy, missing: MissingRecords?, resendRefused: Bool, progress: ((SyncProgress) -> Void)?,
                      shouldStop: () -> Bool, retryIn: (SyncError) -> Duration?) throws(SyncError) -> SyncReport {
        running.add(1, ordering: .relaxed)
        var report = SyncReport()
        // Defers run last first: `isSyncing` is false by the time anyone sees the finished report.
        defer { statuses.yield(.finished(report)) }
        defer { running.subtract(1, ordering: .relaxed) }
        func failed(_ error: SyncError) -> SyncError {
            var failure = error
            report.error = failure.message
            report.failure = failure
            report.retryIn = retryIn(failure)
            failure.partialReport = report
            return failure
        }
        let lock: SyncLock
        do { lock = try SyncLock(directory: store.directory) } catch { throw failed(error) }
        defer { withExtendedLifetime(lock) {} }
        statuses.yield(.inProgress(nil))
        let notify: (SyncProgress) -> Void = { [self] step in
            progress?(step)
            statuses.yield(.inProgress(step))
        }
        // The point `diff --from last-sync` names, recorded whether the sync goes through or fails midway.
        let startedAfter = try? store.lastSeq()
        do {
            return try run(policy: policy, missing: missing, resendRefused: resendRefused, startedAfter: startedAfter, report: &report,
                           progress: notify, shouldStop: shouldStop)
        } catch {
            let failure = failed(SyncError.from(error))
            // `status` shows why the last sync failed; a store that cannot be written cannot record it either, and
            // a refusal that promises nothing was written (a wrong passphrase) keeps that promise.
            if (failure.cause as? any RemoteError)?.wroteNothing != true {
                try? store.recordLastSync(.failed, startedAfter: startedAfter, error: failure.message, interrupted: shouldStop())
            }
            throw failure
        }
    }

    private func run(policy: ConflictPolicy, missing: MissingRecords?, resendRefused: Bool, startedAfter: UInt64?, report: inout SyncReport,
                     progress notify: (SyncProgress) -> Void, shouldStop: () -> Bool) throws -> SyncReport {
        let remote = try makeRemote()
        if !remote.sealsRecords, try store.sealingValue("place", remote: remote.address) != nil {
            throw SyncError(.invalidRemote, "this store syncs end-to-end encrypted with \(remote.address): nothing is sent to it "
                + "in clear (give its passphrase: --encrypt)")
        }
        let entities = store.schemas.entities.filter(remote.holds)
        // The log's versions and acknowledgements are another server's: this one is read again from the start,
        // every record taken as it holds it (docs/decisions/one-remote-at-a-time.md).
        let previous = try store.syncedRemote()
        let switching = previous != nil && previous != remote.address
        if switching, let previous, missing == nil { try refuseIfHoldingNone(entities, remote: remote, previous: previous) }
        let starts = try entities.map { ($0, try pullStart(of: $0, from: remote, switching: switching)) }
        if let namespace = remote.metaNamespace {
            for (schema, since) in starts where since != nil {
                if let state = try store.remoteState(namespace: namespace, remote: remote.address, entity: schema.name) {
                    remote.restore(state, of: schema)
                }
            }
        }
        for (entity, scope) in try store.scopes() {
            if let schema = entities.first(where: { $0.name == entity }) { try remote.setScope(scope, of: schema) }
        }
        try remote.prepare(starts)
        // Entities this account may now write, where it could only read before: their held refusals are sent again.
        var granted: Set<String> = []
        entities: for schema in entities {
            let undecided = try store.serverWasRestored(remote: remote.address, entity: schema.name)
            // Asked before the pull, which then reads back what left if access widened; before a first pull, after it,
            // since the pull creates what is missing (and its creator may write it).
            let asksAccess = try accessIsDue(schema)
            let pulledBefore = try !switching && store.pullCursor(remote: remote.address, entity: schema.name) != nil
            var accessGranted = try asksAccess && pulledBefore && learnAccess(to: schema, from: remote)
            let pulled: (trigger: VerificationTrigger?, comparedIDs: Bool)
            do {
                pulled = try pull(schema, from: remote, policy: policy, missing: missing, undecided: undecided, switching: switching,
                                  report: &report, progress: notify, shouldStop: shouldStop)
            } catch let denied as any RemoteError where denied.deniesAccess {
                // Access lost: what this device neither created nor changed leaves the tables, not deleted; the others sync.
                report.unreadable.append(Skip(entity: schema.name, id: nil, reason: denied.description))
                try leaveForLostAccess(schema, remote: remote, report: &report)
                continue entities
            }
            // A sign of a loss may be access lost: a collection that shows this account only some records lists fewer.
            if !asksAccess && pulled.trigger != nil || asksAccess && !pulledBefore { accessGranted = try learnAccess(to: schema, from: remote) }
            // Granted at the same place: an entity read from a new place (`reread`) was refused at another.
            if accessGranted, !report.reread.contains(schema.name) { granted.insert(schema.name) }
            // A listing of a collection this account reads only in part shows what it may read, not what the server
            // holds: what it no longer shows left this store; no sign of a loss is read in it.
            let partial = try reconcilePartialAccess(schema, with: remote, policy: policy, report: &report, shouldStop: shouldStop)
                // A scope's listing and count are the scope's too: a record moved out is no sign of a loss (`outOfScope`).
                || store.scope(of: schema.name) != nil
            var trigger = partial && pulled.trigger != .recreated ? nil : pulled.trigger
            if report.reread.contains(schema.name) { try store.noteServerRestored(true, remote: remote.address, entity: schema.name) }
            // What the pull left of the mark: set by a reread, cleared or set by a remote without tombstones.
            let restored = report.reread.contains(schema.name) || pulled.comparedIDs
                ? try store.serverWasRestored(remote: remote.address, entity: schema.name) : undecided
            // Records kept after a loss are checked at every sync until the user decides (or they are back):
            // a sync never says "already in sync" while the server lacks them. A remote without tombstones
            // has just compared every id in the pull: nothing more to ask it.
            if trigger == nil, !partial, !shouldStop(), remote.canList, restored, !pulled.comparedIDs { trigger = .lossUndecided }
            if let trigger {
                // The server showed it lost what a pull cannot bring back: check it against a listing, and mend.
                // Records it lacks are deleted here only when that looks like deletions, not a loss (`MissingRecords`):
                // after a restore from a backup, a re-created collection or on another server, this device may hold the only copy.
                let lossSuspected = [.recreated, .unknownServer, .lossUndecided].contains(trigger)
                    || (trigger != .newestChangeMissing && restored)
                var verification = RemoteVerification()
                try verify(schema, against: remote, repair: true,
                           missing: missing.map(MissingRecordsHandling.decided) ?? .judged(lossSuspected: lossSuspected),
                           policy: policy, into: &verification, report: &report)
                // A loss is said once, by the records kept (`goneFromServer`), not as a change no pull could bring.
                if ![.recreated, .unknownServer, .lossUndecided].contains(trigger) { report.verified.append(schema.name) }
            }
            if shouldStop() { report.interrupted = true; break entities }
        }
        if !report.interrupted {
            for schema in entities where !report.unreadable.contains(where: { $0.entity == schema.name }) {
                try push(schema, to: remote, policy: policy, resendRefused: resendRefused || granted.contains(schema.name), report: &report,
                         progress: notify, shouldStop: shouldStop)
                if shouldStop() { report.interrupted = true; break }
            }
            try relearnAccessAfterRefusals(of: entities, from: remote, report: report)
        }
        if let known = remote.knowsAuthors { try store.recordRemoteAuthorsKnown(known) }
        // Remembered only once a sync has gone through with it: a mistyped
        // remote that fails must not replace the one the next plain sync uses.
        try store.rememberRemote(remote.address)
        try store.noteSynced(with: remote.address)
        try store.recordLastSync(report.result, startedAfter: startedAfter, interrupted: report.interrupted)
        return report
    }

    // MARK: Pull

    /// Why a pull asks for the server to be checked against a listing.
    enum VerificationTrigger {
        /// The collection's newest change is missing from what it lists: a deletion whose tombstone was purged.
        case newestChangeMissing
        /// The server holds another number of records than the log believes (`Total-Records`).
        case countDiffers
        /// The server had to create the collection again (or its bucket): it lost everything it held.
        case recreated
        /// A first pull from this remote, while the log holds records as live on a server: another server.
        case unknownServer
        /// Records missing from the server were kept at an earlier sync, and nobody has decided since.
        case lossUndecided
    }

    /// Pulls one entity's changes. Pages are gathered with no transaction
    /// open, then written a batch at a time, each with the cursor after it,
    /// in one short transaction (`Store.ingest`): the write lock is never
    /// held while the network is waited on, so local changes never queue
    /// behind a slow server, and a crash resumes after the last batch
    /// written, neither skipping nor repeating a record. What the report
    /// counts is committed.
    /// - Returns: why the server should be checked against a listing, if it showed a sign that it dropped changes;
    ///   and whether the pull compared every id the log holds there with the server's (a remote without tombstones).
    /// - Parameter switching: the log's versions are another server's: read from the start, versions not compared.
    private func pull(_ schema: EntitySchema, from remote: any SyncRemote, policy: ConflictPolicy, missing: MissingRecords?,
                      undecided: Bool, switching: Bool, report: inout SyncReport, progress: (SyncProgress) -> Void,
                      shouldStop: () -> Bool) throws -> (trigger: VerificationTrigger?, comparedIDs: Bool) {
        var trigger: VerificationTrigger?
        var serverCount: Int?
        let since = try pullStart(of: schema, from: remote, switching: switching)
        let readingBackWhatLeft = try store.rereadsWhatLeft(entity: schema.name)
        // Records held as on a server before a first pull from one whose versions the log does not hold: another server's.
        var heldBefore = 0
        if since == nil, try switching || !store.hasSynced(with: remote.address) {
            try store.forEachRecordLiveOnServer(entity: schema.name) { _, _ in heldBefore += 1 }
        }
        var step = SyncProgress(phase: .pulling, entity: schema.name, records: 0, pages: 0, total: nil)
        var batch = try store.makePullBatch()
        func write() throws {
            guard !batch.isEmpty else { return }
            var pending = report
            let (created, skipped, left) = try store.ingest(batch, entity: schema.name, from: remote.address,
                                                     namespace: remote.metaNamespace) { record, writer in
                // Intermediate versions are history: with local changes pending, the merge is against the latest only.
                // A record counts once in the report, at its latest version.
                var counts = writer.isFollowedInBatch ? SyncReport() : pending
                if writer.isFollowedInBatch, try writer.projection(entity: schema.name, id: record.id).isPending { return }
                try fold(record, entity: schema.name, policy: policy, checkVersion: !switching, author: record.author ?? remote.address,
                         writer: &writer, report: &counts, isOlder: remote.isVersion(_:olderThan:))
                if !writer.isFollowedInBatch { pending = counts }
            }
            pending.pulled += created
            pending.left += left.map { Skip(entity: schema.name, id: $0, reason: Store.movedOutOfScope) }
            pending.skipped += skipped.map { skip in
                var skip = skip
                skip.entity = schema.name
                return skip
            }
            report = pending
            batch = try store.makePullBatch()
        }
        var lost: [Skip] = []
        // Records named lost before by a remote that cannot list (see `settleLost`), and those of them pulled again.
        let kept = Set(remote.canList ? [] : try store.recordsMissingFromServer()[schema.name] ?? [])
        var returned = Set<String>()
        try remote.changes(of: schema, since: since) { page in
            lost += page.lost
            if !kept.isEmpty { returned.formUnion(page.entries.map { page.id(of: $0) }.filter(kept.contains)) }
            if page.isReread { report.reread.append(schema.name) }
            if page.needsVerification != nil, trigger == nil { trigger = .newestChangeMissing }
            if page.isRecreated { trigger = .recreated }
            if let live = page.liveRecords { serverCount = live }
            batch.append(page)
            if batch.isFull || page.isCheckpoint { try write() }
            step.records += page.entries.count
            step.pages += 1
            step.total = page.total
            progress(step)
            return !shouldStop()
        }
        try write()
        try settleLost(lost, kept: kept.subtracting(returned), entity: schema.name, remote: remote, missing: missing, policy: policy,
                       report: &report)
        if shouldStop() { return (nil, false) }
        if readingBackWhatLeft { try store.noteReadFromStart(entity: schema.name) }
        let lossSuspected = undecided || heldBefore > 0 || trigger == .recreated
        let comparedIDs = try reconcileDeletions(schema, with: remote, policy: policy,
                                                 missing: missing.map(MissingRecordsHandling.decided) ?? .judged(lossSuspected: lossSuspected),
                                                 report: &report)
        if trigger == nil, heldBefore > 0, remote.canList, !comparedIDs { trigger = .unknownServer }
        if trigger == nil, let serverCount {
            // Total-Records disagreeing with the records the log holds as live there.
            var held = 0
            try store.forEachRecordLiveOnServer(entity: schema.name) { _, _ in held += 1 }
            if held != serverCount { trigger = .countDiffers }
        }
        return (trigger, comparedIDs)
    }

    /// Before a store that synced with `previous` first syncs with `remote`: when the store holds records
    /// as on a server and `remote` holds none of them (a new server, a mistyped bucket), nothing is
    /// created or changed there or here, unless the user said what to do with them (`--missing`).
    private func refuseIfHoldingNone(_ entities: [EntitySchema], remote: any SyncRemote, previous: String) throws {
        guard remote.canList else { return }
        var held = 0, found = 0
        for schema in entities {
            var ids = Set<String>()
            try store.forEachRecordLiveOnServer(entity: schema.name) { id, _ in ids.insert(id) }
            held += ids.count
            guard !ids.isEmpty else { continue }
            try remote.listing(of: schema) { page in
                found += page.count { ids.contains($0.id) }
                return found == 0
            }
            if found > 0 { return }
        }
        guard held > 0 else { return }
        throw SyncError(.invalidRemote, "\(remote.address) holds none of this store's records (\(held) synced with \(previous); "
            + "a new server, or a mistyped one?): nothing was changed; evsync sync --missing push-back copies them there, "
            + "evsync remote set \(previous) goes back")
    }

    /// For a remote without tombstones: every record the log knows on the
    /// server that the server no longer lists was deleted there. Read after
    /// the pull, so a record created there meanwhile is merely not yet
    /// pulled, never taken for a deletion; one transaction for them all.
    /// - Returns: whether the remote gave its ids (false for one that reports deletions as tombstones).
    private func reconcileDeletions(_ schema: EntitySchema, with remote: any SyncRemote, policy: ConflictPolicy,
                                    missing: MissingRecordsHandling, report: inout SyncReport) throws -> Bool {
        guard let live = try remote.liveIDs(of: schema) else { return false }
        try store.forgetSkipped(entity: schema.name, notIn: live)
        var gone: [String] = []
        var held = 0
        try store.forEachRecordLiveOnServer(entity: schema.name) { id, _ in
            held += 1
            if !live.contains(id) { gone.append(id) }
        }
        guard !gone.isEmpty else {
            try store.noteServerRestored(false, remote: remote.address, entity: schema.name)
            return true
        }
        guard let action = missing.action(missing: gone.count, held: held) else {
            try holdMissing(gone, entity: schema.name, remote: remote.address, report: &report)
            return true
        }
        try resolveMissing(gone.map { ($0, remote.deletionVersion) }, entity: schema.name, action: action, policy: policy,
                           author: remote.address, report: &report)
        try store.noteServerRestored(false, remote: remote.address, entity: schema.name)
        return true
    }
}
