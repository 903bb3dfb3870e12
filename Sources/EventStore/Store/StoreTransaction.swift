import Storage
/// Reads from one consistent snapshot of a store: what `Store.read` hands its
/// closure, and (as `StoreTransaction`) what a write reads, its own changes included.
///
/// Valid only inside the closure it was given to: used after it, every call
/// throws `.failure`. Not `Sendable`: an LMDB transaction belongs to its thread.
public class StoreSnapshot {
    let store: Store
    let transaction: Transaction
    private var isOpen = true
    /// The coder of the type read last: a read of many records of one type looks its schema up once.
    private var lastCoder: (type: ObjectIdentifier, coder: RecordCoder)?

    init(store: Store, transaction: Transaction) {
        self.store = store
        self.transaction = transaction
    }

    /// Ends this snapshot's use: see the type's documentation.
    func close() { isOpen = false }

    /// Runs `body` on the transaction, if the snapshot is still open, with its errors as `StoreError`s.
    func using<T>(_ body: (Transaction) throws -> T) throws(StoreError) -> T {
        guard isOpen else {
            throw StoreError(.failure, "a store transaction was used after its read or write closure returned")
        }
        do { return try body(transaction) } catch { throw store.wrap(error) }
    }

    /// One record; nil if there is none.
    public func record(_ entityName: String, id: String) throws(StoreError) -> Record? {
        try record(of: store.entity(entityName), id: id)
    }

    /// One record of `schema`'s entity; nil if there is none.
    private func record(of schema: EntitySchema, id: String) throws(StoreError) -> Record? {
        try Store.checkID(id, fromServer: true)
        return try using { transaction in
            try store.log.views.projection(entity: schema.name, id: id, in: transaction).row
                .map { schema.record(id: id, fields: $0) }
        }
    }

    /// Every record of an entity, sorted by id.
    public func records(_ entityName: String) throws(StoreError) -> [Record] {
        let schema = try store.entity(entityName)
        return try using { try store.records(of: schema, in: $0) }
    }

    /// One record as `Value`; nil if there is none.
    public func record<Value: EntityRecord>(_ type: Value.Type, id: String) throws(StoreError) -> Value? {
        let coder = try coder(for: type)   // the schema looked up once, for the read and the decoding
        try Store.checkID(id, fromServer: true)
        // Decoded from the stored bytes in place: only the fields `Value` has are parsed. `value` is declared out
        // here so that `using` returns nothing: a `Value?` it returned would cost another lookup of its metadata.
        var value: Value?
        try using { transaction in
            _ = try Keys.withRecordKey(entity: coder.schema.name, id: id) { key in
                try store.log.views.withRow(key: key, in: transaction) { fields in value = try coder.decode(type, id: id, stored: fields) }
            }
        }
        return value
    }

    private func coder<Value: EntityRecord>(for type: Value.Type) throws(StoreError) -> RecordCoder {
        if let lastCoder, lastCoder.type == ObjectIdentifier(type) { return lastCoder.coder }
        let coder = try store.coder(for: type)
        lastCoder = (ObjectIdentifier(type), coder)
        return coder
    }

    /// Every record of `Value`'s entity, sorted by id.
    public func records<Value: EntityRecord>(_ type: Value.Type) throws(StoreError) -> [Value] {
        let coder = try store.coder(for: type)
        return try records(Value.entityName).map { record throws(StoreError) in try coder.decode(type, from: record) }
    }

    /// The newest event's `seq` in this snapshot (0 for an empty log): where to observe from.
    public func lastSeq() throws(StoreError) -> UInt64 {
        try using { try store.log.lastSeq(in: $0) }
    }
}

/// Changes made in one write transaction: what `Store.write` hands its closure.
///
/// ```swift
/// try store.write { transaction in
///     try transaction.add(Holiday(id: Store.newRecordID(), name: "Kings' Day", date: kingsDay))
///     try transaction.edit("Birthday", id: annsID, set: ["facebook": "ann.b"])
///     try transaction.delete("Holiday", id: oldID)
/// }
/// ```
///
/// The changes are one LMDB transaction: one commit and one flush, all or
/// nothing. Reads see the changes made so far. A change refused (bad
/// fields, a missing record) leaves the transaction as it was before it, so
/// the closure may catch and go on; the closure's own throw aborts them all.
public final class StoreTransaction: StoreSnapshot {
    /// Numbers the changes' events; handed back to `Store.appending` when the closure returns.
    private(set) var appender: EventLog.Appender
    /// Whether changes to an entity the server lets this account only read are made all the same.
    private let overridesReadOnly: Bool

    init(store: Store, transaction: Transaction, appender: EventLog.Appender, overridingReadOnly: Bool) {
        self.appender = appender
        overridesReadOnly = overridingReadOnly
        super.init(store: store, transaction: transaction)
    }

    /// Runs one change. A change checks everything before it appends its one event, so a change refused
    /// (bad fields, a missing record) has written nothing; a storage failure (a full map) fails the transaction.
    private func change<T>(_ body: (inout EventLog.Appender) throws -> T) throws(StoreError) -> T {
        try using { _ in try body(&appender) }
    }

    /// Creates a record; `id` defaults to a new UUID. As `Store.add`.
    @discardableResult
    public func add(_ entityName: String, id: String? = nil, fields: JSONObject) throws(StoreError) -> Event {
        let schema = try store.entity(entityName)
        return try change { try store.add(schema, id: id, fields: fields, overridingReadOnly: overridesReadOnly, with: &$0).event }
    }

    /// Changes fields of a record; nil, writing nothing, when the values are already those. As `Store.edit`.
    @discardableResult
    public func edit(_ entityName: String, id: String, set: JSONObject = [:], unset: [String] = []) throws(StoreError) -> Event? {
        let schema = try store.entity(entityName)
        return try change {
            try store.edit(schema, id: id, set: set, unset: unset, overridingReadOnly: overridesReadOnly, with: &$0).event
        }
    }

    /// Deletes a record. As `Store.delete`.
    @discardableResult
    public func delete(_ entityName: String, id: String) throws(StoreError) -> Event {
        let schema = try store.entity(entityName)
        return try change { try store.delete(schema, id: id, overridingReadOnly: overridesReadOnly, with: &$0) }
    }

    /// Creates `record` under its `id`. As `Store.add(_:)`.
    @discardableResult
    public func add<Value: EntityRecord>(_ record: Value) throws(StoreError) -> Event {
        try add(Value.entityName, id: record.id, fields: try store.coder(for: Value.self).fields(of: record))
    }

    /// Makes the stored record equal to `record`; nil, writing nothing, when it is already. As `Store.update(_:)`.
    @discardableResult
    public func update<Value: EntityRecord>(_ record: Value) throws(StoreError) -> Event? {
        let coder = try store.coder(for: Value.self)
        let fields = try coder.fields(of: record)
        return try edit(Value.entityName, id: record.id, set: fields, unset: coder.schema.fieldNames.filter { fields[$0] == nil })
    }

    /// Deletes `record`. As `Store.delete(_:)`.
    @discardableResult
    public func delete<Value: EntityRecord>(_ record: Value) throws(StoreError) -> Event {
        try delete(Value.entityName, id: record.id)
    }
}
