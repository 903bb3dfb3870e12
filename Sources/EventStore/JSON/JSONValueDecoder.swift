import Foundation

/// Decodes a `Decodable` value straight from a `JSONValue`: how a stored record becomes an app's
/// `EntityRecord` without writing it out as bytes for Foundation's `JSONDecoder` to parse again.
///
/// It reads what `JSONDecoder` (default strategies) reads from the same JSON, with the same errors
/// (`DecodingError` with the coding path), except where that one is vague: a number a type cannot
/// hold exactly (`1.5` or `300` as an `Int8`, `1e400` as a `Double`) is `dataCorrupted` naming the
/// number and the type. `Data` is Base64, `URL` a string, `Decimal` a number; `JSONValue` and
/// `JSONNumber` come as they are (numbers keep their literal). A `Date` is read from a string by
/// `date`, or, without it, as `Date`'s own `Codable` form.
struct JSONValueDecoder {
    /// How a `Date` is read from its string; nil if it is not one.
    var date: (@Sendable (String) -> Date?)?
    /// Why a string is not a `Date`, for the error.
    var dateProblem: @Sendable (String) -> String = { "'\($0)' is not a date" }

    init(date: (@Sendable (String) -> Date?)? = nil) { self.date = date }

    func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        try decode(type, from: value, at: [])
    }

    /// `type` from the object `members` with one more member, `extra`: a record's fields and its id,
    /// without copying the fields into a new dictionary for it.
    func decode<T: Decodable>(_ type: T.Type, from members: JSONObject, adding extra: (key: String, value: JSONValue)) throws -> T {
        try T(from: ValueDecoder(value: .object(members), codingPath: [], options: self, extra: extra))
    }

    /// `type` from an object's `members` read where they are (`JSONMembersInPlace`), with one more, `extra`.
    func decode<T: Decodable>(_ type: T.Type, from members: any JSONMembers, adding extra: (key: String, value: JSONValue)) throws -> T {
        try T(from: ValueDecoder(value: .null, members: members, codingPath: [], options: self, extra: extra))
    }

    /// `path` is built only for an error or a type that decodes itself: a date field needs none.
    func decode<T: Decodable>(_ type: T.Type, from value: JSONValue, at path: @autoclosure () -> [any CodingKey]) throws -> T {
        if isSpecial(T.self) { return try special(type, from: value, at: path()) }
        return try T(from: ValueDecoder(value: value, codingPath: path(), options: self))
    }

    /// Whether `special` reads the type. Asked apart from reading it, so that no `T?` is made: the
    /// runtime looks up `Optional<T>`'s metadata for that, on every field, at the cost of the field's parse.
    private func isSpecial(_ type: Any.Type) -> Bool {
        type == JSONValue.self || type == JSONNumber.self || (type == Date.self && date != nil) || type == Data.self
            || type == URL.self || type == Decimal.self
    }

    /// The types `JSONDecoder` reads its own way (and the JSON values themselves), as `isSpecial` lists them.
    /// Each `as! T` casts a value to its own type, as the test before it has checked: it cannot fail.
    private func special<T: Decodable>(_ type: T.Type, from value: JSONValue, at path: @autoclosure () -> [any CodingKey]) throws -> T {
        if T.self == Date.self, let date {
            let text = try Self.string(value, path())
            guard let parsed = date(text) else { throw Self.corrupted(dateProblem(text), path()) }
            return parsed as! T
        }
        if T.self == JSONNumber.self {
            guard case .number(let number) = value else { throw Self.mismatch(type, value, path()) }
            return number as! T
        }
        if T.self == Data.self {
            guard let data = Data(base64Encoded: try Self.string(value, path())) else {
                throw Self.corrupted("Encountered Data is not valid Base64.", path())
            }
            return data as! T
        }
        if T.self == URL.self {
            guard let url = URL(string: try Self.string(value, path())) else { throw Self.corrupted("Invalid URL string.", path()) }
            return url as! T
        }
        if T.self == Decimal.self {
            guard case .number(let number) = value else { throw Self.mismatch(type, value, path()) }
            guard let decimal = Decimal(string: number.text, locale: Locale(identifier: "en_US_POSIX")) else {
                throw Self.corrupted("Number \(number.text) is not representable as Decimal", path())
            }
            return decimal as! T
        }
        if T.self == JSONValue.self { return value as! T }
        return try T(from: ValueDecoder(value: value, codingPath: path(), options: self))   // not special after all
    }

    // MARK: Scalars

    static func bool(_ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> Bool {
        guard case .bool(let bool) = value else { throw mismatch(Bool.self, value, path()) }
        return bool
    }

    static func string(_ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> String {
        guard case .string(let string) = value else { throw mismatch(String.self, value, path()) }
        return string
    }

    /// An integer type's value: a whole number it holds exactly (`3`, `3.0`, `3e0`), whatever the literal's length.
    static func integer<I: FixedWidthInteger>(_ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> I {
        guard case .number(let number) = value else { throw mismatch(I.self, value, path()) }
        if number.isIntegerLiteral, let integer = I(number.text) { return integer }
        if !number.isIntegerLiteral, let whole = number.int64Value, let integer = I(exactly: whole) { return integer }
        throw corrupted("Number \(number.text) is not representable as \(I.self)", path())
    }

    static func double(_ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> Double {
        guard case .number(let number) = value else { throw mismatch(Double.self, value, path()) }
        guard let double = Double(number.text), double.isFinite else {
            throw corrupted("Number \(number.text) is not representable as Double", path())
        }
        return double
    }

    static func float(_ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> Float {
        guard case .number(let number) = value else { throw mismatch(Float.self, value, path()) }
        guard let float = Float(number.text), float.isFinite else {
            throw corrupted("Number \(number.text) is not representable as Float", path())
        }
        return float
    }

    // MARK: Errors, worded as JSONDecoder's

    static func mismatch(_ type: Any.Type, _ value: JSONValue, _ path: [any CodingKey]) -> DecodingError {
        let context = DecodingError.Context(codingPath: path, debugDescription: value == .null
            ? "Cannot get value of type \(type) -- found null value instead"
            : "Expected to decode \(type) but found \(value.typeName) instead.")
        return value == .null ? .valueNotFound(type, context) : .typeMismatch(type, context)
    }

    static func corrupted(_ description: String, _ path: [any CodingKey]) -> DecodingError {
        .dataCorrupted(DecodingError.Context(codingPath: path, debugDescription: description))
    }
}

/// An array element's place in a coding path (`[2]`).
struct IndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }
    init(_ index: Int) { intValue = index }
    init?(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { nil }
}

/// The decoder at one value. A class: `T(from:)` takes it as `any Decoder`, and each keyed container
/// keeps it, so both copy one reference where a struct of these parts was boxed and retained part by part.
private final class ValueDecoder: Decoder {
    let value: JSONValue
    /// The object's members when they are not parsed into `value` (a record read in place).
    let members: (any JSONMembers)?
    let codingPath: [any CodingKey]
    let options: JSONValueDecoder
    /// A member the object has besides its own (`decode(_:from:adding:)`), its key and value apart:
    /// every member looked up compares the key, and copying the pair would copy the value each time.
    let extraKey: String?
    let extraValue: JSONValue
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(value: JSONValue, members: (any JSONMembers)? = nil, codingPath: [any CodingKey], options: JSONValueDecoder,
         extra: (key: String, value: JSONValue)? = nil) {
        (self.value, self.members, self.codingPath, self.options) = (value, members, codingPath, options)
        (extraKey, extraValue) = (extra?.key, extra?.value ?? .null)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        if let members { return KeyedDecodingContainer(Keyed(decoder: self, members: members)) }
        guard case .object(let members) = value else { throw JSONValueDecoder.mismatch([String: Any].self, value, codingPath) }
        return KeyedDecodingContainer(Keyed(decoder: self, members: members))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let value = try whole()
        guard case .array(let elements) = value else { throw JSONValueDecoder.mismatch([Any].self, value, codingPath) }
        return Unkeyed(elements: elements, codingPath: codingPath, options: options)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        Single(value: try whole(), codingPath: codingPath, options: options)
    }

    /// The value as one, members read in place parsed after all (with `extra` among them).
    private func whole() throws -> JSONValue {
        guard let members else { return value }
        var object = try members.object()
        if let extraKey { object[extraKey] = extraValue }
        return .object(object)
    }
}

private struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: ValueDecoder
    let members: any JSONMembers
    var codingPath: [any CodingKey] { decoder.codingPath }
    private var options: JSONValueDecoder { decoder.options }

    var allKeys: [Key] {
        var names = (try? members.names()) ?? []
        if let extraKey = decoder.extraKey { names.append(extraKey) }
        return names.compactMap { Key(stringValue: $0) }
    }
    func contains(_ key: Key) -> Bool { (try? member(key.stringValue)) != nil }

    private func member(_ name: String) throws -> JSONValue? {
        if let extraKey = decoder.extraKey, extraKey == name { return decoder.extraValue }
        return try members.member(name)
    }

    private func value(_ key: Key) throws -> JSONValue {
        guard let value = try member(key.stringValue) else {
            throw DecodingError.keyNotFound(key, DecodingError.Context(
                codingPath: codingPath, debugDescription: "No value associated with key \(key.stringValue)."))
        }
        return value
    }

    func decodeNil(forKey key: Key) throws -> Bool { try value(key) == .null }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try JSONValueDecoder.bool(value(key), codingPath + [key]) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try JSONValueDecoder.string(value(key), codingPath + [key]) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try JSONValueDecoder.double(value(key), codingPath + [key]) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try JSONValueDecoder.float(value(key), codingPath + [key]) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try JSONValueDecoder.integer(value(key), codingPath + [key]) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try JSONValueDecoder.integer(value(key), codingPath + [key]) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try JSONValueDecoder.integer(value(key), codingPath + [key]) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try JSONValueDecoder.integer(value(key), codingPath + [key]) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try JSONValueDecoder.integer(value(key), codingPath + [key]) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try JSONValueDecoder.integer(value(key), codingPath + [key]) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try JSONValueDecoder.integer(value(key), codingPath + [key]) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try JSONValueDecoder.integer(value(key), codingPath + [key]) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try JSONValueDecoder.integer(value(key), codingPath + [key]) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try JSONValueDecoder.integer(value(key), codingPath + [key]) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try options.decode(type, from: value(key), at: codingPath + [key]) }
    // An optional field: one lookup, where the protocol's defaults make three (contains, decodeNil, decode).
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        guard let value = try member(key.stringValue), value != .null else { return nil }
        return try JSONValueDecoder.string(value, codingPath + [key])
    }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let value = try member(key.stringValue), value != .null else { return nil }
        return try options.decode(type, from: value, at: codingPath + [key])
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try ValueDecoder(value: value(key), codingPath: codingPath + [key], options: options).container(keyedBy: type)
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try ValueDecoder(value: value(key), codingPath: codingPath + [key], options: options).unkeyedContainer()
    }
    /// As `JSONDecoder`: the member "super", or null if there is none.
    func superDecoder() throws -> any Decoder {
        ValueDecoder(value: try member("super") ?? .null, codingPath: codingPath, options: options)
    }
    func superDecoder(forKey key: Key) throws -> any Decoder {
        ValueDecoder(value: try member(key.stringValue) ?? .null, codingPath: codingPath + [key], options: options)
    }
}

