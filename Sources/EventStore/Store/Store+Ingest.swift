import Foundation
import Storage

/// The store's side of a sync: what is pending, and one short write
/// transaction for each batch of what the server said.
///
/// Every LMDB tactic of a sync lives here, so the engine knows none: how
/// many records a transaction takes, the dirty-page budget, the key order
/// records are folded in, when mapped pages are dropped. The engine decides
/// what a server record means for the log (the merge); the store decides how
/// that is written. No method here waits on anything but the disk: a caller
/// fetches its pages first and hands them over whole.
extension Store {
    /// How many pages a batch's transaction may dirty (held in memory until it commits). LMDB keeps the
    /// buffers for the next transaction, so this is also what a long pull holds: at 7,500 a million-record
    /// pull peaked 17 MiB above a 100,000-record one, whose transactions never dirtied that many.
    static let dirtyPageBudget = 4_000
    /// How many records a batch may hold: what a crash can make a pull fetch again.
    static let recordsPerBatch = 8_000
    /// How much of the store a long ingest keeps mapped in its resident set.
    static let mappedPageBudget = 16 << 20

    /// Pages of one entity gathered off the write lock, written together by `ingest`.
    ///
    /// Records with random ids dirty pages all over the store, and each
    /// commit writes every page it dirtied: a few pages to a transaction make
    /// far fewer writes than one, and a budget keeps what a transaction holds
    /// in memory bounded. `isFull` says when to write.
    package struct PullBatch: Sendable {
        package private(set) var page = RemotePage()
        private var estimate: DirtyPageEstimate

        fileprivate init(estimate: DirtyPageEstimate) {
            self.estimate = estimate
        }

        /// Nothing to write: no record, no skipped one, no cursor to move, no state of the remote's.
        package var isEmpty: Bool {
            page.entries.isEmpty && page.skipped.isEmpty && page.outOfScope.isEmpty && page.cursor == nil && page.state == nil
        }

        /// True once writing the batch would dirty about the budget's pages, or hold the most records a batch may.
        package var isFull: Bool {
            estimate.pages >= Store.dirtyPageBudget || estimate.records >= Store.recordsPerBatch
        }

        package mutating func append(_ page: RemotePage) {
            self.page.append(contentsOf: page)
            // Each record's event, row, shadow and history entry: about twice its fields, and the envelopes.
            estimate.add(records: page.entries.count, bytes: 2 * page.bytes.count + 300 * page.entries.count)
        }
    }

    /// An empty batch, its estimate based on the store's trees as they are now.
    package func makePullBatch() throws(StoreError) -> PullBatch {
        try snapshot { transaction in
            PullBatch(estimate: DirtyPageEstimate(trees: try [log.views.records, log.views.history].map { try transaction.pages(of: $0) }))
        }
    }

