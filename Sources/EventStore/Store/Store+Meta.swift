import Storage
/// Small settings kept beside the log in the `meta` database: the remote,
/// the pull cursors and the last sync. None of them says what is pending:
/// that comes from the log alone.
extension Store {
    enum MetaKey {
        static let remote = "remote"
        static let lastSync = "last-sync"
        /// How many server records syncs have skipped (each a `skipped` event), as decimal text.
        static let skippedRecords = "skipped-records"
        /// The ids of an entity's skipped records, one a line: those the server no longer has stop counting.
        static func skippedIDs(entity: String) -> String { "skipped-ids\u{0}\(entity.lowercased())" }
        /// Whether the remote says who made its changes: `known` or `unknown`, as the last sync found.
        static let remoteAuthors = "remote-authors"
        /// The number of the last event, written by every commit that appends (see `Store.checkLogEnd`).
        static let logEnd = "log-end"
        /// Set on a store created with events stamped in order (`EventLog.Appender.stamp`): a time is
        /// then found in its log by bisection (`Store.seq(at:in:)`).
        static let stampsInOrder = "stamps-in-order"
        /// This store's id, made by its first compaction, which every archive segment carries (`ArchiveSegment`).
        static let storeID = "store-id"
        /// The seq of the `compacted` event whose records are still being moved (`Store.compact`).
        static let compactionPending = "compaction-pending"
        /// How many events compactions have deleted from the live log (each is in a segment), as decimal text:
        /// the live log's count plus this is its last seq (`Store.checkLogEnd`).
        static let movedEvents = "moved-events"
        /// Where a pull of one entity from one remote stopped.
        static func cursor(remote: String, entity: String) -> String { "cursor\u{0}\(remote)\u{0}\(entity.lowercased())" }
        static func restored(remote: String, entity: String) -> String { "restored\u{0}\(remote)\u{0}\(entity.lowercased())" }
        /// The ids of records kept here that the server lacked at the last check, one a line, until the user decides.
        static func missing(remote: String, entity: String) -> String { "missing\u{0}\(remote)\u{0}\(entity.lowercased())" }
        /// Set once a sync with a remote has gone through: a first pull from it is then no other server's.
        static func synced(remote: String) -> String { "synced\u{0}\(remote)" }
        /// The remote the last sync that went through talked to: the server whose versions and
        /// acknowledgements the log's records hold (docs/decisions/one-remote-at-a-time.md).
        static let syncedRemote = "synced-remote"
    }

    func meta(_ key: String, in transaction: Transaction) throws -> String? {
        try transaction.get(Array(key.utf8), in: meta).map { String(decoding: $0, as: UTF8.self) }
    }

    func setMeta(_ key: String, _ value: String, in transaction: Transaction) throws {
        try transaction.put(Array(key.utf8), Array(value.utf8), in: meta)
    }

    /// Sets `key` to `value`, or removes it when `value` is nil, in a write transaction of its own.
    func writeMeta(_ key: String, _ value: String?) throws(StoreError) {
        do {
            try environment.write { try setMeta(key, value, in: $0) }
        } catch {
            throw wrap(error)
        }
    }

    /// Sets `key` to `value`, or removes it when `value` is nil.
    func setMeta(_ key: String, _ value: String?, in transaction: Transaction) throws {
        if let value { try setMeta(key, value, in: transaction) } else { _ = try transaction.delete(Array(key.utf8), in: meta) }
    }

    /// The remote used last (its address, without credentials).
    public func rememberedRemote() throws(StoreError) -> String? {
        try snapshot { try meta(MetaKey.remote, in: $0) }
    }

    /// The longest remote address a store takes: pull cursors are keyed by it
    /// and the entity's name (`EntitySchema.maxNameLength`), and LMDB keys
    /// hold at most 511 bytes.
    public static let maxRemoteAddressLength = 400

    /// Remembers the remote a sync talks to, for the next plain `sync`.
    package func rememberRemote(_ address: String) throws(StoreError) {
        guard address.utf8.count <= Self.maxRemoteAddressLength else {
            throw StoreError(.invalidData, "the remote address is too long (\(address.utf8.count) bytes; at most \(Self.maxRemoteAddressLength))")
        }
        if try rememberedRemote() != address { try writeMeta(MetaKey.remote, address) }
    }