private struct Unkeyed: UnkeyedDecodingContainer {
    let elements: [JSONValue]
    let codingPath: [any CodingKey]
    let options: JSONValueDecoder
    var currentIndex = 0

    init(elements: [JSONValue], codingPath: [any CodingKey], options: JSONValueDecoder) {
        (self.elements, self.codingPath, self.options) = (elements, codingPath, options)
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    /// The next element and its path, moving past it.
    private mutating func next(_ type: Any.Type) throws -> (JSONValue, [any CodingKey]) {
        let path = codingPath + [IndexKey(currentIndex)]
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(type, DecodingError.Context(codingPath: path, debugDescription: "Unkeyed container is at end."))
        }
        defer { currentIndex += 1 }
        return (elements[currentIndex], path)
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else { _ = try next(Any?.self); return false }
        if elements[currentIndex] == .null { currentIndex += 1; return true }
        return false
    }
    mutating func decode(_ type: Bool.Type) throws -> Bool { let (v, p) = try next(type); return try JSONValueDecoder.bool(v, p) }
    mutating func decode(_ type: String.Type) throws -> String { let (v, p) = try next(type); return try JSONValueDecoder.string(v, p) }
    mutating func decode(_ type: Double.Type) throws -> Double { let (v, p) = try next(type); return try JSONValueDecoder.double(v, p) }
    mutating func decode(_ type: Float.Type) throws -> Float { let (v, p) = try next(type); return try JSONValueDecoder.float(v, p) }
    mutating func decode(_ type: Int.Type) throws -> Int { let (v, p) = try next(type); return try JSONValueDecoder.integer(v, p) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { let (v, p) = try next(type); return try JSONValueDecoder.integer(v, p) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { let (v, p) = try next(type); return try JSONValueDecoder.integer(v, p) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { let (v, p) = try next(type); return try JSONValueDecoder.integer(v, p) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { let (v, p) = try next(type); return try JSONValueDecoder.integer(v, p) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { let (v, p) = try next(type); return try JSONValueDecoder.integer(v, p) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { let (v, p) = try next(type); return try JSONValueDecoder.integer(v, p) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { let (v, p) = try next(type); return try JSONValueDecoder.integer(v, p) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { let (v, p) = try next(type); return try JSONValueDecoder.integer(v, p) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { let (v, p) = try next(type); return try JSONValueDecoder.integer(v, p) }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { let (v, p) = try next(type); return try options.decode(type, from: v, at: p) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let (v, p) = try next([String: Any].self)
        return try ValueDecoder(value: v, codingPath: p, options: options).container(keyedBy: type)
    }
    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (v, p) = try next([Any].self)
        return try ValueDecoder(value: v, codingPath: p, options: options).unkeyedContainer()
    }
    mutating func superDecoder() throws -> any Decoder {
        let (v, p) = try next((any Decoder).self)
        return ValueDecoder(value: v, codingPath: p, options: options)
    }
}

private struct Single: SingleValueDecodingContainer {
    let value: JSONValue
    let codingPath: [any CodingKey]
    let options: JSONValueDecoder

    func decodeNil() -> Bool { value == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try JSONValueDecoder.bool(value, codingPath) }
    func decode(_ type: String.Type) throws -> String { try JSONValueDecoder.string(value, codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try JSONValueDecoder.double(value, codingPath) }
    func decode(_ type: Float.Type) throws -> Float { try JSONValueDecoder.float(value, codingPath) }
    func decode(_ type: Int.Type) throws -> Int { try JSONValueDecoder.integer(value, codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try JSONValueDecoder.integer(value, codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try JSONValueDecoder.integer(value, codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try JSONValueDecoder.integer(value, codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try JSONValueDecoder.integer(value, codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try JSONValueDecoder.integer(value, codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try JSONValueDecoder.integer(value, codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try JSONValueDecoder.integer(value, codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try JSONValueDecoder.integer(value, codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try JSONValueDecoder.integer(value, codingPath) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try options.decode(type, from: value, at: codingPath) }
}