    /// Writes a batch of server records of one entity and the cursor after
    /// them, in one write transaction: either all of it is stored or none.
    ///
    /// Records are taken in id order, the order of every view's keys, so each
    /// tree is swept once. A record the store has never heard of is appended
    /// as the server holds it, without a fold (the bulk of a first pull);
    /// every other record is handed to `fold`, which appends what it means
    /// for the log through the writer.
    /// - Parameter remote: the remote's address: who the remote events are
    ///   credited to, and whose pull cursor the batch's cursor is (`pullCursor`).
    /// - Parameter namespace: the remote's part of meta, where the batch's `state` goes (`remoteState`).
    /// Records the page could not hold (`page.skipped`) are each logged as a
    /// `skipped` event, unless the record's last event is that same skip
    /// (the page read again after a crash or a server restore).
    /// - Returns: how many records were appended as new without a fold (and not followed by a later
    ///   version in the batch, which counts instead), the skips logged, and the records that left (`page.outOfScope`).
    package func ingest(_ batch: PullBatch, entity: String, from remote: String, namespace: String? = nil,
                        fold: (RemoteRecord, inout IngestWriter) throws -> Void)
        throws(StoreError) -> (created: Int, skipped: [SkippedRecord], left: [String]) {
        let page = batch.page
        guard !batch.isEmpty else { return (0, [], []) }
        return try writeLog { appender in
            var writer = IngestWriter(appender: appender)
            defer { appender = writer.appender }
            var created = 0
            let order = page.bytes.withUnsafeBytes { Keys.sortedIndices(of: page.entries.map(\.id), in: $0) }
            let at = clock()
            var unknownAndGone = false
            for (count, index) in order.enumerated() {
                let entry = page.entries[index]
                // Versions of one record keep their page order (the sort is stable): oldest first.
                let isFirstVersion = count == 0 || !page.bytes[page.entries[order[count - 1]].id].elementsEqual(page.bytes[entry.id])
                writer.isFollowedInBatch = count + 1 < order.count
                    && page.bytes[page.entries[order[count + 1]].id].elementsEqual(page.bytes[entry.id])
                if isFirstVersion {
                    unknownAndGone = writer.isFollowedInBatch && lastVersionIsTombstone(from: count, in: order, of: page)
                    if unknownAndGone { unknownAndGone = try writer.projection(entity: entity, id: page.id(of: entry)) == RecordProjection() }
                }
                // A record this store never held, created and deleted on the server between two pulls
                // (its versions read from the server's history): nothing for the log, no "deleted here".
                if unknownAndGone { continue }
                if try writer.appendServerCreation(entry, of: page, entity: entity, at: at, author: entry.author ?? remote) {
                    if !writer.isFollowedInBatch { created += 1 }  // a record counts once, at its latest version
                } else {
                    try fold(try page.record(entry), &writer)
                }
                // A first pull can be millions of records, with random ids that touch
                // pages all over the store's trees: keep the resident set to the work in flight.
                if count % 16 == 15 { environment.releaseMappedPages(beyond: Self.mappedPageBudget) }
            }
            var skipped: [SkippedRecord] = []
            for record in page.skipped where try writer.appendSkipped(record, entity: entity, at: at, author: remote) {
                skipped.append(record)
            }
            if !skipped.isEmpty { try addSkipped(skipped, entity: entity, in: writer.appender.transaction) }
            let left = try page.outOfScope.filter { id in
                try leave(entity: entity, id: id, reason: Self.movedOutOfScope, author: remote, keepingCreatedHere: false, with: &writer.appender)
            }
            if let cursor = page.cursor {
                try setMeta(MetaKey.cursor(remote: remote, entity: entity), cursor.token, in: writer.appender.transaction)
            }
            if let state = page.state, let namespace {
                try setRemoteState(state, namespace: namespace, remote: remote, entity: entity, in: writer.appender.transaction)
            }
            return (created, skipped, left)
        }
    }

    /// Whether the last of the record's versions that start at `start` in `order` is a tombstone.
    private func lastVersionIsTombstone(from start: Int, in order: [Int], of page: RemotePage) -> Bool {
        let id = page.bytes[page.entries[order[start]].id]
        var last = start
        while last + 1 < order.count, page.bytes[page.entries[order[last + 1]].id].elementsEqual(id) { last += 1 }
        return page.entries[order[last]].fields == nil
    }

    /// Runs `body` in one write transaction, for what a pushed batch's answers mean for the log.
    package func ingest<T>(_ body: (inout IngestWriter) throws -> T) throws(StoreError) -> T {
        try writeLog { appender in
            var writer = IngestWriter(appender: appender)
            defer { appender = writer.appender }
            return try body(&writer)
        }
    }

