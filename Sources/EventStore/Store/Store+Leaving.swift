import Storage

/// Records that leave this store's tables without being deleted (`left` events): the server no longer lets this
/// account read them. Access lost is not a deletion, and not a server that lost records
/// (docs/decisions/access-lost-is-a-record-that-left.md).
extension Store {
    /// `left` then the entity: the ids of records that left and have not come back, one a line.
    private static func leftKey(entity: String) -> String { "left\u{0}\(entity.lowercased())" }
    /// `left-reread` then the entity: set when the next pull that can read the entity reads it from the start, to
    /// bring back what left (a pull from its cursor brings only what changed since).
    private static func rereadKey(entity: String) -> String { "left-reread\u{0}\(entity.lowercased())" }

    /// Makes records of `entity` leave the tables (all, or those of `ids`), each with a `left` event saying `reason`,
    /// except those this device must keep: a record with a change not yet acknowledged (the user's work), and a
    /// record this device created (the server may have lost it, not withdrawn it; `--missing` guards those). A
    /// record whose oldest event is a compaction's baseline is kept too: who created it is archived, not known here.
    /// - Parameter rereadWhenReadable: the next pull that can read the entity reads it from the start.
    /// - Returns: the ids that left, in key order.
    package func leave(entity: String, ids: Set<String>? = nil, reason: String, author: String,
                       rereadWhenReadable: Bool) throws(StoreError) -> [String] {
        let schema = try self.entity(entity)
        return try writeLog { appender in
            let leaving = try leave(schema, where: { id, _ in ids?.contains(id) ?? true }, reason: reason, origin: .remote, author: author,
                                    keepingCreatedHere: true, with: &appender)
            if rereadWhenReadable { try setMeta(Self.rereadKey(entity: schema.name), "yes", in: appender.transaction) }
            return leaving
        }
    }

    /// Makes the records of `schema` that `picks` leave, as `leave(entity:…)` says, in the appender's transaction.
    /// `origin`: `.remote` when the server's answer says so (access lost, an edit elsewhere), `.local` for a scope set here.
    func leave(_ schema: EntitySchema, where picks: (String, JSONObject) -> Bool, reason: String, origin: Event.Origin, author: String,
               keepingCreatedHere: Bool, with appender: inout EventLog.Appender) throws -> [String] {
        let transaction = appender.transaction
        var leaving: [String] = []
        // Gathered first: appending changes the view the cursor walks.
        try forEachRow(of: schema.name, in: transaction) { id, row in
            guard picks(id, row) else { return }
            let projection = try log.views.projection(entity: schema.name, id: id, in: transaction)
            guard !projection.isPending else { return }
            if keepingCreatedHere, try keepsWhenAccessEnds(entity: schema.name, id: id, in: transaction) { return }
            leaving.append(id)
        }
        for id in leaving {
            let current = try log.views.projection(entity: schema.name, id: id, in: transaction)
            try appender.append(Event(eventID: RecordID.generate(), at: clock(), entity: schema.name, recordID: id, kind: .left,
                                      origin: origin, author: author, reason: reason), current: current)
        }
        if !leaving.isEmpty {
            let known = try recordsThatLeft(entity: schema.name, in: transaction)
            try setMeta(Self.leftKey(entity: schema.name), known.union(leaving).sorted().joined(separator: "\n"), in: transaction)
        }
        return leaving
    }

    /// One record leaves, if this store holds it and must not keep it (see `leave(entity:…)`), in the appender's
    /// transaction. Returns whether it left.
    func leave(entity: String, id: String, reason: String, author: String, keepingCreatedHere: Bool,
               with appender: inout EventLog.Appender) throws -> Bool {
        let current = try log.views.projection(entity: entity, id: id, in: appender.transaction)
        guard current.row != nil, !current.isPending else { return false }
        if keepingCreatedHere, try keepsWhenAccessEnds(entity: entity, id: id, in: appender.transaction) { return false }
        try appender.append(Event(eventID: RecordID.generate(), at: clock(), entity: entity, recordID: id, kind: .left,
                                  origin: .remote, author: author, reason: reason), current: current)
        return true
    }

    /// Sets the mark that the next pull of `entity` reads it from the start (`rereadsWhatLeft`).
    func markReread(entity: String, in transaction: Transaction) throws {
        try setMeta(Self.rereadKey(entity: entity), "yes", in: transaction)
    }

    /// The records of `entity` that left for want of access and have not come back.
    package func recordsThatLeft(entity: String) throws(StoreError) -> Set<String> {
        try snapshot { try recordsThatLeft(entity: entity, in: $0) }
    }

    private func recordsThatLeft(entity: String, in transaction: Transaction) throws -> Set<String> {
        Set((try meta(Self.leftKey(entity: entity), in: transaction) ?? "").split(separator: "\n").map(String.init))
    }

    /// Whether the next pull of `entity` reads it from the start, to bring back what left.
    package func rereadsWhatLeft(entity: String) throws(StoreError) -> Bool {
        try snapshot { try meta(Self.rereadKey(entity: entity), in: $0) } != nil
    }

    /// `ids` came back: they are no longer waited for.
    package func noteCameBack(entity: String, ids: Set<String>) throws(StoreError) {
        let remaining = try recordsThatLeft(entity: entity).subtracting(ids)
        try writeMeta(Self.leftKey(entity: entity), remaining.isEmpty ? nil : remaining.sorted().joined(separator: "\n"))
    }

    /// A pull from the start read everything of `entity` this account may read: what did not come back is not coming.
    package func noteReadFromStart(entity: String) throws(StoreError) {
        do {
            try environment.write { transaction in
                try setMeta(Self.leftKey(entity: entity), nil, in: transaction)
                try setMeta(Self.rereadKey(entity: entity), nil, in: transaction)
            }
        } catch {
            throw wrap(error)
        }
    }

    /// The next pull of `entity` reads it from the start, if records of it left: access widened, and a pull from its
    /// cursor would not bring them back.
    package func rereadWhatLeft(entity: String) throws(StoreError) {
        guard try !recordsThatLeft(entity: entity).isEmpty else { return }
        try writeMeta(Self.rereadKey(entity: entity), "yes")
    }

    /// Whether the record's oldest event is its creation here, or a compaction's baseline (which hides who created it).
    private func keepsWhenAccessEnds(entity: String, id: String, in transaction: Transaction) throws -> Bool {
        let cursor = try transaction.cursor(log.views.history)
        guard let oldest = try cursor.seek(exactly: Keys.history(entity: entity, id: id)), oldest.value.count >= 10 else { return true }
        let (kind, origin) = (oldest.value[8], oldest.value[9])
        let created = ViewDatabases.kindCodes[.created], baseline = ViewDatabases.kindCodes[.baseline]
        return (kind == created && origin == 0) || kind == baseline
    }
}
