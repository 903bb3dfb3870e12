import Storage

/// What a store holds of an entity (its scope): the records that meet every condition, from the next sync on. The
/// server filters (the remote's protocol says what it can express), and a record that no longer matches leaves this
/// store with a `left` event, never a deletion (docs/decisions/a-scope-is-a-filter-the-server-applies.md).
extension Store {
    /// `scope` then the entity: the conditions, one a line, as `FieldCondition.description` writes them.
    private static func scopeKey(entity: String) -> String { "scope\u{0}\(entity.lowercased())" }

    /// What a `left` event says of a record outside the scope a store was narrowed to.
    package static let outsideScope = "outside this store's scope"
    /// What a `left` event says of a record an edit elsewhere moved out of the store's scope.
    package static let movedOutOfScope = "moved out of this store's scope"

    /// The conditions every record of `entityName` this store holds meets; nil when it holds the whole entity.
    public func scope(of entityName: String) throws(StoreError) -> [FieldCondition]? {
        let schema = try entity(entityName)
        return try snapshot { try scope(of: schema.name, in: $0) }
    }

    /// Every entity's scope, by entity name; an entity held whole is absent.
    public func scopes() throws(StoreError) -> [String: [FieldCondition]] {
        try snapshot { transaction in
            var found: [String: [FieldCondition]] = [:]
            for schema in schemas.entities { found[schema.name] = try scope(of: schema.name, in: transaction) }
            return found
        }
    }

    private func scope(of entity: String, in transaction: Transaction) throws -> [FieldCondition]? {
        try meta(Self.scopeKey(entity: entity), in: transaction).map { text in
            text.split(separator: "\n").compactMap { FieldCondition(parsing: String($0)) }
        }
    }

    /// Sets what this store holds of `entityName` (nil, or no condition: all of it), from the next sync on.
    ///
    /// Records held here that the new scope leaves out leave at once, each with a `left` event, with no request
    /// to anyone; a record with a change not yet pushed stays, pending. A scope that only adds conditions to the
    /// one before narrows it: nothing is read again. Any other change (a condition dropped or changed, the whole
    /// entity) widens it: the next pull reads the entity from the start under the new scope.
    /// - Returns: the ids that left.
    /// - Throws: `.invalidData` for a field the entity's schema does not declare.
    @discardableResult
    public func setScope(_ conditions: [FieldCondition]?, of entityName: String) throws(StoreError) -> [String] {
        let schema = try entity(entityName)
        let conditions = conditions.flatMap { $0.isEmpty ? nil : $0 }
        for condition in conditions ?? [] where condition.field != "id" && !schema.hasField(condition.field) {
            throw StoreError.wrap(schema.unknownField(condition.field))
        }
        return try writeLog { appender in
            let transaction = appender.transaction
            let before = try scope(of: schema.name, in: transaction)
            try setMeta(Self.scopeKey(entity: schema.name), conditions?.map(\.description).joined(separator: "\n"), in: transaction)
            let narrows = before == nil || (before ?? []).allSatisfy { (conditions ?? []).contains($0) }
            if !narrows { try markReread(entity: schema.name, in: transaction) }
            guard let conditions else { return [] }
            let record = { (id: String, row: JSONObject) in Record(entity: schema.name, id: id, fields: row) }
            return try leave(schema, where: { id, row in !conditions.allSatisfy { $0.matches(record(id, row)) } },
                             reason: Self.outsideScope, origin: .local, author: author, keepingCreatedHere: false, with: &appender)
        }
    }
}
