/// Re-encoding without building values: a pull's record fields (`writeCanonical`)
/// and an import's lines (`writeCanonicalObject`, whose `check` is the schema's)
/// are written as `JSONWriter` would write them once parsed, copying the bytes
/// already in that form.
extension JSONParser {
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
}
