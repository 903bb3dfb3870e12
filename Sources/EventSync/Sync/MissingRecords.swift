import EventStore

/// What to do with records the log holds as live on the server that the
/// server no longer has, and for which it sent no tombstone.
///
/// Such an absence is either a deletion whose tombstone the server dropped
/// (Kinto's `purge-deleted`; Parse never keeps one) or a server that lost its
/// data: wiped, re-created, restored empty, or another server altogether. The
/// first is followed by itself; the second is never taken for the user
/// deleting, since this device may hold the only copy. A sync that sees a loss
/// keeps the records, reports them (`SyncReport.goneFromServer`) at every sync
/// until the user decides, and deletes or pushes nothing for them until then.
public enum MissingRecords: String, Sendable, CaseIterable, Codable {
    /// Put them back: each becomes a local creation again, pushed by this sync.
    case pushBack = "push-back"
    /// Follow the server: each is deleted here, as a remote deletion.
    case delete

    /// Whether absences look like a server's loss rather than deletions: they
    /// would remove every record of the entity held in step there, or more than
    /// half of them when that is at least `largeShareMinimum` records.
    /// (A few deletions among many are what Parse's users do every day; all of
    /// them at once, or most of a large table, is what a wiped server does.)
    static func looksLikeLoss(missing: Int, held: Int) -> Bool {
        guard missing > 0 else { return false }
        return missing == held || (missing >= largeShareMinimum && 2 * missing > held)
    }

    static let largeShareMinimum = 10
}

/// How one check treats the missing records it finds.
enum MissingRecordsHandling {
    /// The user's decision.
    case decided(MissingRecords)
    /// Held back when `lossSuspected` (a re-created collection, another server, a loss not yet
    /// decided) or when their share looks like a loss; deleted otherwise.
    case judged(lossSuspected: Bool)

    /// What to do with `missing` of the `held` records the log holds live on the server; nil: keep them.
    func action(missing: Int, held: Int) -> MissingRecords? {
        switch self {
        case .decided(let decision):
            return decision
        case .judged(let lossSuspected):
            return lossSuspected || MissingRecords.looksLikeLoss(missing: missing, held: held) ? nil : .delete
        }
    }
}

extension SyncEngine {
    /// Applies `action` to records missing from the server, in one transaction: remote deletions, or, to
    /// push them back, an acknowledgement that the server holds nothing of them (so each is a local
    /// creation again, pushed with `If-None-Match: *`, which never makes a second copy).
    func resolveMissing(_ ids: [(id: String, version: RemoteVersion)], entity: String, action: MissingRecords, policy: ConflictPolicy,
                        author: String, report: inout SyncReport) throws {
        guard !ids.isEmpty else { return }
        var pending = report
        try store.ingest { writer in
            for (id, version) in ids {
                switch action {
                case .delete:
                    try fold(RemoteRecord(id: id, version: version, fields: nil), entity: entity, policy: policy,
                             checkVersion: false, author: author, writer: &writer, report: &pending)
                case .pushBack:
                    let projection = try writer.projection(entity: entity, id: id)
                    try writer.append(Event(eventID: RecordID.generate(), at: store.clock(), entity: entity, recordID: id,
                                            kind: .acknowledged, origin: .remote, author: author, version: nil, server: .absent),
                                      current: projection)
                }
            }
        }
        report = pending
    }

    /// Keeps records missing from the server, and says so until the user decides.
    func holdMissing(_ ids: [String], entity: String, remote: String, reason: String = "gone from the server without a tombstone",
                     report: inout SyncReport) throws {
        report.goneFromServer += ids.map { Skip(entity: entity, id: $0, reason: reason) }
        try store.noteServerRestored(true, remote: remote, entity: entity, missing: ids)
    }

    /// Records the remote says the server no longer holds, without a deletion it trusts (`RemotePage.lost`): as
    /// records a server lost, kept and named until `--missing` decides, never deleted by themselves. A remote with
    /// no listing to check against says so once (a tombstone is not sent again): those it named before (`kept`, less
    /// any pulled again since) stay named, and are decided with the new ones.
    func settleLost(_ lost: [Skip], kept: Set<String>, entity: String, remote: any SyncRemote, missing: MissingRecords?,
                            policy: ConflictPolicy, report: inout SyncReport) throws {
        guard !remote.canList else { return }
        var seen = Set<String>()
        let ids = (lost.compactMap(\.id) + kept.sorted()).filter { seen.insert($0).inserted }
        guard !ids.isEmpty else {
            // Every record named before came back: nothing is missing any more.
            if try !(store.recordsMissingFromServer()[entity] ?? []).isEmpty {
                try store.noteServerRestored(false, remote: remote.address, entity: entity)
            }
            return
        }
        if let missing {
            var versions: [String: RemoteVersion] = [:]
            try store.forEachRecordLiveOnServer(entity: entity) { id, version in versions[id] = version }
            try resolveMissing(ids.compactMap { id in versions[id].map { (id: id, version: $0) } }, entity: entity, action: missing,
                               policy: policy, author: remote.address, report: &report)
            try store.noteServerRestored(false, remote: remote.address, entity: entity)
        } else {
            try holdMissing(ids, entity: entity, remote: remote.address, reason: lost.first?.reason ?? "gone from the server without a tombstone",
                            report: &report)
        }
    }
}