    /// Whether a sync with `remote` has gone through since this evsync began noting it (or it gave a pull cursor).
    package func hasSynced(with remote: String) throws(StoreError) -> Bool {
        try snapshot { try meta(MetaKey.synced(remote: remote), in: $0) } != nil
    }

    /// Notes that a sync with `remote` went through: it is now the server the log's versions are from.
    package func noteSynced(with remote: String) throws(StoreError) {
        if try !hasSynced(with: remote) { try writeMeta(MetaKey.synced(remote: remote), "yes") }
        if try snapshot({ try meta(MetaKey.syncedRemote, in: $0) }) != remote { try writeMeta(MetaKey.syncedRemote, remote) }
    }

    /// The remote the last sync that went through talked to, whose versions and acknowledgements the
    /// log's records hold; nil before any. (A store from before this was noted: its remembered remote,
    /// if a sync with it went through.)
    public func syncedRemote() throws(StoreError) -> String? {
        if let remote = try snapshot({ try meta(MetaKey.syncedRemote, in: $0) }) { return remote }
        guard let remembered = try rememberedRemote(), try hasSynced(with: remembered) else { return nil }
        return remembered
    }

    /// Whether the server's data of `entity` went back in time (restored from a backup) since
    /// `verify --remote --repair` last decided what to do with records it no longer has.
    package func serverWasRestored(remote: String, entity: String) throws(StoreError) -> Bool {
        try snapshot { try meta(MetaKey.restored(remote: remote, entity: entity), in: $0) } == "yes"
    }

    /// Records whether it was; writes only when that changes, since every write is a flushed commit.
    /// - Parameter missing: the records kept here that the server lacks (nil: as they were); none once it was not restored.
    package func noteServerRestored(_ restored: Bool, remote: String, entity: String, missing: [String]? = nil) throws(StoreError) {
        if try serverWasRestored(remote: remote, entity: entity) != restored {
            try writeMeta(MetaKey.restored(remote: remote, entity: entity), restored ? "yes" : "no")
        }
        guard let ids = restored ? missing : [] else { return }
        let text = Set(ids).sorted().joined(separator: "\n")
        if try snapshot({ try meta(MetaKey.missing(remote: remote, entity: entity), in: $0) }) ?? "" != text {
            try writeMeta(MetaKey.missing(remote: remote, entity: entity), text)
        }
    }

    /// The records kept here, by entity, that the store's server lacked at its last check (wiped, re-created,
    /// restored from an older backup) and that nobody has decided about yet (`sync --missing`): in step
    /// with nothing, though each looks in step with the server.
    public func recordsMissingFromServer() throws(StoreError) -> [String: [String]] {
        var remote = try syncedRemote()
        if remote == nil { remote = try rememberedRemote() }
        guard let remote else { return [:] }
        var missing: [String: [String]] = [:]
        for schema in schemas.entities {
            let text = try snapshot { try meta(MetaKey.missing(remote: remote, entity: schema.name), in: $0) } ?? ""
            let ids = text.split(separator: "\n").map(String.init)
            if !ids.isEmpty { missing[schema.name] = ids }
        }
        return missing
    }

    /// Where the last pull of `entity` from `remote` stopped; nil before the first.
    package func pullCursor(remote: String, entity: String) throws(StoreError) -> RemoteCursor? {
        try snapshot { try meta(MetaKey.cursor(remote: remote, entity: entity), in: $0) }.map(RemoteCursor.init)
    }

    /// How many server records syncs have skipped so far (each logged as a `skipped` event).
    public func skippedRecords() throws(StoreError) -> Int {
        try snapshot { try skippedCount(in: $0) }
    }

    func skippedCount(in transaction: Transaction) throws -> Int {
        try meta(MetaKey.skippedRecords, in: transaction).flatMap { Int($0) } ?? 0
    }

    /// Counts skips logged in this transaction: a counter beside the log, so that `status` need not read the log;
    /// and notes the ids of `entity`'s skipped records, so that one the server no longer has stops counting.
    func addSkipped(_ records: [SkippedRecord], entity: String, in transaction: Transaction) throws {
        try setMeta(MetaKey.skippedRecords, String(try skippedCount(in: transaction) + records.count), in: transaction)
        let ids = records.compactMap(\.id)
        guard !ids.isEmpty else { return }
        var known = try skippedIDs(entity: entity, in: transaction)
        known.formUnion(ids)
        try setMeta(MetaKey.skippedIDs(entity: entity), known.sorted().joined(separator: "\n"), in: transaction)
    }

