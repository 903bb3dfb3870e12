import Storage
import Synchronization

/// One index a store keeps: a field of an entity, read as the schema that declared it reads it (under its
/// former name in rows written before a rename; its default where a row lacks it).
struct IndexDefinition: Sendable, Hashable {
    let entity: String
    let field: String
    let formerName: String?
    let defaultValue: JSONValue?

    init(entity: String, field: String, formerName: String?, defaultValue: JSONValue?) {
        (self.entity, self.field, self.formerName, self.defaultValue) = (entity, field, formerName, defaultValue)
    }

    /// The indexes `schemas` declare (`x-evsync-index`), sorted.
    static func declared(by schemas: SchemaRegistry) -> [IndexDefinition] {
        schemas.entities.flatMap { schema in
            schema.indexedFields.map { field in
                IndexDefinition(entity: schema.name, field: field, formerName: schema.renames.first { $0.value == field }?.key,
                                defaultValue: schema.defaults[field])
            }
        }
    }

    /// The field's value in a stored row, as `EntitySchema.reading` gives it.
    func value(in row: JSONObject?) -> JSONValue? {
        guard let row else { return nil }
        return row[field] ?? formerName.flatMap { row[$0] } ?? defaultValue
    }

    /// Whether this index answers a condition of `query`'s schema: it indexes the field as that schema reads it.
    func reads(_ field: String, as schema: EntitySchema) -> Bool {
        field == self.field && formerName == schema.renames.first { $0.value == field }?.key && defaultValue == schema.defaults[field]
    }

    var json: JSONValue {
        var object: JSONObject = ["entity": .string(entity), "field": .string(field)]
        object["from"] = formerName.map(JSONValue.string)
        object["default"] = defaultValue
        return .object(object)
    }

    init?(json: JSONValue) {
        guard let object = json.objectValue, let entity = object["entity"]?.stringValue, let field = object["field"]?.stringValue else { return nil }
        self.init(entity: entity, field: field, formerName: object["from"]?.stringValue, defaultValue: object["default"])
    }

    /// The list as `meta` keeps it: JSON, sorted, so that equal lists are equal bytes.
    static func encode(_ definitions: [IndexDefinition]) -> [UInt8] {
        JSONWriter.encode(.array(definitions.sorted { ($0.entity, $0.field) < ($1.entity, $1.field) }.map(\.json)))
    }

    static func decode(_ bytes: UnsafeRawBufferPointer) throws -> [IndexDefinition] {
        guard let list = try? JSONParser.parse(bytes).arrayValue else {
            throw EventDecodingError(reason: "the list of the store's indexes is damaged", inViews: true)
        }
        return try list.map { json in
            guard let definition = IndexDefinition(json: json) else {
                throw EventDecodingError(reason: "the list of the store's indexes is damaged", inViews: true)
            }
            return definition
        }
    }
}

/// The indexes view (its database `index-entries`): which indexes the store keeps (`meta`'s `indexes`, the same
/// for every process that writes to it, whatever schemas it was opened with) and their entries (`IndexKeys`).
/// Kept by `ViewDatabases.apply` in the transaction that appends each event, like the other views.
///
/// A store written by an evsync without indexes has no `index-entries` database: it is created, and the
/// indexes its schemas declare built, as the store is opened for writing (`Store.prepareIndexes`). Such an
/// evsync may also write to a store that has indexes, and would not keep them: every commit that keeps them
/// records where the log then ends (`index-entries-through`), and an index is used only while that is the log's end.
struct RecordIndexes: Sendable {
    /// nil: the store has no `index-entries` database (opened read-only, written by an older evsync).
    let database: Database?
    /// Where the list of indexes is read, for views that keep it; nil for scratch views, which keep `fixed`.
    let meta: Database?
    let fixed: [IndexDefinition]
    private let cache = Cache()

    static let metaKey = Array("indexes".utf8)
    /// Where the log ended when the entries were last kept. Not the `indexed-through` of the `indexes` database
    /// of the evsync before, which keeps that one, and not this one, when it writes to the store.
    static let throughKey = Array("index-entries-through".utf8)
    /// Sorted duplicates (`IndexKeys`): a value's records are the values of one key, so LMDB counts them.
    static let databaseName = "index-entries"
    static let flags = MDBFlags.dupSort
    /// The first layout's database (a key per entry), which the evsync of that layout keeps; dropped as a store
    /// is opened for writing (`Store.prepareIndexes`), as are its `indexed-through` and its entries.
    static let legacyDatabaseName = "indexes"
    static let legacyThroughKey = Array("indexed-through".utf8)

