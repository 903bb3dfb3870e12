/// An error in JSON text, with the byte offset where it was found.
public struct JSONParseError: Error, Sendable, CustomStringConvertible {
    public let offset: Int
    public let reason: String
    /// The text is valid JSON but an object has a key twice: a reader of many
    /// values (a server's page) can pass over this one and read the others.
    public var isDuplicateKey = false
    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}

/// A strict RFC 8259 parser over UTF-8 bytes.
///
/// Strings without escapes are decoded straight from the buffer, which is
/// what almost every record field is. Numbers keep their literal
/// (`JSONNumber`). A key given twice in one object is an error (RFC 8259
/// leaves its meaning open; evsync would have to pick one value silently).
/// Nesting is limited so that hostile input cannot exhaust the stack: to a
/// record field's limit (`JSONValue.maxFieldNesting`) plus the levels of the
/// envelopes fields travel in (an event, a view entry, a server's page or
/// batch response), so whatever a field may hold can always be read back.
/// Its state is internal, not private, for its two extensions:
/// re-encoding (JSONParser+Canonical.swift) and skipping (JSONParser+Skip.swift).
public struct JSONParser: ~Copyable {
    let bytes: UnsafeRawBufferPointer
    var index = 0
    var depth = 0
    /// The deepest nesting read: a field's limit plus envelope levels.
    static let maxDepth = JSONValue.maxFieldNesting + envelopeLevels
    /// The most levels an envelope puts around a field's value (a Kinto batch
    /// response has 5: `{"responses":[{"body":{"data":{field: value}}}]}`).
    static let envelopeLevels = 8
    /// `writeCanonicalObject`'s buffers (JSONParser+Canonical.swift), kept from one object to the next (a nested object makes its own).
    var canonicalValues: [UInt8] = []
    var canonicalMembers: [(key: UnsafeRawBufferPointer, value: Range<Int>)] = []

