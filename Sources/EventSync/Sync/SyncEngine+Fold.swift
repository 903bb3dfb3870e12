import EventStore

/// Folding one server record into the log: the merge `RemoteFold` decides, written as the event it means, and
/// counted in the report. The pull, the push's failed preconditions, a verification's repairs and a partial
/// reading's returns all fold through here.
extension SyncEngine {
    /// Appends the event (if any) that a server record means for the log, and counts it.
    /// - Parameter isOlder: the remote's order of versions: with `checkVersion`, a record older than the
    ///   version the log has (a duplicate in a page, a server going backwards) writes nothing.
    /// - Returns: whether it appended an event.
    @discardableResult
    func fold(_ record: RemoteRecord, entity: String, policy: ConflictPolicy, checkVersion: Bool, author: String,
                      writer: inout Store.IngestWriter, report: inout SyncReport,
                      isOlder: (RemoteVersion, RemoteVersion) -> Bool = { _, _ in false }) throws -> Bool {
        let projection = try writer.projection(entity: entity, id: record.id)
        if checkVersion, let known = projection.version, isOlder(record.version, known) { return false }
        // The merge is between the base, the row and the server's record all under the schema's names: a field
        // renamed since (x-evsync-renamed-from) is one field, whatever name each side stored it under.
        let schema = try store.entity(entity)
        var read = projection
        (read.row, read.shadow) = (projection.row.map(schema.upcast), projection.shadow.map(schema.upcast))
        var record = record
        record.fields = record.fields.map(schema.upcast)
        // Fields the server does not hold are as the row has them: their absence there is no change of the server's.
        if !record.localFields.isEmpty, var fields = record.fields {
            for field in record.localFields { fields[field] = read.row?[field] }
            record.fields = fields
        }
        let outcome = try RemoteFold.fold(record, into: read, policy: policy, checkVersion: checkVersion) {
            try writer.unacknowledgedLocalStates(entity: entity, id: record.id).map { $0.map(schema.upcast) }
        }
        guard let outcome else { return false }
        var event = Event(eventID: RecordID.generate(), at: store.clock(), entity: entity, recordID: record.id,
                          kind: .updated, origin: .remote, author: author)
        switch outcome {
        case .remote(let kind, let set, let unset, let version):
            // A renamed field written under its new name loses its old one, in the row and the shadow alike.
            let formerNames = schema.formerNames(of: Array(set.keys) + unset, in: projection.row)
                + schema.formerNames(of: Array(set.keys) + unset, in: projection.shadow)
            (event.kind, event.set, event.unset, event.version) = (kind, set, Array(Set(unset + formerNames)).sorted(), version)
            // A new version that changes no field here (another client saving the same values, a DAV item's
            // lines evsync does not own, a server's own rewrite) is logged for its version, the base of the next
            // conditional write, but it is not news: it pulls nothing.
            if kind == .deleted { report.deletedHere += 1 } else if kind == .created || !set.isEmpty || !unset.isEmpty { report.pulled += 1 }
        case .acknowledged(let server, let version):
            // The row as stored when it is what the server holds, so that it stays in step with the shadow.
            let stored = RecordState(projection.row)
            (event.kind, event.server, event.version) = (.acknowledged, server == RecordState(read.row) ? stored : server, version)
            if server == .absent { report.deletedThere += 1 } else { report.pushed += 1 }
        case .conflict(let local, let server, let resolved, let version):
            (event.kind, event.local, event.server, event.resolved, event.version) = (.conflict, local, server, resolved, version)
            event.policy = policy
            report.conflicts += 1
            report.conflicted.append(RecordReference(entity: entity, id: record.id))
        }
        try writer.append(event, current: projection)
        return true
    }
}
