import Foundation

/// The store's records as the app's own `EntityRecord` types: the same
/// changes and queries as the `JSONObject` API, checked against the same schemas.
extension Store {
    /// A new record id (a lower-case UUID), for a record made here.
    public static func newRecordID() -> String { RecordID.generate() }

    /// Every record of `Value`'s entity, sorted by id; at `asOf`, as they were then.
    /// - Throws: `.invalidData` if a stored record does not decode as `Value` (naming it and the field).
    public func records<Value: EntityRecord>(_ type: Value.Type, asOf point: LogPoint? = nil) throws(StoreError) -> [Value] {
        let coder = try coder(for: type)
        var values: [Value] = []
        for record in try records(Value.entityName, asOf: point) { values.append(try coder.decode(type, from: record)) }
        return values
    }

    /// One record as `Value`, now or at `asOf`; nil if it did not exist.
    public func record<Value: EntityRecord>(_ type: Value.Type, id: String, asOf point: LogPoint? = nil) throws(StoreError) -> Value? {
        if point == nil {
            do { return try read { try $0.record(type, id: id) } } catch { throw wrap(error) }
        }
        let coder = try coder(for: type)
        return try record(Value.entityName, id: id, asOf: point).map { record throws(StoreError) in try coder.decode(type, from: record) }
    }

    /// Creates `record` under its `id`.
    /// - Throws: `.invalidData` for an existing id or fields that break the schema.
    @discardableResult
    public func add<Value: EntityRecord>(_ record: Value) throws(StoreError) -> Event {
        try add(Value.entityName, id: record.id, fields: try coder(for: Value.self).fields(of: record))
    }

    /// Makes the stored record equal to `record`: sets the fields that differ and
    /// removes those `record` no longer has (an optional that is nil). Returns
    /// nil, writing nothing, when they are equal already.
    /// - Throws: `.notFound` if there is no such record (see `add`).
    @discardableResult
    public func update<Value: EntityRecord>(_ record: Value) throws(StoreError) -> Event? {
        let coder = try coder(for: Value.self)
        let fields = try coder.fields(of: record)
        // `edit` removes only the fields the record has, in the same transaction as it compares the rest.
        return try edit(Value.entityName, id: record.id, set: fields, unset: coder.schema.fieldNames.filter { fields[$0] == nil })
    }

    /// Deletes `record`.
    @discardableResult
    public func delete<Value: EntityRecord>(_ record: Value) throws(StoreError) -> Event {
        try delete(Value.entityName, id: record.id)
    }

    func coder<Value: EntityRecord>(for type: Value.Type) throws(StoreError) -> RecordCoder {
        RecordCoder(schema: try entity(Value.entityName))
    }
}