    /// Parses one JSON document that fills the whole buffer (white space around it allowed).
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(JSONParseError) -> JSONValue {
        var parser = JSONParser(bytes: bytes)
        parser.skipWhitespace()
        let value = try parser.parseValue()
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.error("unexpected text after the value") }
        return value
    }

    public static func parse(_ bytes: [UInt8]) throws(JSONParseError) -> JSONValue {
        do {
            return try bytes.withUnsafeBytes { buffer in try parse(buffer) }
        } catch let error as JSONParseError {
            throw error
        } catch {
            throw JSONParseError(offset: 0, reason: "\(error)")
        }
    }

    public static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    /// Parses one object without building it: `member` is called with each
    /// key and the parser positioned at the value, which it must read with
    /// `value()`. For fixed shapes (the event envelope) on hot paths.
    package static func parseObject(_ bytes: UnsafeRawBufferPointer, member: (UnsafeRawBufferPointer, inout JSONParser) throws -> Void) throws {
        var parser = JSONParser(bytes: bytes)
        parser.skipWhitespace()
        try members(of: &parser, member)
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.error("unexpected text after the value") }
    }

    /// Walks one object's members, in order, until `member` returns false,
    /// reading nothing after that: for one member near the start of a fixed
    /// shape (an event's `entity`), where parsing the rest would be waste.
    /// `member` must read the value of every member it continues past.
    package static func scanObject(_ bytes: UnsafeRawBufferPointer, member: (UnsafeRawBufferPointer, inout JSONParser) throws -> Bool) throws {
        var parser = JSONParser(bytes: bytes)
        parser.skipWhitespace()
        try members(of: &parser, while: member)
    }

    /// Reads the value at the current position (inside `parseObject`'s `member`).
    package mutating func value() throws(JSONParseError) -> JSONValue {
        try parseValue()
    }

    /// Reads the value at the current position, with its bytes as they stand.
    mutating func valueAndBytes() throws(JSONParseError) -> (JSONValue, UnsafeRawBufferPointer) {
        let start = index
        let value = try parseValue()
        return (value, UnsafeRawBufferPointer(rebasing: bytes[start..<index]))
    }

    /// A key without escapes, as bytes (keys of the event envelope never need escapes).
    private mutating func rawKey() throws(JSONParseError) -> UnsafeRawBufferPointer {
        let start = index + 1
        var end = start
        while end < bytes.count, bytes[end] != UInt8(ascii: "\""), bytes[end] != UInt8(ascii: "\\") { end += 1 }
        if end < bytes.count, bytes[end] == UInt8(ascii: "\"") {
            index = end + 1
            return UnsafeRawBufferPointer(rebasing: bytes[start..<end])
        }
        // An escaped key is valid JSON but matches no envelope key: hand back something that matches nothing.
        _ = try parseString()
        return UnsafeRawBufferPointer(rebasing: bytes[start..<start])
    }

    init(bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    func error(_ reason: String) -> JSONParseError {
        JSONParseError(offset: index, reason: reason)
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    mutating func parseValue() throws(JSONParseError) -> JSONValue {
        guard index < bytes.count else { throw error("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return .object(try parseObject())
        case UInt8(ascii: "["): return .array(try parseArray())
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(JSONNumber(checked: try parseNumber()))
        default: throw error("unexpected character '\(Unicode.Scalar(bytes[index]))'")
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw error("unexpected end of input") }
        let start = literal.utf8Start
        for offset in 0..<count where bytes[index + offset] != start[offset] {
            throw error("invalid literal")
        }
        index += count
    }

    mutating func enter() throws(JSONParseError) {
        depth += 1
        if depth > Self.maxDepth {
            throw error("nesting deeper than \(Self.maxDepth) levels (a field's value may nest \(JSONValue.maxFieldNesting))")
        }
    }

    mutating func parseObject() throws(JSONParseError) -> JSONObject {
        try enter()
        defer { depth -= 1 }
        index += 1
        // Records have a handful of fields: one allocation instead of growing 1, 2, 4, 8.
        var object = JSONObject(minimumCapacity: 8)
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return object
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a string key") }
            let keyOffset = index
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
            index += 1
            skipWhitespace()
            if object.updateValue(try parseValue(), forKey: key) != nil {
                throw JSONParseError(offset: keyOffset, reason: "duplicate key '\(key)'", isDuplicateKey: true)
            }
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "}") { index += 1; return object }
            throw error("expected ',' or '}'")
        }
    }

    private mutating func parseArray() throws(JSONParseError) -> [JSONValue] {
        try enter()
        defer { depth -= 1 }
        index += 1
        var array: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return array
        }
        while true {
            skipWhitespace()
            array.append(try parseValue())
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "]") { index += 1; return array }
            throw error("expected ',' or ']'")
        }
    }

    mutating func parseString() throws(JSONParseError) -> String {
        index += 1
        let start = index
        // Fast path: no escapes, the bytes are the string.
        var high: UInt8 = 0   // any byte's top bit: ASCII needs no validation, and most text is ASCII
        index = Self.plainRunEnd(in: bytes, from: index, control: true, high: &high)
        if index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeRawBufferPointer(rebasing: bytes[start..<index])
                index += 1
                return high < 0x80 ? String(decoding: slice, as: UTF8.self) : try decodeUTF8(slice, at: start)
            }
            if byte < 0x20 { throw error("control character in string") }
        }
        var scratch = Array(UnsafeRawBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                guard let string = String(validating: scratch, as: UTF8.self) else {
                    throw JSONParseError(offset: start, reason: "string is not valid UTF-8")
                }
                return string
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw error("unexpected end of input") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): scratch.append(0x22)
                case UInt8(ascii: "\\"): scratch.append(0x5C)
                case UInt8(ascii: "/"): scratch.append(0x2F)
                case UInt8(ascii: "b"): scratch.append(0x08)
                case UInt8(ascii: "f"): scratch.append(0x0C)
                case UInt8(ascii: "n"): scratch.append(0x0A)
                case UInt8(ascii: "r"): scratch.append(0x0D)
                case UInt8(ascii: "t"): scratch.append(0x09)
                case UInt8(ascii: "u"): try appendUnicodeEscape(to: &scratch)
                default: throw error("invalid escape")
                }
            default:
                if byte < 0x20 { throw error("control character in string") }
                scratch.append(byte)
                index += 1
            }
        }
        throw error("unterminated string")
    }

    /// Text that is not all ASCII, validated.
    private func decodeUTF8(_ buffer: UnsafeRawBufferPointer, at offset: Int) throws(JSONParseError) -> String {
        guard let string = String(validating: buffer.bindMemory(to: UInt8.self), as: UTF8.self) else {
            throw JSONParseError(offset: offset, reason: "string is not valid UTF-8")
        }
        return string
    }

    private mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("unexpected end of input") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error("invalid \\u escape")
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    private mutating func appendUnicodeEscape(to scratch: inout [UInt8]) throws(JSONParseError) {
        var code = try parseHex4()
        if (0xD800..<0xDC00).contains(code) {
            guard index + 2 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                throw error("unpaired surrogate")
            }
            index += 2
            let low = try parseHex4()
            guard (0xDC00..<0xE000).contains(low) else { throw error("unpaired surrogate") }
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00..<0xE000).contains(code) {
            throw error("unpaired surrogate")
        }
        guard let scalar = Unicode.Scalar(code) else { throw error("invalid code point") }
        scratch.append(contentsOf: String(Character(scalar)).utf8)
    }

    /// Reads a number literal, checked against JSON's grammar, and returns its text.
    private mutating func parseNumber() throws(JSONParseError) -> String {
        guard let length = JSONNumber.literalLength(in: bytes, from: index) else {
            throw error("invalid number")
        }
        let text = UnsafeRawBufferPointer(rebasing: bytes[index..<(index + length)])
        index += length
        // Up to 15 bytes, a String holds them inline: most numbers cost no allocation.
        return String(decoding: text, as: UTF8.self)
    }
}

