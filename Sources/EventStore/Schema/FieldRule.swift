import Foundation

/// The constraints on one value. A class: every field of every imported
/// line looks its rule up, and a struct would be copied out of the
/// dictionary each time (retaining each of its members).
final class Rule: Sendable {
    let types: Set<String>
    let format: String?
    let base64: Bool
    let minLength: Int?
    let maxLength: Int?
    let minimum: JSONNumber?
    let maximum: JSONNumber?
    let allowed: [JSONValue]?
    let items: Rule?

    static let knownTypes: Set<String> = ["string", "number", "integer", "boolean", "array", "object", "null"]

    /// What a field's definition may hold.
    static let keywords: Set<String> = [
        "type", "format", "contentEncoding", "minLength", "maxLength", "minimum", "maximum", "enum", "items",
        "default", "title", "description", "$comment", "examples", "x-evsync-renamed-from", "x-evsync-index",
        "x-evsync-clear",
    ]

    init(_ definition: JSONValue, path: String) throws(SchemaError) {
        guard case .object(let object) = definition else { throw SchemaError("\(path) must be an object") }
        if let keyword = object.keys.sorted().first(where: { !Self.keywords.contains($0) }) {
            throw SchemaError("\(path): keyword '\(keyword)' is not supported (evsync reads \(Self.keywords.sorted().joined(separator: ", ")))")
        }
        switch object["type"] {
        case .string(let type)?: types = [type]
        case .array(let list)? where list.allSatisfy({ $0.stringValue != nil }): types = Set(list.compactMap(\.stringValue))
        case nil: types = []
        default: throw SchemaError("\(path): 'type' must be a string or an array of strings")
        }
        if let unknown = types.first(where: { !Self.knownTypes.contains($0) }) {
            throw SchemaError("\(path): unknown type '\(unknown)'")
        }
        if let given = object["format"], given.stringValue == nil { throw SchemaError("\(path): 'format' must be a string") }
        format = object["format"]?.stringValue
        if let format, !["date", "date-time", "uri", "uuid"].contains(format) {
            throw SchemaError("\(path): unsupported format '\(format)'")
        }
        if let encoding = object["contentEncoding"], encoding != "base64" {
            throw SchemaError("\(path): 'contentEncoding' can only be \"base64\"")
        }
        base64 = object["contentEncoding"] != nil
        func length(_ keyword: String) throws(SchemaError) -> Int? {
            guard let value = object[keyword] else { return nil }
            guard let length = value.int64Value, length >= 0, length <= Int32.max else {
                throw SchemaError("\(path): '\(keyword)' must be a whole number of characters, not \(JSONWriter.string(value))")
            }
            return Int(length)
        }
        minLength = try length("minLength")
        maxLength = try length("maxLength")
        func bound(_ keyword: String) throws(SchemaError) -> JSONNumber? {
            guard let value = object[keyword] else { return nil }
            guard let number = value.numberValue else { throw SchemaError("\(path): '\(keyword)' must be a number, not \(value.typeName)") }
            return number
        }
        minimum = try bound("minimum")
        maximum = try bound("maximum")
        if let given = object["enum"], given.arrayValue?.isEmpty != false {
            throw SchemaError("\(path): 'enum' must be an array of the values allowed")
        }
        allowed = object["enum"]?.arrayValue
        items = try object["items"].map { definition throws(SchemaError) in try Rule(definition, path: "\(path) items") }
    }

