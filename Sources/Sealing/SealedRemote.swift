public import EventStore
public import EventSync
import Synchronization

/// A remote whose server keeps every record sealed and reads none of them (docs/encryption.md): it wraps
/// another remote (Kinto, Parse), seals each record before it is sent and opens each record pulled. The engine
/// above it sees plaintext records and the server's own versions and cursors, as with any remote.
///
/// What it refuses rather than obeys: a record that does not open (changed, moved from another record or bucket,
/// another key), an older version of a record than this store has seen (a replay), and a deletion that no device
/// with the key sealed (a server's tombstone, or a record gone): each is skipped with its reason, and the rest syncs.
///
/// ```swift
/// let remote = SealedRemote(KintoRemote(...), store: store) { try String(contentsOfFile: path).trimmed }
/// try SyncEngine(store: store).sync(with: remote)
/// ```
public final class SealedRemote: SyncRemote {
    public let inner: any SyncRemote
    let store: Store
    let passphrase: @Sendable () throws -> String
    var keys: UnlockedKeys?
    /// The key being derived, between `prepare` and the first record opened (`beginUnlocking`).
    var derivation: KeyDerivation?
    /// The keyring as the server holds it, with its version (a rotation replaces that version, or fails).
    var keyring: (record: Keyring, version: RemoteVersion)?
    /// How many records sealed under an older key a sync re-seals at most, per entity.
    public var resealLimit = 200

    /// - Parameter passphrase: asked for once, at the first sync, when the remote's keys must be opened (an app
    ///   may read it from its own key store); never stored by evsync.
    public init(_ inner: any SyncRemote, store: Store, passphrase: @escaping @Sendable () throws -> String) {
        self.inner = inner
        self.store = store
        self.passphrase = passphrase
    }

    public var address: String { inner.address }
    public var sealsRecords: Bool { true }

    // MARK: keys (SealedRemote+Keys.swift)

    public func prepare(_ entities: [(schema: EntitySchema, since: RemoteCursor?)]) throws {
        // The key is derived while the pull's first requests go out; the first page opened waits for it.
        try beginUnlocking(entities: entities.map(\.schema.name))
        try inner.prepare(entities.map { (try SealedEnvelope.wireSchema(for: $0.schema), $0.since) })
    }

    /// What seals and opens the records of `entity`.
    private func envelope(for entity: EntitySchema) throws -> SealedEnvelope {
        try unlock(entities: [])
        guard let keys else { throw SealingError(.unavailable, "the keys of \(address) are not open") }
        return SealedEnvelope(keys: keys, clear: SealedEnvelope.clearFields(of: entity))
    }

    // MARK: pull

    public func holds(_ entity: EntitySchema) -> Bool {
        (try? inner.holds(SealedEnvelope.wireSchema(for: entity))) ?? false
    }

    public func batchLimit() throws -> Int { try inner.batchLimit() }

    public func changes(of entity: EntitySchema, since: RemoteCursor?, onPage: (RemotePage) throws -> Bool) throws {
        let envelope = try envelope(for: entity)
        let wire = try SealedEnvelope.wireSchema(for: entity)
        var goesOn = true
        try inner.changes(of: wire, since: since) { page in
            goesOn = try onPage(try opened(page, entity: entity.name, envelope: envelope))
            return goesOn
        }
        if goesOn, let gone = try goneFromTheListing(of: entity.name, wire: wire) { _ = try onPage(gone) }
        try resealOlderRecords(of: entity.name, wire: wire, envelope: envelope)
    }

    static let unsealedDeletion = "deleted on the server, but no device with the key sealed a deletion: kept here, as a record the server lost"

