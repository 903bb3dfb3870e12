public import EventStore

/// What `verify --remote` found: where the server is no longer what the
/// log believes it holds, in ways no pull can mend.
public struct RemoteVerification: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        /// The log holds the record as live on the server, which no longer has
        /// it and never sent a tombstone (purged by `kinto purge-deleted`, or lost).
        /// Repair: a remote deletion.
        case purged
        /// The server holds a version of the record the log never saw, at or
        /// below the pull cursor, so no pull will bring it. Repair: the record
        /// folded in as pulled.
        case unseen
        /// The server holds an older version than the one the log last had
        /// from it (a server restored from a backup: our pushes are gone
        /// there). Repair: the server's state taken as the base, so what the
        /// log holds is pending again and pushed by the next sync.
        case rolledBack
    }

    public struct Finding: Sendable, Equatable {
        public let entity: String
        public let id: String
        public let kind: Kind
        /// The server version the log holds; nil when it holds none.
        public let logVersion: RemoteVersion?
        /// The version the server lists; nil when it lists none.
        public let serverVersion: RemoteVersion?
    }

    public var findings: [Finding] = []
    /// Live records the server listed, per entity.
    public var listed: [String: Int] = [:]
    /// Findings turned into events (with `repair`).
    public var repaired = 0
    /// Entities left out, unchecked: those the store holds a scope of (`Store.scope(of:)`), whose listing would be
    /// the scope's, where a record held here outside it is no finding.
    public var unchecked: [String] = []

    public init() {}
}

extension SyncEngine {
    /// Compares what the log believes the server holds with a listing of
    /// the server's ids and versions, entity by entity, and with `repair`
    /// appends the events that make the next sync converge. Holds the sync
    /// lock, so it never runs beside a sync.
    public func verifyRemote(repair: Bool, policy: ConflictPolicy = .serverWins) throws(SyncError) -> RemoteVerification {
        let lock = try SyncLock(directory: store.directory)
        defer { withExtendedLifetime(lock) {} }
        do {
            let remote = try makeRemote()
            // What the log believes another server holds says nothing of this one.
            if let synced = try store.syncedRemote(), synced != remote.address {
                throw SyncError(.invalidRemote, "the log last synced with \(synced), not \(remote.address): "
                    + "sync with \(remote.address) first, then verify it")
            }
            var verification = RemoteVerification()
            var report = SyncReport()
            for schema in store.schemas.entities where remote.holds(schema) {
                if try store.scope(of: schema.name) != nil {
                    verification.unchecked.append(schema.name)
                    continue
                }
                // With `repair`, the user has decided about what a loss left: later syncs repair by themselves again.
                try verify(schema, against: remote, repair: repair, missing: .decided(.delete), policy: policy, into: &verification, report: &report)
            }
            return verification
        } catch {
            throw SyncError.from(error)
        }
    }

    /// Verifies one entity; with `repair`, appends the events its findings call for.
    /// - Parameter missing: what to do with `purged` findings (records the server lacks): kept, they are
    ///   listed in `report.goneFromServer` and the entity stays suspected of a loss until a decision.
    func verify(_ schema: EntitySchema, against remote: any SyncRemote, repair: Bool, missing: MissingRecordsHandling,
                policy: ConflictPolicy, into verification: inout RemoteVerification, report: inout SyncReport) throws {
        let entity = schema.name
        let cursor = try store.pullCursor(remote: remote.address, entity: entity).flatMap(remote.pullFloor(of:))
        var findings: [RemoteVerification.Finding] = []
        // The ids listed: memory grows with the collection (an id each), the one thing
        // needed to find records the server no longer has.
        var listed = Set<String>()
        try remote.listing(of: schema) { page in
            for ((id, version), projection) in zip(page, try store.projections(entity: entity, ids: page.map(\.id))) {
                listed.insert(id)
                if let known = projection.version, remote.isVersion(version, olderThan: known) {
                    findings.append(.init(entity: entity, id: id, kind: .rolledBack, logVersion: known, serverVersion: version))
                } else if projection.version == version, projection.shadow != nil {
                    continue  // in step
                } else if let cursor, !remote.isVersion(cursor, olderThan: version) {
                    findings.append(.init(entity: entity, id: id, kind: .unseen, logVersion: projection.version, serverVersion: version))
                }
                // Otherwise newer than the cursor: the next pull brings it.
            }
            return true
        }
        verification.listed[entity] = listed.count
        try store.forgetSkipped(entity: entity, notIn: listed)
        var held = 0
        try store.forEachRecordLiveOnServer(entity: entity) { id, version in
            held += 1
            if !listed.contains(id) {
                findings.append(.init(entity: entity, id: id, kind: .purged, logVersion: version, serverVersion: nil))
            }
        }
        verification.findings += findings
        guard repair else { return }
        let purged = findings.filter { $0.kind == .purged }
        let action = missing.action(missing: purged.count, held: held)
        // The server's records first, with no transaction open; then one write.
        var current: [String: RemoteRecord] = [:]
        for finding in findings where finding.kind != .purged {
            if let record = try remote.record(finding.id, of: schema) { current[finding.id] = record }
        }
        var pending = report
        var repaired = 0
        // No transaction (each is a flushed commit) when only missing records were found, or nothing.
        if findings.contains(where: { $0.kind != .purged }) { try store.ingest { writer in
            for finding in findings {
                switch finding.kind {
                case .purged:
                    continue
                case .unseen:
                    // Not compared by version: at the version the log has, the log holds it as not live (deleted
                    // here when another server lacked it), and the server's record is what the log lacks.
                    guard let record = current[finding.id],
                          try fold(record, entity: entity, policy: policy, checkVersion: false, author: record.author ?? remote.address,
                                   writer: &writer, report: &pending)
                    else { continue }
                case .rolledBack:
                    // The server's state becomes the base the log's is pushed over again.
                    guard let record = current[finding.id] else { continue }
                    let projection = try writer.projection(entity: entity, id: finding.id)
                    try writer.append(Event(eventID: RecordID.generate(), at: store.clock(), entity: entity, recordID: finding.id,
                                            kind: .acknowledged, origin: .remote, author: remote.address,
                                            version: record.version, server: RecordState(record.fields)),
                                      current: projection)
                }
                repaired += 1
            }
        } }
        report = pending
        if purged.isEmpty {
            try store.noteServerRestored(false, remote: remote.address, entity: entity)
        } else if let action {
            try resolveMissing(purged.compactMap { finding in finding.logVersion.map { (finding.id, $0) } }, entity: entity,
                               action: action, policy: policy, author: remote.address, report: &report)
            repaired += purged.count
            try store.noteServerRestored(false, remote: remote.address, entity: entity)
        } else {
            try holdMissing(purged.map(\.id), entity: entity, remote: remote.address, report: &report)
        }
        verification.repaired += repaired
    }
}
