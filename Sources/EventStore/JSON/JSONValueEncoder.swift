import Foundation

/// Encodes an `Encodable` value as a `JSONValue`, for `JSONWriter` to write: how the CLI's `--json`
/// results, declared as `Encodable` types, come out in the bytes evsync writes everywhere else.
/// Foundation's `JSONEncoder` would write other bytes: `/` escaped, `\b` and `\f` as such rather
/// than `\u0008`, and record values' numbers as `Double`s instead of their literals (`JSONNumber`).
/// A field's value goes in as `EncodableJSON`; an optional property left nil is left out
/// (`encodeIfPresent`), and one wrapped in `NullWhenAbsent` is written as `null`.
///
/// With `foundationDates`, it writes what Foundation's `JSONEncoder` (default strategies) writes, as
/// values: a `Date` as the closure says (given the coding path), `Data` as Base64, `URL` as its string,
/// `Decimal` as a number, a `Double` or `Float` as `JSONEncoder` spells it (`1.0` as `1`). That is how
/// an app's `EntityRecord` becomes fields without a round trip through bytes.
package enum JSONValueEncoder {
    typealias DateRule = (Date, [any CodingKey]) throws -> JSONValue

    package static func encode(_ value: some Encodable) throws -> JSONValue { try encode(value, foundationDates: nil) }

    static func encode(_ value: some Encodable, foundationDates: DateRule?) throws -> JSONValue {
        let node = Node(dates: foundationDates)
        try node.encode(value, at: [])
        return node.value
    }

    /// What has been encoded at one place; objects and arrays are filled in as their containers are.
    private final class Node {
        var content: Content = .value(.null)
        let dates: DateRule?
        init(dates: DateRule?) { self.dates = dates }
        enum Content {
            case value(JSONValue)
            case object([String: Node])
            case array([Node])
        }

        var value: JSONValue {
            switch content {
            case .value(let value): value
            case .object(let members): .object(members.mapValues(\.value))
            case .array(let elements): .array(elements.map(\.value))
            }
        }

        // Types are told apart by their metatypes, as `JSONValueDecoder` does: a cast looks the types up at run
        // time, and every value of every record written comes here.
        func encode<Value: Encodable>(_ value: Value, at path: [any CodingKey]) throws {
            if Value.self == EncodableJSON.self, let json = value as? EncodableJSON { content = .value(json.value); return }
            // Values themselves (in the libraries' Codable results), numbers with their literals.
            if Value.self == JSONValue.self, let json = value as? JSONValue { content = .value(json); return }
            if Value.self == JSONNumber.self, let number = value as? JSONNumber { content = .value(.number(number)); return }
            if let dates, let json = try Self.asFoundation(value, dates: dates, at: path) { content = .value(json); return }
            try value.encode(to: NodeEncoder(node: self, codingPath: path))
        }

        /// The types `JSONEncoder` writes its own way; nil for any other.
        static func asFoundation<Value: Encodable>(_ value: Value, dates: DateRule, at path: [any CodingKey]) throws -> JSONValue? {
            if Value.self == Date.self, let date = value as? Date { return try dates(date, path) }
            if Value.self == Data.self, let data = value as? Data { return .string(data.base64EncodedString()) }
            if Value.self == URL.self, let url = value as? URL { return .string(url.absoluteString) }
            if Value.self == Decimal.self, let decimal = value as? Decimal { return JSONNumber(decimal.description).map(JSONValue.number) }
            return nil
        }

        /// `value.description` without a trailing `.0`: how `JSONEncoder` writes a `Double` or `Float`.
        static func foundationNumber(_ description: String) -> JSONNumber? {
            JSONNumber(description.hasSuffix(".0") ? String(description.dropLast(2)) : description)
        }

        /// The member `key` of this object, made an object first if it is not one yet.
        func member(_ key: String) -> Node {
            let node = Node(dates: dates)
            var members: [String: Node] = [:]
            if case .object(let existing) = content {
                // `content` let go first, so that the members are not copied to add one: a copy each made
                // an object of n members cost n², and every record written has one.
                content = .value(.null)
                members = existing
            }
            members[key] = node
            content = .object(members)
            return node
        }

        func appended() -> Node {
            let node = Node(dates: dates)
            var elements: [Node] = []
            if case .array(let existing) = content {
                content = .value(.null)  // as in `member`
                elements = existing
            }
            elements.append(node)
            content = .array(elements)
            return node
        }
    }

    private struct NodeEncoder: Encoder {
        let node: Node
        let codingPath: [any CodingKey]
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            // Two keyed containers on one encoder write into one object (`NullWhenAbsent`, merged results).
            // Room for a record's fields from the start: growing a dictionary rehashes what it holds.
            if case .object = node.content {} else { node.content = .object(Dictionary(minimumCapacity: 16)) }
            return KeyedEncodingContainer(Keyed(node: node, codingPath: codingPath))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            if case .array = node.content {} else { node.content = .array([]) }
            return Unkeyed(node: node, codingPath: codingPath)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer { Single(node: node, codingPath: codingPath) }
    }

    private struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let node: Node
        let codingPath: [any CodingKey]

        mutating func encodeNil(forKey key: Key) throws { node.member(key.stringValue).content = .value(.null) }
        // The commonest fields straight in: the generic path would build their coding path and test their type
        // against every special one, for each field of each record.
        mutating func encode(_ value: String, forKey key: Key) throws { node.member(key.stringValue).content = .value(.string(value)) }
        mutating func encode(_ value: Bool, forKey key: Key) throws { node.member(key.stringValue).content = .value(.bool(value)) }
        mutating func encode(_ value: Int, forKey key: Key) throws {
            node.member(key.stringValue).content = .value(.number(JSONNumber(value)))
        }
        mutating func encode(_ value: some Encodable, forKey key: Key) throws {
            try node.member(key.stringValue).encode(value, at: codingPath + [key])
        }
        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type,
                                                            forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
            NodeEncoder(node: node.member(key.stringValue), codingPath: codingPath + [key]).container(keyedBy: keyType)
        }
        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            NodeEncoder(node: node.member(key.stringValue), codingPath: codingPath + [key]).unkeyedContainer()
        }
        mutating func superEncoder() -> any Encoder { NodeEncoder(node: node, codingPath: codingPath) }
        mutating func superEncoder(forKey key: Key) -> any Encoder {
            NodeEncoder(node: node.member(key.stringValue), codingPath: codingPath + [key])
        }
    }

    private struct Unkeyed: UnkeyedEncodingContainer {
        let node: Node
        let codingPath: [any CodingKey]
        var count: Int { if case .array(let elements) = node.content { elements.count } else { 0 } }

        mutating func encodeNil() throws { node.appended().content = .value(.null) }
        /// The next element's path, with its index as `JSONEncoder` gives it (a date rule may look at it).
        private var next: [any CodingKey] { codingPath + [IndexKey(count)] }

        mutating func encode(_ value: some Encodable) throws { let path = next; try node.appended().encode(value, at: path) }
        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            let path = next
            return NodeEncoder(node: node.appended(), codingPath: path).container(keyedBy: keyType)
        }
        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            let path = next
            return NodeEncoder(node: node.appended(), codingPath: path).unkeyedContainer()
        }
        mutating func superEncoder() -> any Encoder { let path = next; return NodeEncoder(node: node.appended(), codingPath: path) }
    }

    /// Scalars: strings, booleans and integers as they are; other numbers as their shortest literal.
    private struct Single: SingleValueEncodingContainer {
        let node: Node
        let codingPath: [any CodingKey]

        mutating func encodeNil() throws { node.content = .value(.null) }
        mutating func encode(_ value: Bool) throws { node.content = .value(.bool(value)) }
        mutating func encode(_ value: String) throws { node.content = .value(.string(value)) }
        mutating func encode(_ value: Double) throws {
            let number = value.isFinite && node.dates != nil ? Node.foundationNumber(value.description) : JSONNumber(value)
            guard let number else {
                throw EncodingError.invalidValue(value, EncodingError.Context(codingPath: codingPath, debugDescription: "JSON has no \(value)"))
            }
            node.content = .value(.number(number))
        }
        mutating func encode(_ value: Float) throws {
            guard value.isFinite, node.dates != nil else { return try encode(Double(value)) }
            guard let number = Node.foundationNumber(value.description) else {
                throw EncodingError.invalidValue(value, EncodingError.Context(codingPath: codingPath, debugDescription: "JSON has no \(value)"))
            }
            node.content = .value(.number(number))
        }
        mutating func encode(_ value: Int) throws { node.content = .value(.number(JSONNumber(value))) }
        mutating func encode(_ value: Int8) throws { node.content = .value(.number(JSONNumber(value))) }
        mutating func encode(_ value: Int16) throws { node.content = .value(.number(JSONNumber(value))) }
        mutating func encode(_ value: Int32) throws { node.content = .value(.number(JSONNumber(value))) }
        mutating func encode(_ value: Int64) throws { node.content = .value(.number(JSONNumber(value))) }
        mutating func encode(_ value: UInt) throws { node.content = .value(.number(JSONNumber(value))) }
        mutating func encode(_ value: UInt8) throws { node.content = .value(.number(JSONNumber(value))) }
        mutating func encode(_ value: UInt16) throws { node.content = .value(.number(JSONNumber(value))) }
        mutating func encode(_ value: UInt32) throws { node.content = .value(.number(JSONNumber(value))) }
        mutating func encode(_ value: UInt64) throws { node.content = .value(.number(JSONNumber(value))) }
        mutating func encode(_ value: some Encodable) throws { try node.encode(value, at: codingPath) }
    }
}

/// A `JSONValue` inside an `Encodable` result: `JSONValueEncoder` takes it as it is (numbers keep their
/// literal). Other encoders cannot write a `JSONNumber`'s literal, so they refuse it.
package struct EncodableJSON: Encodable, Sendable {
    package let value: JSONValue
    package init(_ value: JSONValue) { self.value = value }

    package func encode(to encoder: any Encoder) throws {
        throw EncodingError.invalidValue(value, EncodingError.Context(codingPath: encoder.codingPath,
                                                                      debugDescription: "only JSONValueEncoder writes a JSONValue"))
    }
}

/// An optional property that `--json` writes as `null` when absent, where a plain optional is left out.
@propertyWrapper
package struct NullWhenAbsent<Value: Encodable>: Encodable {
    package var wrappedValue: Value?
    package init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}
