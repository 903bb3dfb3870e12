import EventStore

/// What the server lets this account do with each entity, and the records that leave this store when it stops
/// letting the account read them: access lost is not a deletion, and not a server that lost records
/// (docs/decisions/access-lost-is-a-record-that-left.md, docs/decisions/a-read-only-entity-refuses-changes-up-front.md).
extension SyncEngine {
    /// What a `left` event says of a record this account may no longer read.
    static let noLongerShared = "no longer shared with you"

    /// Keeps what the server lets this account do with the entity, for `status` and for refusing a change of a
    /// read-only entity before it is made (when it is asked: `accessIsDue`, a refusal, a sign of a loss). Returns
    /// whether write access was granted since the last answer: the changes held for want of it then go up.
    func learnAccess(to schema: EntitySchema, from remote: any SyncRemote) throws -> Bool {
        let access: EntityAccess?
        // Not known this time (the question failed): what an earlier sync learned stands, and the sync goes on.
        do { access = try remote.access(to: schema) } catch { return false }
        let before = try store.access(of: schema.name)
        try store.recordAccess(access, of: schema.name)
        // Reading widened to the whole collection: what left is read back from the start by the next pull.
        if let access, !access.readsInPart, access != .noAccess, before?.readsInPart ?? true { try store.rereadWhatLeft(entity: schema.name) }
        return access == .readWrite && before != nil && before != .readWrite
    }

    /// Whether this sync asks what the account may do with the entity: at the first sync; at every sync while the
    /// account may do less than write it (a grant is looked for); and otherwise, when it may write it or the server did
    /// not say, once `accessRecheck` has passed since the last answer.
    func accessIsDue(_ schema: EntitySchema) throws -> Bool {
        guard let checked = try store.accessCheckedAt(entity: schema.name) else { return true }
        if let known = try store.access(of: schema.name), known != .readWrite { return true }
        let elapsed = store.clock() - checked
        return elapsed < 0 || Duration.milliseconds(elapsed) >= accessRecheck
    }

    /// Write access the store took for granted, withdrawn: a refusal for want of permission is the sign to ask again.
    func relearnAccessAfterRefusals(of entities: [EntitySchema], from remote: any SyncRemote, report: SyncReport) throws {
        for schema in entities where report.rejected.contains(where: { $0.entity == schema.name && [401, 403].contains($0.status) }) {
            if try store.access(of: schema.name) == .readWrite { _ = try learnAccess(to: schema, from: remote) }
        }
    }

    /// Where an entity's pull starts: from the start when the log's versions are another server's, or when records
    /// left for want of access (a pull from its cursor would not bring back those unchanged since); else its cursor.
    func pullStart(of schema: EntitySchema, from remote: any SyncRemote, switching: Bool) throws -> RemoteCursor? {
        if try switching || store.rereadsWhatLeft(entity: schema.name) { return nil }
        return try store.pullCursor(remote: remote.address, entity: schema.name)
    }

    /// The entity can no longer be read at all: what this device neither created nor changed leaves the tables, and
    /// the next pull that can read it reads it from the start, bringing it back.
    func leaveForLostAccess(_ schema: EntitySchema, remote: any SyncRemote, report: inout SyncReport) throws {
        try store.recordAccess(.noAccess, of: schema.name)
        let left = try store.leave(entity: schema.name, reason: Self.noLongerShared, author: remote.address, rereadWhenReadable: true)
        report.left += left.map { Skip(entity: schema.name, id: $0, reason: Self.noLongerShared) }
    }

    /// For an entity this account reads only in part (records shared one by one, or its own in a drop box), after its
    /// pull: the server's listing is what the account may read, so a record the log holds there that it no longer
    /// lists was unshared (no tombstone tells it), and leaves; those that left and are listed again were shared again
    /// (unchanged, so no pull from a cursor brings them), and are read back. Returns whether the entity is read in part.
    func reconcilePartialAccess(_ schema: EntitySchema, with remote: any SyncRemote, policy: ConflictPolicy,
                                report: inout SyncReport, shouldStop: () -> Bool) throws -> Bool {
        guard try store.access(of: schema.name)?.readsInPart == true else { return false }
        guard remote.canList, !shouldStop() else { return true }
        var listed = Set<String>()
        var complete = true
        try remote.listing(of: schema) { page in
            listed.formUnion(page.map(\.id))
            complete = !shouldStop()
            return complete
        }
        guard complete else { return true }
        var unlisted = Set<String>()
        try store.forEachRecordLiveOnServer(entity: schema.name) { id, _ in if !listed.contains(id) { unlisted.insert(id) } }
        let left = try store.leave(entity: schema.name, ids: unlisted, reason: Self.noLongerShared, author: remote.address,
                                   rereadWhenReadable: false)
        report.left += left.map { Skip(entity: schema.name, id: $0, reason: Self.noLongerShared) }
        // Read many a request, with no transaction open; folded as a pull folds them.
        let back = try remote.records(store.recordsThatLeft(entity: schema.name).intersection(listed).sorted(), of: schema)
        guard !back.isEmpty else { return true }
        var counts = report
        try store.ingest { writer in
            for record in back {
                _ = try fold(record, entity: schema.name, policy: policy, checkVersion: false, author: record.author ?? remote.address,
                             writer: &writer, report: &counts)
            }
        }
        report = counts
        try store.noteCameBack(entity: schema.name, ids: Set(back.map(\.id)))
        return true
    }
}

extension EntityAccess {
    /// Whether a listing shows this account only part of the entity's records: those shared with it, or its own.
    var readsInPart: Bool { self == .sharedRecords || self == .createOnly }
}