    /// On a remote without tombstones (Parse), a deletion is a record no longer listed. A sealed deletion stays a
    /// record there, so a record the log holds as on the server that the server no longer lists was deleted by no
    /// device with the key: a page naming each as lost, as a tombstone nobody sealed is. Read after the
    /// pull, so a record made there meanwhile is merely not yet pulled; nil when nothing is gone or the remote
    /// has tombstones.
    private func goneFromTheListing(of entity: String, wire: EntitySchema) throws -> RemotePage? {
        guard let live = try inner.liveIDs(of: wire) else { return nil }
        var gone = RemotePage(records: [], skipped: [], cursor: nil)
        try store.forEachRecordLiveOnServer(entity: entity) { id, version in
            if !live.contains(id) { gone.lost.append(SkippedRecord(id: id, version: version, reason: Self.unsealedDeletion)) }
        }
        return gone.lost.isEmpty ? nil : gone
    }

    /// The page with every record opened; what does not open or replays an older version is skipped with its
    /// reason, and a deletion no device with the key sealed is named as lost (`RemotePage.lost`). The counters of what opened are raised first,
    /// so that a crash between the two never lets a replay of what was seen through.
    private func opened(_ page: RemotePage, entity: String, envelope: SealedEnvelope) throws -> RemotePage {
        let ids = page.entries.map { page.id(of: $0) }
        let known = try store.sealedCounters(remote: address, entity: entity, ids: ids)
        var records: [RemoteRecord] = [], skipped = page.skipped, lost: [SkippedRecord] = [], seen: [String: UInt64] = [:]
        for entry in page.entries {
            let id = page.id(of: entry)
            func skip(_ reason: String) { skipped.append(SkippedRecord(id: id, version: entry.version, reason: reason)) }
            let record: RemoteRecord
            do { record = try page.record(entry) } catch { skip("its fields do not read: \(error)"); continue }
            guard let fields = record.fields else {
                lost.append(SkippedRecord(id: id, version: entry.version, reason: Self.unsealedDeletion))
                continue
            }
            switch envelope.open(fields, entity: entity, id: id) {
            case .failure(let error):
                skip(error.message)
            case .success(let contents):
                let newest = max(known[id] ?? 0, seen[id] ?? 0)
                if contents.counter < newest {
                    skip("the server sent an older version (\(contents.counter); this store has seen \(newest)): refused as a replay")
                    continue
                }
                seen[id] = contents.counter
                records.append(RemoteRecord(id: id, version: record.version, fields: contents.fields, author: record.author,
                                            localFields: record.localFields))
            }
        }
        try store.recordSealing(remote: address, entity: entity, counters: seen)
        var opened = RemotePage(records: records, skipped: skipped, cursor: page.cursor, total: page.total)
        opened.lost = page.lost + lost
        opened.isReread = page.isReread
        opened.isRecreated = page.isRecreated
        // Not `needsVerification`: a sealed remote offers no listing to check against (`canList`).
        opened.isCheckpoint = page.isCheckpoint
        opened.state = page.state
        // The server counts sealed deletions among its live records: its count says nothing of the log's.
        opened.liveRecords = nil
        return opened
    }

    // MARK: push