    /// What the sync engine may do inside an ingest's transaction: read what
    /// the log says about a record, and append events.
    package struct IngestWriter {
        fileprivate var appender: EventLog.Appender
        /// While a pulled record is folded: whether the batch holds a later
        /// version of it (an intermediate version read from the server's history).
        package fileprivate(set) var isFollowedInBatch = false

        /// The record's row, shadow and server version, as of this transaction.
        package func projection(entity: String, id: String) throws -> RecordProjection {
            try appender.log.views.projection(entity: entity, id: id, in: appender.transaction)
        }

        /// The local states of a record since the server last spoke of it (an
        /// acknowledgement, a remote change or a conflict), oldest first; nil
        /// entries are deletions. Found through the history index.
        package func unacknowledgedLocalStates(entity: String, id: String) throws -> [JSONObject?] {
            var projection = RecordProjection()
            var states: [JSONObject?] = []
            for event in try appender.log.history(of: id, in: appender.transaction) where event.entity == entity {
                projection.apply(event)
                if event.origin == .local { states.append(projection.row) } else if !event.kind.isNote { states.removeAll() }
            }
            return states
        }

        /// Appends `event`; `current` is the record's projection read in this transaction.
        package mutating func append(_ event: Event, current: RecordProjection) throws {
            try appender.append(event, current: current)
        }

        /// Logs a push the server refused (a `rejected` event), unless the record's last event is already
        /// this refusal: a record refused at every sync is logged once, not once a sync (`--watch`).
        package mutating func appendRejected(entity: String, id: String, reason: String, at: Int64, author: String) throws {
            if let last = try appender.log.lastEvent(entity: entity, id: id, in: appender.transaction),
               last.kind == .rejected, last.reason == reason { return }
            try appender.append(Event(eventID: RecordID.generate(), at: at, entity: entity, recordID: id, kind: .rejected,
                                      origin: .remote, author: author, reason: reason))
        }

        /// Logs a server record the store could not hold, unless its last event is already this skip.
        /// - Returns: whether it appended the event.
        fileprivate mutating func appendSkipped(_ skipped: SkippedRecord, entity: String, at: Int64, author: String) throws -> Bool {
            if let id = skipped.id, let last = try appender.log.lastEvent(entity: entity, id: id, in: appender.transaction),
               last.kind == .skipped, last.version == skipped.version, last.reason == skipped.reason {
                return false
            }
            try appender.append(Event(eventID: RecordID.generate(), at: at, entity: entity, recordID: skipped.id ?? "",
                                      kind: .skipped, origin: .remote, author: author, version: skipped.version,
                                      reason: skipped.reason))
            return true
        }

        /// Appends a record new to the store as it comes, without decoding its fields.
        /// - Returns: false when the record is not new (or is a tombstone), to be folded.
        fileprivate mutating func appendServerCreation(_ entry: RemotePage.Entry, of page: RemotePage, entity: String,
                                                       at: Int64, author: String) throws -> Bool {
            // An empty object is logged without `set`, as folding it would.
            guard let fields = entry.fields, fields.count > 2 else { return false }
            let event = Event(eventID: RecordID.generate(), at: at, entity: entity, recordID: page.id(of: entry),
                              kind: .created, origin: .remote, author: author, version: entry.version)
            return try page.bytes.withUnsafeBytes { bytes in
                try appender.appendServerCreation(event, fields: UnsafeRawBufferPointer(rebasing: bytes[fields]))
            }
        }
    }

    /// The next pending operations of an entity, in key order after `after` (which is moved past them).
    /// - Parameter holdingRefusalsOf: the records whose last push this remote refused, unchanged since, are passed
    ///   over (their ids returned as `held`): a refusal is not sent again by itself (docs/sync.md). Nil: none is.
    ///   Another remote's refusal holds nothing back: the store has moved, and the new server has its own say.
    package func pendingOperations(entity: String, after: inout [UInt8]?, limit: Int, holdingRefusalsOf remote: String?)
        throws(StoreError) -> (operations: [RemoteOperation], held: [String]) {
        let prefix = Keys.entityPrefix(entity)
        let entityKey = String(decoding: prefix.dropLast(), as: UTF8.self)
        var lastKey = after
        var passedOver: [String] = []
        let operations = try snapshot { transaction in
            let cursor = try transaction.cursor(log.views.outbox)
            let history = try transaction.cursor(log.views.history)
            var operations: [RemoteOperation] = []
            var entry = try cursor.seek(atLeast: lastKey.map { $0 + [0] } ?? prefix)
            while let current = entry, current.key.starts(with: prefix), operations.count < limit {
                let key = Array(current.key)
                lastKey = key
                let id = try log.recordID(keyPart: String(decoding: key[prefix.count...], as: UTF8.self), entityKey: entityKey,
                                          in: transaction)
                if let remote, let (keyEntity, keyID) = Keys.split(current.key),
                   let refusal = try outboxRecord(entityKey: keyEntity, id: keyID, history: history).refusal,
                   try log.event(seq: refusal, in: transaction)?.author == remote {
                    passedOver.append(id)
                    entry = try cursor.next()
                    continue
                }
                let projection = try log.views.projection(key: key, in: transaction)
                switch (projection.row, projection.shadow, projection.version) {
                case (let row?, nil, _):
                    operations.append(.create(id: id, fields: row))
                case (let row?, _?, let version?):
                    operations.append(.update(id: id, fields: row, version: version))
                case (nil, _?, let version?):
                    operations.append(.delete(id: id, version: version))
                default:
                    break  // row equals shadow: not really pending (cannot happen in a sound outbox)
                }
                entry = try cursor.next()
            }
            return operations
        }
        after = lastKey
        return (operations, passedOver)
    }

    /// How many records of an entity wait to be pushed: the outbox's keys under its prefix, no record read (a push's "N of M").
    package func pendingCount(entity: String) throws(StoreError) -> Int {
        let prefix = Keys.entityPrefix(entity)
        return try snapshot { transaction in
            let cursor = try transaction.cursor(log.views.outbox)
            var count = 0
            var entry = try cursor.seek(atLeast: prefix)
            while let current = entry, current.key.starts(with: prefix) {
                count += 1
                entry = try cursor.next()
            }
            return count
        }
    }
}
