import Storage

/// What the server lets this account do with each entity (`EntityAccess`), as the last sync learned it, and the
/// refusal of a local change to an entity it may only read: refused here, before it is written, rather than
/// written, pushed, refused by the server and held (docs/decisions/a-read-only-entity-refuses-changes-up-front.md).
extension Store {
    /// `access` then the entity: the access's word (`EntityAccess.rawValue`).
    private static func accessKey(entity: String) -> String { "access\u{0}\(entity.lowercased())" }

    /// What the last sync learned this account may do with `entityName` on its remote; nil when the server does
    /// not say (a server without a permissions endpoint) or before any sync.
    public func access(of entityName: String) throws(StoreError) -> EntityAccess? {
        let schema = try entity(entityName)
        return try snapshot { try access(of: schema, in: $0) }
    }

    /// Every entity's access that the last sync learned, by entity name.
    public func accessByEntity() throws(StoreError) -> [String: EntityAccess] {
        try snapshot { transaction in
            var found: [String: EntityAccess] = [:]
            for schema in schemas.entities {
                if let access = try access(of: schema, in: transaction) { found[schema.name] = access }
            }
            return found
        }
    }

    /// `access-checked` then the entity: when a sync last asked the server, in milliseconds since 1970, as decimal text.
    private static func checkedKey(entity: String) -> String { "access-checked\u{0}\(entity.lowercased())" }

    /// Records what the server lets this account do with `entity` (nil: it does not say), and when it said so.
    package func recordAccess(_ access: EntityAccess?, of entity: String) throws(StoreError) {
        let key = Self.accessKey(entity: entity)
        do {
            try environment.write { transaction in
                try setMeta(key, access?.rawValue, in: transaction)
                try setMeta(Self.checkedKey(entity: entity), String(clock()), in: transaction)
            }
        } catch {
            throw wrap(error)
        }
    }

    /// When a sync last asked the server what this account may do with `entity` (`Timestamp` milliseconds); nil before any.
    package func accessCheckedAt(entity: String) throws(StoreError) -> Int64? {
        try snapshot { try meta(Self.checkedKey(entity: entity), in: $0) }.flatMap { Int64($0) }
    }

    /// An access word a newer evsync wrote and this one does not know is no access known: it refuses nothing.
    private func access(of schema: EntitySchema, in transaction: Transaction) throws -> EntityAccess? {
        try meta(Self.accessKey(entity: schema.name), in: transaction).flatMap(EntityAccess.init(rawValue:))
    }

    /// As `refuseIfReadOnly(_:in:)`, in a snapshot of its own.
    func refuseIfReadOnly(_ schema: EntitySchema) throws(StoreError) {
        do {
            try environment.read { try refuseIfReadOnly(schema, in: $0) }
        } catch let error as StoreError {
            throw error
        } catch {
            throw wrap(error)
        }
    }

    /// Throws `.readOnly` if the last sync learned that the server lets this account only read `schema`'s records.
    func refuseIfReadOnly(_ schema: EntitySchema, in transaction: Transaction) throws {
        guard let access = try access(of: schema, in: transaction), access == .readOnly || access == .noAccess else { return }
        throw StoreError(.readOnly, "\(schema.name) is \(access == .readOnly ? "read-only" : "closed") for this account, as the server "
            + "said at the last sync: it would refuse the change, so it was not made; forced, the change is kept here and held until "
            + "access is granted")
    }
}
