import Storage
/// Changes that restore what the log held before: deciding a conflict again (`resolve`) and putting a
/// record back as it was at a point (`revert`). Each appends one ordinary local event (created, updated
/// or deleted), so the next sync pushes it through the usual conditional writes, and `history` shows it.
/// The values come from the log, not from the command line, so they are not checked against the
/// schema again: a server's values were never checked either (docs/decisions/records-from-the-server-are-not-validated-against-the-schema.md).
extension Store {
    /// Decides the conflict event `seq` again, taking `side`'s values for the fields both sides changed
    /// (for an update against a delete, that side's whole record: deleted, or re-created).
    ///
    /// The appended event carries `resolves: seq`, which is how the log links a conflict to its
    /// decision: `conflicts(openOnly: true)` leaves out a conflict that some event resolves. It is
    /// appended even when the record already holds those values, so that the decision is recorded.
    /// - Throws: `.notFound` for no such event; `.invalidData` for an event that is not a conflict.
    @discardableResult
    public func resolve(conflict seq: UInt64, take side: Conflict.Side) throws(StoreError) -> Restoration {
        try writeLog { appender in
            let transaction = appender.transaction
            guard let stored = try log.event(seq: seq, in: transaction) else { throw StoreError(.notFound, "no event \(seq) in the log") }
            // Read through the current schema, as `conflicts` showed it (a renamed field under its new name).
            let schema = try? entity(stored.entity)
            let event = schema?.upcast(stored) ?? stored
            guard event.kind == .conflict else {
                throw StoreError(.invalidData, "event \(seq) is not a conflict (it is a '\(event.kind.rawValue)' event)")
            }
            let conflict = try conflict(event, resolvedBy: nil, in: transaction)
            let chosen = (side == .local ? event.local : event.server)?.fields
            let current = try log.views.projection(entity: event.entity, id: event.recordID, in: transaction)
            var target: JSONObject?
            if conflict.deleted != nil || current.row == nil {
                target = chosen
            } else {
                target = current.row.map { schema?.upcast($0) ?? $0 }
                for field in conflict.fields { target?[field.field] = chosen?[field.field] }
            }
            return try restore(event.entity, schema: schema, id: event.recordID, to: target, current: current, resolves: seq,
                               appender: &appender)
        }
    }

    /// Restores a record as it was at `point`: its fields then, re-created if it was deleted since, deleted
    /// if it did not exist then. Nothing is appended when it is already so.
    /// - Parameters:
    ///   - entityName: the record's entity (any case).
    ///   - id: the record's id.
    ///   - point: the point in the log to restore it to.
    ///   - dryRun: say what would change, and append nothing.
    /// - Throws: `.notFound` when the log holds no event of the record.
    @discardableResult
    public func revert(_ entityName: String, id: String, to point: LogPoint, dryRun: Bool = false) throws(StoreError) -> Restoration {
        let schema = try entity(entityName)
        try Self.checkID(id, fromServer: true)
        func plan(_ transaction: Transaction) throws -> (JSONObject?, RecordProjection, UInt64) {
            let live = try log.history(of: id, in: transaction).filter { $0.entity == schema.name }
            guard !live.isEmpty else { throw StoreError(.notFound, "no \(schema.name) with id '\(id)' in the log") }
            let seq = try seq(at: point, in: transaction)
            // Before a compaction's cut, the record's events are in its archive segment: read there, or name it.
            let reader = try archiveReader(in: transaction)
            let events = try reader.expand(live, before: seq)
            try Self.requireArchives(reader, for: "reverting \(schema.name)/\(id) to event \(seq)")
            var then = RecordProjection()
            for event in events where reader.position(of: event) <= seq { then.apply(schema.upcast(event)) }
            return (then.row, try log.views.projection(entity: schema.name, id: id, in: transaction), seq)
        }
        if dryRun {
            return try snapshot { transaction in
                let (target, current, seq) = try plan(transaction)
                return Restoration(entity: schema.name, id: id, point: seq, old: current.row.map(schema.upcast), new: target, event: nil)
            }
        }
        return try writeLog { appender in
            let (target, current, seq) = try plan(appender.transaction)
            var restoration = try restore(schema.name, schema: schema, id: id, to: target, current: current, resolves: nil,
                                          appender: &appender)
            restoration.point = seq
            return restoration
        }
    }

    /// Appends the local event that turns the record's row into `target` (both read through `schema`: a field
    /// stored under a former name is compared under its new one, and its old name unset when it is written).
    private func restore(_ entity: String, schema: EntitySchema?, id: String, to target: JSONObject?, current: RecordProjection,
                         resolves: UInt64?, appender: inout EventLog.Appender) throws -> Restoration {
        var event: Event?
        let stored = current.row
        let row = stored.map { schema?.upcast($0) ?? $0 }
        switch (row, target) {
        case (nil, let target?):
            event = localEvent(.created, entity: entity, id: id, set: target)
        case (_?, nil):
            event = localEvent(.deleted, entity: entity, id: id)
        case (let row?, let target?) where row != target || resolves != nil:
            let set = target.filter { row[$0.key] != $0.value }
            let unset = row.keys.filter { target[$0] == nil }
            let formerNames = schema?.formerNames(of: Array(set.keys) + unset, in: stored) ?? []
            event = localEvent(.updated, entity: entity, id: id, set: set, unset: (unset + formerNames).sorted())
        case (nil, nil) where resolves != nil:
            // Still deleted, as chosen: a deletion that changes nothing records the decision.
            event = localEvent(.deleted, entity: entity, id: id)
        default:
            event = nil
        }
        if var change = event {
            change.resolves = resolves
            event = try appender.append(change, current: current)
        }
        return Restoration(entity: entity, id: id, point: nil, old: row, new: target, event: event)
    }
}

/// What `resolve` or `revert` changed (or, for a dry run, would change): `Codable` as
/// `{entity, id, point?, old?, new?, event?}`.
public struct Restoration: Sendable, Equatable, Codable {
    public let entity: String
    public let id: String
    /// For `revert`: the event number the point stands for.
    public internal(set) var point: UInt64?
    /// The record before and after: nil when absent.
    public let old: JSONObject?
    public let new: JSONObject?
    /// The fields whose values change, sorted by name.
    public var changes: [FieldChange] {
        Store.changedFields(from: old, to: new).map { FieldChange(field: $0, old: old?[$0], new: new?[$0]) }
    }
    /// The local event appended; nil for a dry run, or when the record already was so.
    public let event: Event?
}