    /// Every write is a conditional replace of the sealed record, a deletion included (a sealed tombstone the
    /// server keeps): each carries the record's counter, one more than the highest this store knows.
    public func push(_ operations: [RemoteOperation], of entity: EntitySchema) throws -> [RemoteOutcome] {
        let envelope = try envelope(for: entity)
        let wire = try SealedEnvelope.wireSchema(for: entity)
        var known = try store.sealedCounters(remote: address, entity: entity.name, ids: operations.map(\.id))
        func sealed(_ id: String, _ fields: JSONObject?) throws -> JSONObject {
            let counter = (known[id] ?? 0) + 1
            known[id] = counter
            return try envelope.seal(SealedEnvelope.Contents(counter: counter, fields: fields), entity: entity.name, id: id)
        }
        let sent: [RemoteOperation] = try operations.map { operation in
            switch operation {
            case .create(let id, let fields): .create(id: id, fields: try sealed(id, fields))
            case .update(let id, let fields, let version): .update(id: id, fields: try sealed(id, fields), version: version)
            case .delete(let id, let version): .update(id: id, fields: try sealed(id, nil), version: version)
            }
        }
        var outcomes = try inner.push(sent, of: wire)
        // A creation where a sealed deletion stands (a record deleted, then made again): a replace of that deletion.
        var again: [(index: Int, operation: RemoteOperation)] = []
        for (index, outcome) in outcomes.enumerated() {
            guard case .create(let id, let fields) = operations[index], case .preconditionFailed(let current?) = outcome,
                  let held = current.fields, case .success(let contents) = envelope.open(held, entity: entity.name, id: id),
                  contents.fields == nil else { continue }
            known[id] = max(known[id] ?? 0, contents.counter)
            again.append((index, .update(id: id, fields: try sealed(id, fields), version: current.version)))
        }
        if !again.isEmpty {
            for (outcome, retried) in zip(try inner.push(again.map(\.operation), of: wire), again) { outcomes[retried.index] = outcome }
        }
        // The counters acknowledged or seen, recorded once for the batch.
        var counters: [String: UInt64] = [:]
        let results = zip(operations, outcomes).map { operation, outcome -> RemoteOutcome in
            switch outcome {
            case .applied:
                counters[operation.id] = known[operation.id]
                return outcome
            case .appliedDifferently(let current):
                return opened(current, entity: entity.name, envelope: envelope, counters: &counters,
                              or: .rejected(status: 0, message: "the server answered with a record that does not open"))
            case .preconditionFailed(nil):
                if case .delete = operation { return .notFound }
                return outcome
            case .preconditionFailed(let current?):
                return opened(current, entity: entity.name, envelope: envelope, counters: &counters,
                              or: .rejected(status: 0, message: "the server's current record does not open"), conflict: true)
            case .notFound, .rejected:
                return outcome
            }
        }
        try store.recordSealing(remote: address, entity: entity.name, counters: counters)
        return results
    }

    /// `current` opened, as the outcome of a write, its counter noted in `counters`; `otherwise` when it does not open.
    private func opened(_ current: RemoteRecord, entity: String, envelope: SealedEnvelope, counters: inout [String: UInt64],
                        or otherwise: RemoteOutcome, conflict: Bool = false) -> RemoteOutcome {
        guard let fields = current.fields else { return conflict ? .preconditionFailed(current: current) : otherwise }
        guard case .success(let contents) = envelope.open(fields, entity: entity, id: current.id) else { return otherwise }
        counters[current.id] = max(counters[current.id] ?? 0, contents.counter)
        let record = RemoteRecord(id: current.id, version: current.version, fields: contents.fields, author: current.author,
                                  localFields: current.localFields)
        return conflict ? .preconditionFailed(current: record) : .appliedDifferently(current: record)
    }

    // MARK: the rest, the inner remote's

    public func isVersion(_ version: RemoteVersion, olderThan other: RemoteVersion) -> Bool {
        inner.isVersion(version, olderThan: other)
    }

    public var deletionVersion: RemoteVersion { inner.deletionVersion }

    public func pullFloor(of cursor: RemoteCursor) -> RemoteVersion? { inner.pullFloor(of: cursor) }

    public var knowsAuthors: Bool? { inner.knowsAuthors }

    public func access(to entity: EntitySchema) throws -> EntityAccess? {
        try inner.access(to: try SealedEnvelope.wireSchema(for: entity))
    }

    public var metaNamespace: String? { inner.metaNamespace }

    public func restore(_ state: String, of entity: EntitySchema) {
        if let wire = try? SealedEnvelope.wireSchema(for: entity) { inner.restore(state, of: wire) }
    }

    /// A sealed deletion stays on the server as a record, so the server's listing is not the log's live
    /// records: `verify --remote` and the loss checks that compare them are not offered encrypted.
    public var canList: Bool { false }

    public func record(_ id: String, of entity: EntitySchema) throws -> RemoteRecord? {
        guard let current = try inner.record(id, of: try SealedEnvelope.wireSchema(for: entity)), let fields = current.fields else { return nil }
        switch try envelope(for: entity).open(fields, entity: entity.name, id: id) {
        case .failure(let error): throw error
        case .success(let contents):
            return contents.fields.map { RemoteRecord(id: id, version: current.version, fields: $0, author: current.author) }
        }
    }
}
