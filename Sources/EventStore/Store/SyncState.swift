import Storage

/// Where the store stands with its server, from the store alone (no network): what an app shows as
/// "synced" or "3 changes waiting", and what `evsync status` prints.
///
/// ```swift
/// for try await state in store.observeSyncState() {
///     badge.text = state.isInSync ? nil : "\(state.pendingRecords)"
///     footer.text = state.summary          // "not in sync: 2 records to push (1 refused by the server)"
/// }
/// ```
///
/// It says what the log knows as of the last sync: a change another device pushed since is not known
/// until a sync pulls it. Why each record is pending: `Store.pendingChanges(limit:)`.
///
/// `Codable`, as `status --json` names its members (`inSync` and `summary` are written, not read back; a member
/// missing when decoding takes its initial value).
public struct SyncState: Sendable, Equatable, Codable {
    /// The remote the store syncs with (`sync --remote`); nil before any.
    public var remote: String?
    /// Records whose local state the server has not acknowledged.
    public var pendingRecords = 0
    /// Local events not yet acknowledged by a server.
    public var unacknowledgedEvents = 0
    /// Pending records whose last push the server refused (`SyncReport.rejected`), unchanged since:
    /// they stay pending, held: a sync does not send them again until they are edited or reverted, or it is
    /// asked to (`SyncEngine.sync(resendRefused:)`).
    public var rejectedRecords = 0
    /// Records kept here that the server lacked at the last sync (lost, wiped, restored from an older
    /// backup), by entity, until `sync --missing` decides (`Store.recordsMissingFromServer`).
    public var missingFromServer: [String: [String]] = [:]
    /// Conflicts a sync decided by its policy that no `resolve` has decided again (`Store.conflicts(openOnly:)`).
    /// They do not keep the store out of sync: both sides hold the merge. Nil when a damaged event kept them
    /// from being counted (`Store.verifyLog()` says which); the rest of the state is read from the views and stands.
    public var openConflicts: Int? = 0
    /// Server records syncs could not store here (`skipped` events).
    public var skippedRecords = 0
    /// The last sync that ended: when, how, and why it failed.
    public var lastSync: LastSync?
    /// What the server lets this account do with each entity, as the last sync learned it (`Store.access(of:)`);
    /// an entity the server said nothing of is absent.
    public var access: [String: EntityAccess] = [:]

    public init() {}

    /// How many records the server lacks, over every entity.
    public var missingCount: Int { missingFromServer.values.reduce(0) { $0 + $1.count } }

    /// True only when the last sync went through, every local change is acknowledged, the server holds
    /// every record kept here and this store holds every record of the server's it was sent.
    public var isInSync: Bool {
        guard remote != nil, let lastSync, lastSync.error == nil, !lastSync.interrupted else { return false }
        return pendingRecords == 0 && missingCount == 0 && skippedRecords == 0
    }

    /// One line for people: "in sync as of the last sync: every local change is on the server", or
    /// "not in sync: " and what keeps it so. `evsync status` prints it.
    public var summary: String {
        let review = switch openConflicts {
        case 0: ""
        case let open?: "; \(Self.count(open, "conflict")) decided by policy, to review"
        case nil: "; open conflicts unknown: the log cannot be read (evsync log verify)"
        }
        if isInSync { return "in sync as of the last sync: every local change is on the server" + review }
        var reasons: [String] = []
        if remote == nil || lastSync == nil { reasons.append("never synced") }
        if pendingRecords > 0 {
            reasons.append("\(Self.count(pendingRecords, "record")) to push"
                + (rejectedRecords == 0 ? "" : " (\(rejectedRecords) refused by the server)"))
        }
        if missingCount > 0 { reasons.append("\(Self.count(missingCount, "record")) the server lacks") }
        if skippedRecords > 0 { reasons.append("\(Self.count(skippedRecords, "server record")) could not be stored here") }
        if let lastSync, remote != nil {
            if lastSync.interrupted { reasons.append("the last sync was interrupted") }
            else if lastSync.error != nil { reasons.append("the last sync failed") }
        }
        return "not in sync: " + reasons.joined(separator: ", ") + review
    }

