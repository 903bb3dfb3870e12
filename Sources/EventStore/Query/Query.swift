public import Foundation

/// Which records of one entity to read, in what order, how many: what an app screen shows.
///
/// ```swift
/// // The ten next holidays of 2027, typed:
/// let next = try store.read { try $0.records(Holiday.where(\.date >= "2027-01-01").order(\.date).limit(10)) }
/// // By field name, as `Record`s:
/// let named = try store.read { try $0.records(Query("Holiday").where("name", .contains, "day").order("-date")) }
/// ```
///
/// Conditions are joined by *and*; they compare as `FieldCondition` says (numbers as numbers, strings and
/// ISO dates as text, an array when any element matches). Records are sorted by the sort keys, then by id;
/// without any, by id. A condition on a field the schema indexes (`x-evsync-index`) is answered by a range
/// scan of the index; any other by a scan of the table. A query is a value: build it once, run it often.
public struct Query<Value>: Sendable {
    /// The entity's name (any case).
    public let entity: String
    public private(set) var conditions: [FieldCondition] = []
    public private(set) var sortKeys: [SortKey] = []
    /// At most this many records; nil: all.
    public private(set) var limit: Int?
    /// Records skipped before the first returned, after sorting.
    public private(set) var offset = 0
    /// Typed conditions wait for the schema to write their values as the field stores them.
    var pending: [@Sendable (EntitySchema) throws(StoreError) -> FieldCondition] = []
    /// A key path that names no field, found as the query was built: thrown when it runs.
    var buildError: StoreError?

    init(entity: String) { self.entity = entity }

    /// Only the records where `field op operand` holds; `operand` as `--where` takes it (text).
    public func `where`(_ field: String, _ op: FieldCondition.Operator, _ operand: String) -> Self {
        `where`(FieldCondition(field, op, operand))
    }

    public func `where`(_ condition: FieldCondition) -> Self {
        var query = self
        query.conditions.append(condition)
        return query
    }

    /// Sorted by the sort keys given before, then by these fields, then by id; `-date` is descending.
    public func order(_ fields: String...) -> Self {
        order(fields.map { SortKey(parsing: $0) })
    }

    public func order(_ keys: [SortKey]) -> Self {
        var query = self
        query.sortKeys += keys
        return query
    }

    /// At most `limit` records, after skipping `offset`.
    public func limit(_ limit: Int, offset: Int = 0) -> Self {
        var query = self
        query.limit = max(0, limit)
        query.offset = max(0, offset)
        return query
    }

    /// The conditions with every typed value written as `schema` stores its field.
    func resolvedConditions(_ schema: EntitySchema) throws(StoreError) -> [FieldCondition] {
        if let buildError { throw buildError }
        var resolved = conditions
        for make in pending { resolved.append(try make(schema)) }
        return resolved
    }
}

extension Query where Value == Record {
    /// All records of `entity`, as `Record`s: narrow it with `where`, `order`, `limit`.
    public init(_ entity: String) { self.init(entity: entity) }
}

// MARK: Typed queries

/// A condition on a field of `Root` named by key path: `\.date >= "2027-01-01"`, `\.name == "Easter"`.
public struct FieldPredicate<Root>: Sendable {
    let make: @Sendable (EntitySchema) throws(StoreError) -> FieldCondition
}

extension EntityRecord {
    /// All records of this type: `Holiday.all.order(\.date)`.
    public static var all: Query<Self> { Query(entity: entityName) }

    /// The records where `predicate` holds: `Holiday.where(\.date >= "2027-01-01")`.
    public static func `where`(_ predicate: FieldPredicate<Self>) -> Query<Self> { all.where(predicate) }

    /// The records sorted by a field: `Holiday.order(\.date)`.
    public static func order<Field>(_ keyPath: KeyPath<Self, Field>, descending: Bool = false) -> Query<Self> {
        all.order(keyPath, descending: descending)
    }
}

extension Query where Value: EntityRecord {
    public func `where`(_ predicate: FieldPredicate<Value>) -> Self {
        var query = self
        query.pending.append(predicate.make)
        return query
    }

    /// Only the records whose field contains `text` (any case; an array: any element).
    public func `where`<Field>(_ keyPath: KeyPath<Value, Field>, contains text: String) -> Self {
        `where`(textPredicate(keyPath, .contains, text))
    }

    /// Sorted by the keys given before, then by this field, then by id.
    public func order<Field>(_ keyPath: KeyPath<Value, Field>, descending: Bool = false) -> Self {
        do {
            return order([SortKey(try fieldName(keyPath), descending: descending)])
        } catch {
            // Builders do not throw: a key path that names no field fails the query when it runs.
            var query = self
            query.buildError = query.buildError ?? error
            return query
        }
    }
}

/// The field a key path names: its stored property's name, which is the field's with `Codable`'s own
/// coding keys (a type with `CodingKeys` of other names uses the field names instead).
func fieldName<Root, Field>(_ keyPath: KeyPath<Root, Field>) throws(StoreError) -> String {
    // `\Holiday.date` from the key path's own description (Swift 5.9+): a single stored property.
    let prefix = "\\\(Root.self)."
    let description = keyPath.debugDescription
    guard description.hasPrefix(prefix) else { throw unnamed(description) }
    let name = String(description.dropFirst(prefix.count))
    guard !name.isEmpty, !name.contains("."), !name.contains("<") else { throw unnamed(description) }
    return name
}

private func unnamed(_ description: String) -> StoreError {
    StoreError(.invalidData, "a query's key path must name one stored property of the record, not \(description): name the field as text instead")
}

