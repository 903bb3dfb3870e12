/// A JSON value.
///
/// evsync carries its own small JSON layer instead of Foundation's
/// `JSONSerialization`: every event and view row goes through it on the hot
/// paths (import, rebuild, pull), the values are `Sendable`, key order comes
/// out the same on every run, and numbers keep the literal they were written
/// as (`JSONNumber`).
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])
}

/// The fields of one record, keyed by field name.
public typealias JSONObject = [String: JSONValue]

extension JSONValue {
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var objectValue: JSONObject? {
        if case .object(let value) = self { return value }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    public var numberValue: JSONNumber? {
        if case .number(let value) = self { return value }
        return nil
    }

    /// The nearest `Double` to a number.
    public var doubleValue: Double? { numberValue?.doubleValue }

    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The value as a whole number, when it is one that an `Int64` holds exactly.
    public var int64Value: Int64? { numberValue?.int64Value }

    /// The deepest nesting a record field's value may have (arrays and
    /// objects within one another; `[[1]]` nests 2). Kinto takes values up
    /// to 479 deep; readers of stored events, view entries and server pages
    /// allow this plus their envelopes' levels, so whatever a field may hold
    /// can always be read back. Input deeper than this is refused.
    public static let maxFieldNesting = 512

    /// Whether arrays and objects nest in this value more than `limit` deep.
    /// Stops looking one level past `limit`, however deep the value goes.
    public func nests(deeperThan limit: Int) -> Bool {
        switch self {
        case .array(let elements): limit == 0 || elements.contains { $0.nests(deeperThan: limit - 1) }
        case .object(let members): limit == 0 || members.values.contains { $0.nests(deeperThan: limit - 1) }
        case .null, .bool, .number, .string: false
        }
    }

    /// The name of the JSON type, for error messages.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }
}

/// `"\(name) \(year)"` is a `.string`: string interpolation works wherever a literal does.
extension JSONValue: ExpressibleByStringLiteral, ExpressibleByStringInterpolation, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral, ExpressibleByFloatLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .number(JSONNumber(value)) }
    public init(floatLiteral value: Double) { self = .number(JSONNumber(floatLiteral: value)) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(nilLiteral: ()) { self = .null }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