    init(database: Database?, meta: Database?, fixed: [IndexDefinition] = []) {
        (self.database, self.meta, self.fixed) = (database, meta, fixed)
    }

    /// The store's indexes as of `transaction`, by entity key (`Keys.entityPrefix` without its 0).
    func definitions(in transaction: Transaction) throws -> [String: [IndexDefinition]] {
        guard database != nil else { return [:] }
        guard let meta else { return Self.byEntity(fixed) }
        return try transaction.withValue(Self.metaKey, in: meta) { bytes in
            if let cached = cache.lookup(bytes) { return cached }
            let byEntity = Self.byEntity(try IndexDefinition.decode(bytes))
            cache.keep(Array(bytes), byEntity)
            return byEntity
        } ?? [:]
    }

    private static func byEntity(_ definitions: [IndexDefinition]) -> [String: [IndexDefinition]] {
        Dictionary(grouping: definitions) { String(decoding: Keys.entityPrefix($0.entity).dropLast(), as: UTF8.self) }
    }

    /// The indexes of `entity` a query may read: none when the store's indexes were not kept by the last write.
    func usable(for entity: String, in transaction: Transaction, lastSeq: UInt64) throws -> [IndexDefinition] {
        guard let meta, database != nil else { return [] }
        guard let through = try transaction.get(Self.throughKey, in: meta), UInt64(String(decoding: through, as: UTF8.self)) == lastSeq else {
            return []
        }
        return try definitions(in: transaction)[String(decoding: Keys.entityPrefix(entity).dropLast(), as: UTF8.self)] ?? []
    }

    /// Records that the indexes are kept up to event `seq` (see the type's documentation).
    func noteKept(through seq: UInt64, in transaction: Transaction) throws {
        guard let meta, database != nil, try transaction.get(Self.metaKey, in: meta) != nil else { return }
        try transaction.put(Self.throughKey, Array(String(seq).utf8), in: meta)
    }

    /// Moves the record under `recordKey` from the entries of its `before` row to those of its `after` row.
    func update(recordKey: some Collection<UInt8>, before: JSONObject?, after: JSONObject?, in transaction: Transaction) throws {
        guard let database, let zero = recordKey.firstIndex(of: 0) else { return }
        let entityKey = String(decoding: recordKey[..<zero], as: UTF8.self)
        guard let definitions = try definitions(in: transaction)[entityKey] else { return }
        let keyPart = Array(recordKey[recordKey.index(after: zero)...])
        for definition in definitions {
            let old = IndexKeys.values(of: definition.value(in: before))
            let new = IndexKeys.values(of: definition.value(in: after))
            guard old != new else { continue }
            let prefix = IndexKeys.prefix(entity: definition.entity, field: definition.field)
            for value in old.subtracting(new) {
                try (prefix + value).withUnsafeBytes { key in
                    try keyPart.withUnsafeBytes { try transaction.delete(key, value: $0, in: database) }
                }
            }
            for value in new.subtracting(old) { try transaction.put(prefix + value, keyPart, in: database, noDuplicate: true) }
        }
    }

    /// Whether `entityKey`'s records are indexed at all: those of other entities are not decoded for it.
    func hasIndexes(entityKey: some Collection<UInt8>, in transaction: Transaction) throws -> Bool {
        guard database != nil else { return false }
        return try definitions(in: transaction)[String(decoding: entityKey, as: UTF8.self)] != nil
    }

    /// The parsed list of the bytes last read, so that each event's fold does not parse it again.
    private final class Cache: Sendable {
        private let last = Mutex<(bytes: [UInt8], byEntity: [String: [IndexDefinition]])?>(nil)

        func lookup(_ bytes: UnsafeRawBufferPointer) -> [String: [IndexDefinition]]? {
            last.withLock { last in last.flatMap { $0.bytes.elementsEqual(bytes) ? $0.byEntity : nil } }
        }

        func keep(_ bytes: [UInt8], _ byEntity: [String: [IndexDefinition]]) {
            last.withLock { $0 = (bytes, byEntity) }
        }
    }
}