/// A typed value as the schema's field stores it (a `Date` as its `format` asks), then as the text `--where` takes.
func operandText<Root, Field: Encodable>(_ value: Field, field: String, keyPath: KeyPath<Root, Field>,
                                         schema: EntitySchema) throws(StoreError) -> String {
    let encoded: JSONValue
    do {
        encoded = try JSONValueEncoder.encode(value, foundationDates: { date, _ in
            .string(schema.format(of: field) == "date" ? RecordCoder.day(of: date) : RecordCoder.dateTime(of: date))
        })
    } catch {
        throw StoreError(.invalidData, "cannot compare \(schema.name).\(field) with \(value): \(error)")
    }
    switch encoded {
    case .string(let text): return text
    case .array, .object:
        throw StoreError(.invalidData, "\(schema.name).\(field) can be compared with a single value, not \(JSONWriter.string(encoded))")
    default: return JSONWriter.string(encoded)
    }
}

private func predicate<Root, Field: Encodable>(_ keyPath: KeyPath<Root, Field>, _ op: FieldCondition.Operator,
                                               _ value: Field) -> FieldPredicate<Root> where Field: Sendable {
    let keyPath = UncheckedKeyPath(keyPath)
    return FieldPredicate { schema throws(StoreError) in
        let field = try fieldName(keyPath.value)
        return FieldCondition(field, op, try operandText(value, field: field, keyPath: keyPath.value, schema: schema))
    }
}

/// A key path into a value type holds no state of its own: safe to send (`KeyPath` is not `Sendable` before Swift 6.2's
/// inference on literals, which a generic one does not get).
struct UncheckedKeyPath<Root, Field>: @unchecked Sendable {
    let value: KeyPath<Root, Field>
    init(_ value: KeyPath<Root, Field>) { self.value = value }
}

public func == <Root, Field: Encodable & Sendable>(lhs: KeyPath<Root, Field>, rhs: Field) -> FieldPredicate<Root> { predicate(lhs, .equal, rhs) }
public func != <Root, Field: Encodable & Sendable>(lhs: KeyPath<Root, Field>, rhs: Field) -> FieldPredicate<Root> { predicate(lhs, .notEqual, rhs) }
public func < <Root, Field: Encodable & Sendable>(lhs: KeyPath<Root, Field>, rhs: Field) -> FieldPredicate<Root> { predicate(lhs, .less, rhs) }
public func <= <Root, Field: Encodable & Sendable>(lhs: KeyPath<Root, Field>, rhs: Field) -> FieldPredicate<Root> { predicate(lhs, .atMost, rhs) }
public func > <Root, Field: Encodable & Sendable>(lhs: KeyPath<Root, Field>, rhs: Field) -> FieldPredicate<Root> { predicate(lhs, .greater, rhs) }
public func >= <Root, Field: Encodable & Sendable>(lhs: KeyPath<Root, Field>, rhs: Field) -> FieldPredicate<Root> { predicate(lhs, .atLeast, rhs) }

// A `Date` field compared with a day or date-time as text: `\.date >= "2027-01-01"`.
public func == <Root>(lhs: KeyPath<Root, Date>, rhs: String) -> FieldPredicate<Root> { textPredicate(lhs, .equal, rhs) }
public func != <Root>(lhs: KeyPath<Root, Date>, rhs: String) -> FieldPredicate<Root> { textPredicate(lhs, .notEqual, rhs) }
public func < <Root>(lhs: KeyPath<Root, Date>, rhs: String) -> FieldPredicate<Root> { textPredicate(lhs, .less, rhs) }
public func <= <Root>(lhs: KeyPath<Root, Date>, rhs: String) -> FieldPredicate<Root> { textPredicate(lhs, .atMost, rhs) }
public func > <Root>(lhs: KeyPath<Root, Date>, rhs: String) -> FieldPredicate<Root> { textPredicate(lhs, .greater, rhs) }
public func >= <Root>(lhs: KeyPath<Root, Date>, rhs: String) -> FieldPredicate<Root> { textPredicate(lhs, .atLeast, rhs) }
public func == <Root>(lhs: KeyPath<Root, Date?>, rhs: String) -> FieldPredicate<Root> { textPredicate(lhs, .equal, rhs) }
public func != <Root>(lhs: KeyPath<Root, Date?>, rhs: String) -> FieldPredicate<Root> { textPredicate(lhs, .notEqual, rhs) }
public func < <Root>(lhs: KeyPath<Root, Date?>, rhs: String) -> FieldPredicate<Root> { textPredicate(lhs, .less, rhs) }
public func <= <Root>(lhs: KeyPath<Root, Date?>, rhs: String) -> FieldPredicate<Root> { textPredicate(lhs, .atMost, rhs) }
public func > <Root>(lhs: KeyPath<Root, Date?>, rhs: String) -> FieldPredicate<Root> { textPredicate(lhs, .greater, rhs) }
public func >= <Root>(lhs: KeyPath<Root, Date?>, rhs: String) -> FieldPredicate<Root> { textPredicate(lhs, .atLeast, rhs) }

private func textPredicate<Root, Field>(_ keyPath: KeyPath<Root, Field>, _ op: FieldCondition.Operator, _ text: String) -> FieldPredicate<Root> {
    let keyPath = UncheckedKeyPath(keyPath)
    return FieldPredicate { _ throws(StoreError) in FieldCondition(try fieldName(keyPath.value), op, text) }
}