    private static func count(_ number: Int, _ noun: String) -> String { "\(number) \(noun)\(number == 1 ? "" : "s")" }

    enum CodingKeys: String, CodingKey {
        case remote, pendingRecords, unacknowledgedEvents, rejectedRecords, missingFromServer, openConflicts, skippedRecords,
             lastSync, access, inSync, summary
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        remote = try container.decodeIfPresent(String.self, forKey: .remote)
        pendingRecords = try container.decodeIfPresent(Int.self, forKey: .pendingRecords) ?? 0
        unacknowledgedEvents = try container.decodeIfPresent(Int.self, forKey: .unacknowledgedEvents) ?? 0
        rejectedRecords = try container.decodeIfPresent(Int.self, forKey: .rejectedRecords) ?? 0
        missingFromServer = try container.decodeIfPresent([String: [String]].self, forKey: .missingFromServer) ?? [:]
        openConflicts = container.contains(.openConflicts) ? try container.decodeIfPresent(Int.self, forKey: .openConflicts) : 0
        skippedRecords = try container.decodeIfPresent(Int.self, forKey: .skippedRecords) ?? 0
        lastSync = try container.decodeIfPresent(LastSync.self, forKey: .lastSync)
        access = try container.decodeIfPresent([String: EntityAccess].self, forKey: .access) ?? [:]
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(remote, forKey: .remote)
        try container.encode(pendingRecords, forKey: .pendingRecords)
        try container.encode(unacknowledgedEvents, forKey: .unacknowledgedEvents)
        try container.encode(rejectedRecords, forKey: .rejectedRecords)
        try container.encode(missingFromServer, forKey: .missingFromServer)
        try container.encode(openConflicts, forKey: .openConflicts)  // null when unknown
        try container.encode(skippedRecords, forKey: .skippedRecords)
        try container.encodeIfPresent(lastSync, forKey: .lastSync)
        try container.encode(access, forKey: .access)
        try container.encode(isInSync, forKey: .inSync)
        try container.encode(summary, forKey: .summary)
    }
}

/// `{at, result, startedAfter?, error?, interrupted?}`, `at` in ISO 8601 with milliseconds, as `status --json` has it.
extension LastSync: Codable {
    enum CodingKeys: String, CodingKey {
        case at, result, startedAfter, error, interrupted
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let text = try container.decode(String.self, forKey: .at)
        guard let at = Timestamp.parse(text) else {
            throw DecodingError.dataCorruptedError(forKey: .at, in: container, debugDescription: "not an ISO 8601 time: \(text)")
        }
        self.init(at: at, result: try container.decode(SyncResult.self, forKey: .result),
                  startedAfter: try container.decodeIfPresent(UInt64.self, forKey: .startedAfter),
                  error: try container.decodeIfPresent(String.self, forKey: .error),
                  interrupted: try container.decodeIfPresent(Bool.self, forKey: .interrupted) ?? false)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(iso8601, forKey: .at)
        try container.encode(result, forKey: .result)
        try container.encodeIfPresent(startedAfter, forKey: .startedAfter)
        try container.encodeIfPresent(error, forKey: .error)
        if interrupted { try container.encode(true, forKey: .interrupted) }
    }
}

extension Store {
    /// Where the store stands with its server now (see `SyncState`). Reads the outbox, the meta entries, the
    /// kind of every live event (to find the conflicts) and the conflicts' records, not the table.
    public func syncState() throws(StoreError) -> SyncState {
        var tally = ConflictTally()
        return try syncState(conflicts: &tally)
    }

    /// Open conflicts as of event `through`, so that an observer reads again only what changed them.
    struct ConflictTally {
        var through: UInt64?
        var open: Int? = 0
    }