    private func skippedIDs(entity: String, in transaction: Transaction) throws -> Set<String> {
        Set((try meta(MetaKey.skippedIDs(entity: entity), in: transaction) ?? "").split(separator: "\n").map(String.init))
    }

    /// Stops counting the skipped records of `entity` that the server no longer lists (`live`: every id it has):
    /// a record it lost, or deleted, is no longer one the store could not hold. One transaction, only when any went.
    package func forgetSkipped(entity: String, notIn live: Set<String>) throws(StoreError) {
        let gone = try snapshot { try skippedIDs(entity: entity, in: $0) }.subtracting(live)
        guard !gone.isEmpty else { return }
        do {
            try environment.write { transaction in
                let kept = try skippedIDs(entity: entity, in: transaction).subtracting(gone)
                try setMeta(MetaKey.skippedIDs(entity: entity), kept.sorted().joined(separator: "\n"), in: transaction)
                try setMeta(MetaKey.skippedRecords, String(max(0, try skippedCount(in: transaction) - gone.count)), in: transaction)
            }
        } catch {
            throw wrap(error)
        }
    }

    /// Whether the remote's changes come with their authors, as the last sync
    /// that found out saw; nil before one did.
    public func remoteAuthorsKnown() throws(StoreError) -> Bool? {
        try snapshot { try meta(MetaKey.remoteAuthors, in: $0) }.map { $0 == "known" }
    }

    package func recordRemoteAuthorsKnown(_ known: Bool) throws(StoreError) {
        if try remoteAuthorsKnown() != known { try writeMeta(MetaKey.remoteAuthors, known ? "known" : "unknown") }
    }

    /// The last sync that finished or failed: when, its result, and why it failed.
    public func lastSync() throws(StoreError) -> LastSync? {
        try snapshot { transaction in
            guard let text = try meta(MetaKey.lastSync, in: transaction),
                  let object = try? JSONParser.parse(text).objectValue,
                  let at = object["at"]?.stringValue.flatMap(Timestamp.parse),
                  let result = object["result"]?.stringValue.flatMap(SyncResult.init(rawValue:))
            else { return nil }
            let startedAfter = object["startedAfter"]?.int64Value.flatMap { UInt64(exactly: $0) }
            return LastSync(at: at, result: result, startedAfter: startedAfter, error: object["error"]?.stringValue,
                            interrupted: object["interrupted"]?.boolValue ?? false)
        }
    }

    /// Records a sync that ended, for `status` and `lastSync()`: a failed one
    /// too, with its error, so that `status` tells why the data may be stale.
    /// A meta entry, not an event: a sync that failed changed no record.
    /// - Parameter startedAfter: the last event before the sync began (the point `last-sync` names).
    package func recordLastSync(_ result: SyncResult, startedAfter: UInt64? = nil, error: String? = nil,
                                interrupted: Bool = false) throws(StoreError) {
        var object: JSONObject = ["at": .string(Timestamp.iso8601(milliseconds: clock())), "result": .string(result.rawValue)]
        if let startedAfter { object["startedAfter"] = .number(JSONNumber(startedAfter)) }
        if let error { object["error"] = .string(error) }
        if interrupted { object["interrupted"] = true }
        try writeMeta(MetaKey.lastSync, JSONWriter.string(.object(object)))
    }
}

/// How a sync went, as the seeds' background fetch answered: it brought
/// something, it brought nothing, or it failed.
public enum SyncResult: String, Sendable, CaseIterable, Codable {
    case newData, noData, failed
}

/// The last sync that ended, whether it finished or failed.
public struct LastSync: Sendable, Equatable {
    /// When it ended, in milliseconds since 1970 (UTC).
    public let at: Int64
    public let result: SyncResult
    /// The last event before the sync began: the state before its changes. Nil for a sync
    /// recorded by an evsync from before `diff --from last-sync`.
    public var startedAfter: UInt64? = nil
    /// Why it failed, when it stopped on an error (a sync that finished with refusals has none).
    public var error: String? = nil
    /// It was asked to stop (Ctrl-C, a cancelled task) before it was done.
    public var interrupted = false

    /// `at` as ISO 8601, UTC, with milliseconds.
    public var iso8601: String { Timestamp.iso8601(milliseconds: at) }
}
