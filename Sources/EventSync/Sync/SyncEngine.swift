import Foundation
import Synchronization

/// Syncs a store with a remote: pull, then push, everything learnt written as events.
///
/// ```swift
/// let engine = SyncEngine(store: store) {
///     try KintoRemote(bucketURL: "http://127.0.0.1:8888/v1/buckets/evsync", credentials: Credentials("me:secret"))
/// }
/// for await status in engine.statusUpdates() { … }   // in another task
/// let report = try await engine.sync()
/// ```
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
    private let makeRemote: @Sendable () throws -> any SyncRemote
    private let observers = Mutex<[UUID: AsyncStream<SyncStatus>.Continuation]>([:])

    /// - Parameter remote: makes the remote for one sync (remotes are not shared between syncs).
    public init(store: Store, remote: @escaping @Sendable () throws -> any SyncRemote) {
        self.store = store
        self.makeRemote = remote
    }

    /// Syncs on a background thread. See `syncBlocking` for the parameters.
    public func sync(policy: ConflictPolicy = .serverWins) async throws -> SyncReport {
        // A thread of its own: the sync blocks on the network, and blocking
        // Dispatch's few shared threads would stall other work (and other syncs).
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result { try self.syncBlocking(policy: policy) })
            }.start()
        }
    }

    /// The sync's states as they happen: `.inProgress` while it runs (with progress), then `.finished`.
    public func statusUpdates() -> AsyncStream<SyncStatus> {
        let (stream, continuation) = AsyncStream<SyncStatus>.makeStream(bufferingPolicy: .bufferingNewest(16))
        let id = UUID()
        observers.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in
            _ = self?.observers.withLock { $0.removeValue(forKey: id) }
        }
        return stream
    }

    private func broadcast(_ status: SyncStatus) {
        for continuation in observers.withLock({ Array($0.values) }) { continuation.yield(status) }
    }

    /// Pulls every entity's changes, then pushes every pending local change.
    /// - Parameters:
    ///   - policy: who wins a field changed on both sides, or an update against a delete.
    ///   - progress: called after each page pulled and each batch pushed.
    ///   - shouldStop: asked between pages and batches; returning true ends the sync cleanly there.
    /// - Throws: `SyncError` (`.busy` if another sync of this store runs).
    public func syncBlocking(
        policy: ConflictPolicy = .serverWins,
        progress: ((SyncProgress) -> Void)? = nil,
        shouldStop: () -> Bool = { false }
    ) throws(SyncError) -> SyncReport {
        let lock = try SyncLock(directory: store.directory)
        defer { withExtendedLifetime(lock) {} }
        var report = SyncReport()
        broadcast(.inProgress(nil))
        defer { broadcast(.finished(report)) }
        let notify: (SyncProgress) -> Void = { [self] step in
            progress?(step)
            broadcast(.inProgress(step))
        }
        do {
            return try run(policy: policy, report: &report, progress: notify, shouldStop: shouldStop)
        } catch {
            var failure = Self.syncError(error)
            report.error = failure.message
            failure.partialReport = report
            throw failure
        }
    }

    private func run(policy: ConflictPolicy, report: inout SyncReport, progress notify: (SyncProgress) -> Void,
                     shouldStop: () -> Bool) throws -> SyncReport {
        let remote = try makeRemote()
        if try store.readMeta(Store.MetaKey.remote) != remote.address {
            try store.writeMeta(Store.MetaKey.remote, remote.address)
        }
        remote.willPull(try store.schemas.entities.map { schema in
            (schema.collection, try store.readMeta(Store.MetaKey.cursor(remote: remote.address, entity: schema.name)).flatMap { Int64($0) })
        })
        entities: for schema in store.schemas.entities {
            try pull(schema, from: remote, policy: policy, report: &report, progress: notify, shouldStop: shouldStop)
            if shouldStop() { report.interrupted = true; break entities }
        }
        if !report.interrupted {
            for schema in store.schemas.entities {
                try push(schema, to: remote, policy: policy, report: &report, progress: notify, shouldStop: shouldStop)
                if shouldStop() { report.interrupted = true; break }
            }
        }
        try store.writeMeta(Store.MetaKey.lastSync, JSONWriter.string([
            "at": .string(Timestamp.iso8601(milliseconds: Timestamp.now())), "result": .string(report.result.rawValue),
        ]))
        return report
    }

    static func syncError(_ error: any Error) -> SyncError {
        switch error {
        case let error as SyncError: error
        case let error as StoreError: SyncError(.failure, error.message)
        default: SyncError(.failure, StoreError.wrap(error).message)
        }
    }

    // MARK: Pull

    /// How much of the store a pull keeps mapped in its resident set.
    static let mappedPageBudget = 16 << 20
    /// How many pages a pull's transaction may dirty (held in memory until it commits).
    static let dirtyPageBudget = 7_500
    /// How many records a pull's transaction may hold: what a crash can make it fetch again.
    static let recordsPerTransaction = 8_000

    private func pull(_ schema: EntitySchema, from remote: any SyncRemote, policy: ConflictPolicy, report: inout SyncReport,
                      progress: (SyncProgress) -> Void, shouldStop: () -> Bool) throws {
        let cursorKey = Store.MetaKey.cursor(remote: remote.address, entity: schema.name)
        let since = try store.readMeta(cursorKey).flatMap { Int64($0) }
        var step = SyncProgress(phase: .pulling, entity: schema.name, records: 0, pages: 0, total: nil)
        let views = store.log.views
        func estimate(in transaction: Transaction) throws -> DirtyPageEstimate {
            DirtyPageEstimate(trees: try [views.records, views.history].map { try transaction.pages(of: $0) })
        }
        // Pages are gathered off the write lock, then written a few at a
        // time, with the cursor after them, in one short transaction: the
        // lock is never held while the network is waited on (LMDB has one
        // writer, and local changes must not queue behind a slow server).
        // Records with random ids dirty pages all over the store, and each
        // commit writes every page it dirtied, hence a few pages a
        // transaction. Within a transaction the records go in id order,
        // which is the order of every view's keys: one sweep through each
        // tree, its pages read and written in runs. What the report counts is committed.
        var batch = RemotePage()
        var dirty = try store.read { try estimate(in: $0) }
        func write() throws {
            guard !batch.entries.isEmpty else { return }
            var pending = report
            try store.write { appender in
                try fold(batch, entity: schema.name, cursorKey: cursorKey, policy: policy, author: remote.address,
                         appender: &appender, report: &pending)
            }
            report = pending
            batch = RemotePage()
            dirty = try store.read { try estimate(in: $0) }
        }
        try remote.changes(in: schema.collection, since: since) { page in
            batch.append(contentsOf: page)
            // Each record's event, row, shadow and history entry: about twice its fields, and the envelopes.
            dirty.add(records: page.entries.count, bytes: 2 * page.bytes.count + 300 * page.entries.count)
            if dirty.pages >= Self.dirtyPageBudget || dirty.records >= Self.recordsPerTransaction {
                try write()
            }
            step.records += page.entries.count
            step.pages += 1
            step.total = page.total
            progress(step)
            return !shouldStop()
        }
        try write()
    }

    /// Appends what a batch of server records means for the log, in id order, and moves the cursor past them.
    private func fold(_ batch: RemotePage, entity: String, cursorKey: String, policy: ConflictPolicy, author: String,
                      appender: inout EventLog.Appender, report: inout SyncReport) throws {
        guard !batch.entries.isEmpty else { return }
        var cursor = try store.meta(cursorKey, in: appender.transaction).flatMap { Int64($0) } ?? 0
        let order = batch.bytes.withUnsafeBytes { Keys.sortedIndices(of: batch.entries.map(\.id), in: $0) }
        let at = Timestamp.now()
        for (count, index) in order.enumerated() {
            let entry = batch.entries[index]
            if try appendServerCreation(entry, of: batch, entity: entity, at: at, author: author, appender: &appender) {
                report.pulled += 1
            } else {
                try fold(batch.record(entry), entity: entity, policy: policy, checkVersion: true, author: author,
                         appender: &appender, report: &report)
            }
            cursor = max(cursor, entry.version)
            // A first pull can be millions of records, with random ids that touch
            // pages all over the store's trees: keep the resident set to the work in flight.
            if count % 16 == 15 { store.environment.releaseMappedPages(beyond: Self.mappedPageBudget) }
        }
        try store.setMeta(cursorKey, String(cursor), in: appender.transaction)
    }

    /// Appends a record new to the store as it comes, without decoding its
    /// fields: what folding it would append (see `EventLog.Appender.appendServerCreation`).
    /// - Returns: false when the record is not new (or is a tombstone), to be folded.
    private func appendServerCreation(_ entry: RemotePage.Entry, of page: RemotePage, entity: String, at: Int64, author: String,
                                      appender: inout EventLog.Appender) throws -> Bool {
        // An empty object is logged without `set`, as folding it would.
        guard let fields = entry.fields, fields.count > 2 else { return false }
        let event = Event(eventID: RecordID.generate(), at: at, entity: entity, recordID: page.id(of: entry),
                          kind: .created, origin: .remote, author: author, version: entry.version)
        return try page.bytes.withUnsafeBytes { bytes in
            try appender.appendServerCreation(event, fields: UnsafeRawBufferPointer(rebasing: bytes[fields]))
        }
    }

    /// Appends the event (if any) that a server record means for the log, and counts it.
    private func fold(_ record: RemoteRecord, entity: String, policy: ConflictPolicy, checkVersion: Bool, author: String,
                      appender: inout EventLog.Appender, report: inout SyncReport) throws {
        let transaction = appender.transaction
        let projection = try store.log.views.projection(entity: entity, id: record.id, in: transaction)
        let outcome = try RemoteFold.fold(record, into: projection, policy: policy, checkVersion: checkVersion) {
            try store.unacknowledgedLocalStates(entity: entity, id: record.id, in: transaction)
        }
        guard let outcome else { return }
        var event = Event(eventID: RecordID.generate(), at: Timestamp.now(), entity: entity, recordID: record.id,
                          kind: .updated, origin: .remote, author: author)
        switch outcome {
        case .remote(let kind, let set, let unset, let version):
            (event.kind, event.set, event.unset, event.version) = (kind, set, unset, version)
            if kind == .deleted { report.deletedHere += 1 } else { report.pulled += 1 }
        case .acknowledged(let server, let version):
            (event.kind, event.server, event.version) = (.acknowledged, server, version)
            if server == .absent { report.deletedThere += 1 } else { report.pushed += 1 }
        case .conflict(let local, let server, let resolved, let version):
            (event.kind, event.local, event.server, event.resolved, event.version) = (.conflict, local, server, resolved, version)
            event.policy = policy.rawValue
            report.conflicts += 1
        }
        try appender.append(event, current: projection)
    }

    // MARK: Push

    private func push(_ schema: EntitySchema, to remote: any SyncRemote, policy: ConflictPolicy, report: inout SyncReport,
                      progress: (SyncProgress) -> Void, shouldStop: () -> Bool) throws {
        var step = SyncProgress(phase: .pushing, entity: schema.name, records: 0, pages: 0, total: nil)
        // A conflict met while pushing is folded like a pulled record, which
        // may leave a merged state to push: a few rounds settle it.
        for _ in 1...3 {
            var after: [UInt8]? = nil
            // Whether a failed precondition was folded this round: conflict or
            // clean merge, the result may differ from the server and need pushing.
            var folded = false
            var limit: Int?
            while true {
                let operations = try store.pendingOperations(entity: schema.name, after: &after, limit: limit ?? 1)
                if operations.isEmpty { break }
                if limit == nil {
                    // Ask the server its batch size only when there is something to push.
                    limit = try remote.batchLimit()
                    after = nil
                    continue
                }
                let outcomes = try remote.push(operations, to: schema.collection)
                try store.write { appender in
                    for (operation, outcome) in zip(operations, outcomes) {
                        if try acknowledge(operation, outcome, entity: schema.name, policy: policy, author: remote.address,
                                           appender: &appender, report: &report) {
                            folded = true
                        }
                    }
                }
                step.records += operations.count
                step.pages += 1
                progress(step)
                if shouldStop() { return }
            }
            if !folded { return }
        }
    }

    /// Logs what the server did with one operation. Returns true when the server held something else, now folded in.
    private func acknowledge(_ operation: RemoteOperation, _ outcome: RemoteOutcome, entity: String, policy: ConflictPolicy,
                             author: String, appender: inout EventLog.Appender, report: inout SyncReport) throws -> Bool {
        let projection = try store.log.views.projection(entity: entity, id: operation.id, in: appender.transaction)
        let sent: RecordState = switch operation {
        case .create(_, let fields), .update(_, let fields, _): .present(fields)
        case .delete: .absent
        }
        func ack(_ version: Int64?) throws {
            try appender.append(Event(eventID: RecordID.generate(), at: Timestamp.now(), entity: entity, recordID: operation.id,
                                      kind: .acknowledged, origin: .remote, author: author, version: version, server: sent))
            if sent == .absent { report.deletedThere += 1 } else { report.pushed += 1 }
        }
        switch outcome {
        case .applied(let version):
            try ack(version)
        case .preconditionFailed(let current?) where RecordState(current.fields) == sent:
            // The server already holds exactly what we sent (our earlier push, never acknowledged).
            try ack(current.version)
        case .preconditionFailed(let current):
            // Someone else changed it: merge as if we had pulled it.
            let record = current ?? RemoteRecord(id: operation.id, version: projection.version ?? 0, fields: nil)
            try fold(record, entity: entity, policy: policy, checkVersion: false, author: author, appender: &appender, report: &report)
            return true
        case .notFound:
            if sent == .absent {
                try ack(projection.version)
            } else {
                report.rejected.append("\(entity) \(operation.id): the server has no such collection or record")
            }
        case .rejected(let status, let message):
            report.rejected.append("\(entity) \(operation.id): HTTP \(status): \(message)")
        }
        return false
    }
}