    func syncState(conflicts tally: inout ConflictTally) throws(StoreError) -> SyncState {
        var state = try snapshot { transaction in
            var state = SyncState()
            try forEachOutboxRecord(in: transaction) { record in
                state.pendingRecords += 1
                state.unacknowledgedEvents += record.unacknowledged
                if record.refused { state.rejectedRecords += 1 }
            }
            state.skippedRecords = try skippedCount(in: transaction)
            let last = try log.lastSeq(in: transaction)
            do {
                if try tally.through.map({ try !conflictsUnchanged(after: $0, through: last, in: transaction) }) ?? true {
                    var open = 0
                    try forEachConflict(openOnly: true, in: transaction) { _, _, _ in open += 1 }
                    tally.open = open
                }
            } catch is EventDecodingError {
                // A damaged event: `status` still answers (what is pending comes from the views), the count unknown.
                tally.open = nil
            }
            tally.through = last
            state.openConflicts = tally.open
            return state
        }
        state.remote = try rememberedRemote()
        state.missingFromServer = try recordsMissingFromServer()
        state.lastSync = try lastSync()
        state.access = try accessByEntity()
        return state
    }

    /// Whether the events after `seq` (to `last`) leave the open conflicts as they were: none is a
    /// conflict or a decision on one. Reads only those events.
    private func conflictsUnchanged(after seq: UInt64, through last: UInt64, in transaction: Transaction) throws -> Bool {
        guard seq <= last else { return false }  // the log went back (a restore): count again
        var unchanged = true
        try log.forEach(from: seq + 1, in: transaction) { event in
            if event.kind == .conflict || event.resolves != nil || event.kind == .compacted { unchanged = false }
            return unchanged && event.seq < last
        }
        return unchanged
    }

    /// The sync state now, and again after each commit that changed it (in this process or another,
    /// whatever it wrote: a local change, a sync's events, the end of a sync): `SyncState` values,
    /// each different from the one before. Woken by commits as `logChanges` is; nothing runs while the
    /// store is idle. A commit costs the outbox's walk and the events it appended.
    /// - Parameter interval: how often to look where inotify cannot be had.
    public func observeSyncState(every interval: Duration = .milliseconds(200)) -> AsyncThrowingStream<SyncState, any Error> {
        Self.taskStream(bufferingPolicy: .bufferingNewest(1)) { [self] continuation in
            let commits = environment.commits
            commits.startWatching()
            var tally = ConflictTally()
            var last: SyncState?
            while !Task.isCancelled {
                // Read before the look: a commit after it bumps the generation, so no commit is missed.
                let generation = commits.generation
                try checkStillInPlace()
                let state = try syncState(conflicts: &tally)
                if state != last {
                    last = state
                    continuation.yield(state)
                }
                await commits.wait(past: generation, orAfter: interval)
            }
        }
    }

    /// The pending records, with why each is pending (`whyPending`): at most `limit`, in the outbox's
    /// order (by entity, then id).
    public func pendingChanges(limit: Int = .max) throws(StoreError) -> [PendingReason] {
        try pendingRecords(limit: limit) { _ in true }
    }

    /// The records holding a local change made at or before event `seq` that the server has not
    /// acknowledged (a merge with a conflict is not an acknowledgement): what a wait for a sync waits for.
    /// - Returns: how many, how many of them the server refused since their last change here, and at most
    ///   `limit` of them with why each is pending.
    package func unacknowledgedChanges(through seq: UInt64, limit: Int) throws(StoreError)
        -> (count: Int, refused: Int, records: [PendingReason]) {
        var (count, refused) = (0, 0)
        let records = try pendingRecords(limit: limit) { record in
            let stuck = record.oldestUnacknowledged.map { $0 <= seq } ?? true
            if stuck { count += 1 }
            if stuck, record.refused { refused += 1 }
            return stuck
        }
        return (count, refused, records)
    }

    /// The outbox's records that `include` takes, at most `limit`, with why each is pending.
    private func pendingRecords(limit: Int, _ include: (OutboxRecord) -> Bool) throws(StoreError) -> [PendingReason] {
        let names = entityNames()
        let chosen = try snapshot { transaction in
            var chosen: [(String, String)] = []
            try forEachOutboxRecord(in: transaction) { record in
                if include(record), chosen.count < limit { chosen.append((names[record.entityKey] ?? record.entityKey, record.id)) }
            }
            return chosen
        }
        var reasons: [PendingReason] = []
        for (entity, id) in chosen {
            if let reason = try whyPending(entity, id: id), reason.isPending { reasons.append(reason) }
        }
        return reasons
    }
}