// MARK: Reading members and elements in place

extension UnsafeRawBufferPointer {
    /// Whether these bytes spell `name`: how keys read by `JSONParser.parseObject` are matched.
    @inline(__always)
    package func equals(_ name: StaticString) -> Bool {
        guard count == name.utf8CodeUnitCount else { return false }
        for offset in 0..<count where self[offset] != name.utf8Start[offset] { return false }
        return true
    }
}

extension JSONParser {
    /// Calls `body` with the parser at each element of the array at the current position; `body` must read the element.
    package mutating func forEachElement(_ body: (inout JSONParser) throws -> Void) throws {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "[") else { throw error("expected an array") }
        try enter()
        defer { depth -= 1 }
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return
        }
        while true {
            skipWhitespace()
            try body(&self)
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "]") { index += 1; return }
            throw error("expected ',' or ']'")
        }
    }

    /// Reads the value at the current position and, when it is a string,
    /// appends its UTF-8 to `buffer` (without building a `String` when it
    /// has no escapes). Returns whether it was a string.
    package mutating func string(appendingTo buffer: inout [UInt8]) throws(JSONParseError) -> Bool {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
            _ = try parseValue()
            return false
        }
        var end = index + 1
        while end < bytes.count, bytes[end] >= 0x20, bytes[end] < 0x80, bytes[end] != UInt8(ascii: "\""), bytes[end] != UInt8(ascii: "\\") {
            end += 1
        }
        if end < bytes.count, bytes[end] == UInt8(ascii: "\"") {
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[index + 1..<end]))
            index = end + 1
        } else {
            buffer.append(contentsOf: try parseString().utf8)
        }
        return true
    }

    /// Walks the object at `parser`'s position, calling `member` with each
    /// raw key (empty if escaped) and the parser at its value.
    static func members(of parser: inout JSONParser,
                        _ member: (UnsafeRawBufferPointer, inout JSONParser) throws -> Void) throws {
        try members(of: &parser, while: { key, parser in
            try member(key, &parser)
            return true
        })
    }

    /// Walks the object at `parser`'s position as above until `member`
    /// returns false, leaving the rest of it unread.
    static func members(of parser: inout JSONParser,
                        while member: (UnsafeRawBufferPointer, inout JSONParser) throws -> Bool) throws {
        guard parser.index < parser.bytes.count, parser.bytes[parser.index] == UInt8(ascii: "{") else {
            throw parser.error("expected an object")
        }
        try parser.enter()
        defer { parser.depth -= 1 }
        parser.index += 1
        parser.skipWhitespace()
        if parser.index < parser.bytes.count, parser.bytes[parser.index] == UInt8(ascii: "}") {
            parser.index += 1
            return
        }
        while true {
            parser.skipWhitespace()
            guard parser.index < parser.bytes.count, parser.bytes[parser.index] == UInt8(ascii: "\"") else {
                throw parser.error("expected a string key")
            }
            let key = try parser.rawKey()
            parser.skipWhitespace()
            guard parser.index < parser.bytes.count, parser.bytes[parser.index] == UInt8(ascii: ":") else {
                throw parser.error("expected ':'")
            }
            parser.index += 1
            parser.skipWhitespace()
            guard try member(key, &parser) else { return }
            parser.skipWhitespace()
            guard parser.index < parser.bytes.count else { throw parser.error("unexpected end of input") }
            if parser.bytes[parser.index] == UInt8(ascii: ",") { parser.index += 1; continue }
            if parser.bytes[parser.index] == UInt8(ascii: "}") { parser.index += 1; return }
            throw parser.error("expected ',' or '}'")
        }
    }
}