    /// `path` names the value in errors; it is built only when there is one.
    func check(_ value: JSONValue, path: @autoclosure () -> String) throws(SchemaError) {
        if !types.isEmpty, !types.contains(where: { Self.matches(value, type: $0) }) {
            throw SchemaError("\(path()) must be \(types.sorted().joined(separator: " or ")), not \(value.typeName)")
        }
        if let allowed, !allowed.contains(value) {
            throw SchemaError("\(path()) must be one of \(allowed.map(JSONWriter.string).joined(separator: ", "))")
        }
        switch value {
        case .string(let string):
            if let minLength, string.count < minLength { throw SchemaError("\(path()) must have at least \(Self.characters(minLength))") }
            if let maxLength, string.count > maxLength { throw SchemaError("\(path()) must have at most \(Self.characters(maxLength))") }
            if let format { try Self.checkFormat(format, string, path: path()) }
            if base64, Data(base64Encoded: string) == nil { throw SchemaError("\(path()) must be base64-encoded bytes") }
        case .number(let number):
            // Compared exactly, however long the literals.
            if let minimum, number < minimum { throw SchemaError("\(path()) must be at least \(minimum)") }
            if let maximum, number > maximum { throw SchemaError("\(path()) must be at most \(maximum)") }
        case .array(let elements):
            if let rule = items {
                for (position, element) in elements.enumerated() {
                    try rule.check(element, path: "\(path())[\(position)]")
                }
            }
        default:
            break
        }
    }

    /// `1 character`, `2 characters`.
    static func characters(_ count: Int) -> String { count == 1 ? "1 character" : "\(count) characters" }

    static func matches(_ value: JSONValue, type: String) -> Bool {
        switch (type, value) {
        case ("string", .string), ("number", .number), ("boolean", .bool), ("array", .array),
             ("object", .object), ("null", .null):
            true
        case ("integer", .number(let number)):
            number.isIntegral
        default:
            false
        }
    }

    /// RFC 3986's `scheme ":" hier-part`, with a host unless the scheme is
    /// `mailto` or `urn`, and no spaces or control characters. By hand: every
    /// imported link is checked, and Foundation's URL parser showed on profiles.
    static func isAbsoluteURL(_ string: String) -> Bool {
        var string = string
        return string.withUTF8 { bytes in
            guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0, bytes[0].isASCIILetter,
                  bytes[1..<colon].allSatisfy({ $0.isASCIILetter || $0.isASCIIDigit || $0 == 0x2B || $0 == 0x2D || $0 == 0x2E }),
                  !bytes.contains(where: { $0 <= 0x20 || $0 == 0x7F })
            else { return false }
            let rest = bytes[(colon + 1)...]
            guard rest.count >= 2, rest[rest.startIndex] == 0x2F, rest[rest.startIndex + 1] == 0x2F else {
                let scheme = String(decoding: bytes[..<colon], as: UTF8.self).lowercased()
                return (scheme == "mailto" || scheme == "urn") && !rest.isEmpty
            }
            // The host: after any `userinfo@`, before any `:port`, `/`, `?` or `#`.
            let authority = rest.dropFirst(2).prefix { $0 != 0x2F && $0 != 0x3F && $0 != 0x23 }
            let host = authority.lastIndex(of: UInt8(ascii: "@")).map { authority[($0 + 1)...] } ?? authority
            return host.first.map { $0 != UInt8(ascii: ":") } ?? false
        }
    }

    static func checkFormat(_ format: String, _ string: String, path: @autoclosure () -> String) throws(SchemaError) {
        switch format {
        case "date":
            guard string.utf8.count == 10, Timestamp.parse(string) != nil else {
                throw SchemaError("\(path()) must be a date as YYYY-MM-DD, not '\(string)'")
            }
        case "date-time":
            guard string.utf8.count > 10, Timestamp.parse(string) != nil else {
                throw SchemaError("\(path()) must be an ISO 8601 date-time, not '\(string)'")
            }
        case "uri":
            guard isAbsoluteURL(string) else { throw SchemaError("\(path()) must be an absolute URL, not '\(string)'") }
        case "uuid":
            guard UUID(uuidString: string) != nil else { throw SchemaError("\(path()) must be a UUID, not '\(string)'") }
        default:
            break
        }
    }
}

private extension UInt8 {
    var isASCIILetter: Bool { (0x41...0x5A).contains(self) || (0x61...0x7A).contains(self) }
    var isASCIIDigit: Bool { (0x30...0x39).contains(self) }
}
