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
public struct JSONParser: ~Copyable {
    private let bytes: UnsafeRawBufferPointer
    private var index = 0
    private var depth = 0
    /// The deepest nesting read: a field's limit plus envelope levels.
    static let maxDepth = JSONValue.maxFieldNesting + envelopeLevels
    /// The most levels an envelope puts around a field's value (a Kinto batch
    /// response has 5: `{"responses":[{"body":{"data":{field: value}}}]}`).
    static let envelopeLevels = 8
    /// `writeCanonicalObject`'s buffers, kept from one object to the next (a nested object makes its own).
    private var canonicalValues: [UInt8] = []
    private var canonicalMembers: [(key: UnsafeRawBufferPointer, value: Range<Int>)] = []

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

    private init(bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    private func error(_ reason: String) -> JSONParseError {
        JSONParseError(offset: index, reason: reason)
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func parseValue() throws(JSONParseError) -> JSONValue {
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

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw error("unexpected end of input") }
        let start = literal.utf8Start
        for offset in 0..<count where bytes[index + offset] != start[offset] {
            throw error("invalid literal")
        }
        index += count
    }

    private mutating func enter() throws(JSONParseError) {
        depth += 1
        if depth > Self.maxDepth {
            throw error("nesting deeper than \(Self.maxDepth) levels (a field's value may nest \(JSONValue.maxFieldNesting))")
        }
    }

    private mutating func parseObject() throws(JSONParseError) -> JSONObject {
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

    private mutating func parseString() throws(JSONParseError) -> String {
        index += 1
        let start = index
        // Fast path: no escapes, the bytes are the string.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeRawBufferPointer(rebasing: bytes[start..<index])
                index += 1
                return try decodeUTF8(slice, at: start)
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw error("control character in string") }
            index += 1
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

    private func decodeUTF8(_ buffer: UnsafeRawBufferPointer, at offset: Int) throws(JSONParseError) -> String {
        // ASCII needs no validation, and most text is ASCII.
        if !buffer.contains(where: { $0 >= 0x80 }) { return String(decoding: buffer, as: UTF8.self) }
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

// MARK: Re-encoding without building values

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

    /// Writes the value at the current position as `JSONWriter` would write
    /// it once parsed, without building it: bytes already in that form (ASCII
    /// strings without escapes, numbers, literals) are copied.
    /// What a pull does to every field of every record.
    mutating func writeCanonical(to writer: inout JSONWriter) throws(JSONParseError) {
        guard index < bytes.count else { throw error("unexpected end of input") }
        let start = index
        switch bytes[index] {
        case UInt8(ascii: "{"):
            if try !writeCanonicalObject(to: &writer, taking: { _, _ in false }) {
                writer.write(object: try parseObject())
            }
        case UInt8(ascii: "["):
            writer.append(byte: UInt8(ascii: "["))
            var first = true
            do {
                try forEachElement { parser in
                    if !first { writer.append(byte: UInt8(ascii: ",")) }
                    first = false
                    try parser.writeCanonical(to: &writer)
                }
            } catch let error as JSONParseError {
                throw error
            } catch {
                throw self.error("\(error)")
            }
            writer.append(byte: UInt8(ascii: "]"))
        case UInt8(ascii: "\""):
            index += 1
            while index < bytes.count, bytes[index] >= 0x20, bytes[index] < 0x80,
                  bytes[index] != UInt8(ascii: "\""), bytes[index] != UInt8(ascii: "\\") {
                index += 1
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
                index += 1
                writer.append(raw: UnsafeRawBufferPointer(rebasing: bytes[start..<index]))
            } else {
                index = start
                writer.write(string: try parseString())
            }
        case UInt8(ascii: "t"): try expectLiteral("true"); writer.raw("true")
        case UInt8(ascii: "f"): try expectLiteral("false"); writer.raw("false")
        case UInt8(ascii: "n"): try expectLiteral("null"); writer.raw("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            // A number is written as its literal.
            guard let length = JSONNumber.literalLength(in: bytes, from: index) else { throw error("invalid number") }
            index += length
            writer.append(raw: UnsafeRawBufferPointer(rebasing: bytes[start..<index]))
        default:
            throw error("unexpected character '\(Unicode.Scalar(bytes[index]))'")
        }
    }

    /// `writeCanonicalObject`'s working buffers, for a caller that re-encodes
    /// many objects (an import's lines) to keep from one to the next.
    package struct CanonicalScratch {
        fileprivate var values: [UInt8] = []
        fileprivate var members: [(key: UnsafeRawBufferPointer, value: Range<Int>)] = []
        package init() {}
    }

    /// Writes the object that fills `bytes` (white space around it allowed)
    /// in canonical form, as `writeCanonicalObject` does at a parser's
    /// position. Returns false, having written nothing, when `bytes` is not
    /// one object it can write that way (not an object, a key it leaves to
    /// the general way, a member `check` refuses, text after the object).
    package static func writeCanonicalObject(
        _ bytes: UnsafeRawBufferPointer, to writer: inout JSONWriter, scratch: inout CanonicalScratch,
        taking take: (UnsafeRawBufferPointer, inout JSONParser) throws -> Bool,
        checking check: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) -> Bool
    ) throws(JSONParseError) -> Bool {
        var parser = JSONParser(bytes: bytes)
        swap(&parser.canonicalValues, &scratch.values)
        swap(&parser.canonicalMembers, &scratch.members)
        defer {
            swap(&parser.canonicalValues, &scratch.values)
            swap(&parser.canonicalMembers, &scratch.members)
        }
        parser.skipWhitespace()
        guard parser.index < bytes.count, bytes[parser.index] == UInt8(ascii: "{") else { return false }
        let start = writer.bytes.count
        guard try parser.writeCanonicalObject(to: &writer, taking: take, checking: check) else { return false }
        parser.skipWhitespace()
        guard parser.index == bytes.count else {
            writer.bytes.removeSubrange(start...)
            return false
        }
        return true
    }

    /// Writes the object at the current position in canonical form (as
    /// `writeCanonical`), leaving out the members `take` reads itself: it is
    /// called with each key and the parser at the value, and returns true
    /// when it read the value.
    /// `check` sees each member written, in order: its key and its value as written.
    /// - Returns: false, having read and written nothing, when a key is
    ///   escaped or not ASCII, whose order `JSONWriter` decides by Unicode
    ///   rules: the caller then parses the object with `value()`. Likewise
    ///   when `check` refuses a member.
    package mutating func writeCanonicalObject(
        to writer: inout JSONWriter, taking take: (UnsafeRawBufferPointer, inout JSONParser) throws -> Bool,
        checking check: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) -> Bool = { _, _ in true }
    ) throws(JSONParseError) -> Bool {
        let start = index
        var values = JSONWriter(capacity: 0)
        var members: [(key: UnsafeRawBufferPointer, value: Range<Int>)] = []
        swap(&values.bytes, &canonicalValues)
        swap(&members, &canonicalMembers)
        defer {
            values.bytes.removeAll(keepingCapacity: true)
            members.removeAll(keepingCapacity: true)
            swap(&values.bytes, &canonicalValues)
            swap(&members, &canonicalMembers)
        }
        do {
            var plainKeys = true
            try Self.members(of: &self) { key, parser in
                guard plainKeys, !key.isEmpty, !key.contains(where: { $0 >= 0x80 || $0 < 0x20 }) else {
                    plainKeys = false
                    _ = try parser.value()
                    return
                }
                // A member `take` read is kept with no value, so that a key given twice is noticed all the same.
                if try take(key, &parser) {
                    members.append((key, 0..<0))
                    return
                }
                let valueStart = values.bytes.count
                try parser.writeCanonical(to: &values)
                members.append((key, valueStart..<values.bytes.count))
            }
            guard plainKeys else {
                index = start
                return false
            }
        } catch let error as JSONParseError {
            throw error
        } catch {
            throw self.error("\(error)")
        }
        members.sort { a, b in Self.compare(a.key, b.key) < 0 }
        for position in members.indices.dropFirst() where Self.compare(members[position - 1].key, members[position].key) == 0 {
            let key = members[position].key
            let offset = key.baseAddress.flatMap { key in bytes.baseAddress.map { key - $0 - 1 } } ?? 0
            throw JSONParseError(offset: offset,
                                 reason: "duplicate key '\(String(decoding: key, as: UTF8.self))'", isDuplicateKey: true)
        }
        let written = writer.bytes.count
        let checked = values.bytes.withUnsafeBytes { values in
            writer.append(byte: UInt8(ascii: "{"))
            var first = true
            for member in members where !member.value.isEmpty {
                let value = UnsafeRawBufferPointer(rebasing: values[member.value])
                guard check(member.key, value) else { return false }
                if !first { writer.append(byte: UInt8(ascii: ",")) }
                first = false
                // A plain key is its own JSON string.
                writer.append(byte: UInt8(ascii: "\""))
                writer.append(raw: member.key)
                writer.raw("\":")
                writer.append(raw: value)
            }
            writer.append(byte: UInt8(ascii: "}"))
            return true
        }
        guard checked else {
            writer.bytes.removeSubrange(written...)
            index = start
            return false
        }
        return true
    }

    /// Byte order, which is `String` order for ASCII.
    private static func compare(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        for (x, y) in zip(a, b) where x != y { return Int(x) - Int(y) }
        return a.count - b.count
    }

    /// Walks the object at `parser`'s position, calling `member` with each
    /// raw key (empty if escaped) and the parser at its value.
    private static func members(of parser: inout JSONParser,
                                _ member: (UnsafeRawBufferPointer, inout JSONParser) throws -> Void) throws {
        try members(of: &parser, while: { key, parser in
            try member(key, &parser)
            return true
        })
    }

    /// Walks the object at `parser`'s position as above until `member`
    /// returns false, leaving the rest of it unread.
    private static func members(of parser: inout JSONParser,
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

extension JSONParser {
    /// Where the parser stands, in bytes from the start of its buffer.
    package var offset: Int { index }

    /// Moves back to `offset` (a value's start, read from `offset` before)
    /// and steps over that value without building it or limiting its
    /// nesting: one counter, no recursion. It checks only what finding the
    /// value's end needs (strings closed, brackets balanced), so that one
    /// element a stricter read refused can be passed over and its neighbours read.
    /// - Returns: whether the value nests deeper than this parser reads
    ///   (counting the levels it sits in), the one reason valid JSON is refused.
    @discardableResult
    package mutating func skipValue(startingAt offset: Int) throws(JSONParseError) -> Bool {
        index = offset
        var open = 0
        var deepest = 0
        repeat {
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input") }
            switch bytes[index] {
            case UInt8(ascii: "{"), UInt8(ascii: "["): open += 1; deepest = max(deepest, open); index += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                guard open > 0 else { throw error("unexpected '\(Unicode.Scalar(bytes[index]))'") }
                open -= 1; index += 1
            case UInt8(ascii: "\""):
                index += 1
                while index < bytes.count, bytes[index] != UInt8(ascii: "\"") { index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1 }
                guard index < bytes.count else { throw error("unexpected end of input") }
                index += 1
            default:
                // A scalar, or the ',' and ':' between members: up to the next delimiter.
                guard open > 0 || bytes[index] != UInt8(ascii: ",") else { throw error("unexpected ','") }
                index += 1
                while index < bytes.count, ![UInt8(ascii: ","), UInt8(ascii: "]"), UInt8(ascii: "}"), UInt8(ascii: "\""),
                                              UInt8(ascii: "{"), UInt8(ascii: "["), UInt8(ascii: ":")].contains(bytes[index]),
                      bytes[index] > 0x20 { index += 1 }
            }
        } while open > 0
        return depth + deepest > Self.maxDepth
    }
}
