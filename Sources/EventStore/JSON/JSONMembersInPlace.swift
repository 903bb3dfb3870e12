import Glibc

/// What a keyed container reads its members from: an object parsed already (`JSONObject`),
/// or an object still in the bytes it is stored as (`JSONMembersInPlace`).
protocol JSONMembers {
    /// The member's value; nil if there is none.
    func member(_ name: String) throws -> JSONValue?
    /// Every member's name.
    func names() throws -> [String]
    /// The whole object, parsed: for a type that reads it other than by key.
    func object() throws -> JSONObject
}

extension Dictionary: JSONMembers where Key == String, Value == JSONValue {
    func member(_ name: String) -> JSONValue? { self[name] }
    func names() -> [String] { Array(keys) }
    func object() -> JSONObject { self }
}

/// The members of JSON objects found where they are stored, each value parsed only when it is
/// read: how a typed read decodes a record straight from the log's bytes (`RecordCoder`), without
/// first building a `JSONObject` of all its fields, hashing every key, to look four of them up.
/// Objects are layered: a later one's member hides an earlier one's, as folding events does.
///
/// It points into the bytes it was given, so it is valid only as long as they are (an LMDB value:
/// inside its transaction). Not `Sendable`, and never kept.
struct JSONMembersInPlace: JSONMembers {
    private var members: [(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)] = []

    /// Adds the members of the JSON object `bytes`. Returns false, adding nothing, when a key is
    /// escaped or empty: such a key does not compare by its bytes, and the caller reads the object
    /// the usual way. Checks the structure as far as finding each value's end needs; after a throw,
    /// the members are not to be read.
    mutating func layer(_ bytes: UnsafeRawBufferPointer) throws(JSONParseError) -> Bool {
        let start = members.count
        if members.capacity == 0 { members.reserveCapacity(16) }
        var plain = true
        var parser = JSONParser(bytes: bytes)
        parser.skipWhitespace()
        do {
            try JSONParser.members(of: &parser, { (key: UnsafeRawBufferPointer, parser: inout JSONParser) in
                // An escaped key comes back empty (`JSONParser.rawKey`).
                plain = plain && !key.isEmpty
                let valueStart = parser.offset
                try parser.skipValue(startingAt: valueStart)
                members.append((key, UnsafeRawBufferPointer(rebasing: bytes[valueStart..<parser.offset])))
            })
        } catch let error as JSONParseError {
            throw error
        } catch {
            throw JSONParseError(offset: parser.offset, reason: "\(error)")
        }
        parser.skipWhitespace()
        guard parser.offset == bytes.count else { throw parser.error("unexpected text after the value") }
        guard plain else {
            members.removeSubrange(start...)
            return false
        }
        return true
    }

    func member(_ name: String) throws -> JSONValue? {
        guard let value = bytes(of: name) else { return nil }
        return try JSONParser.parse(value)
    }

    /// Every member's name, once.
    func names() -> [String] {
        var names: [String] = []
        for (key, _) in members {
            let name = String(decoding: key, as: UTF8.self)
            if !names.contains(name) { names.append(name) }
        }
        return names
    }

    /// All the members, parsed: for a caller that needs the whole object after all.
    func object() throws -> JSONObject {
        var object: JSONObject = [:]
        for (key, value) in members { object[String(decoding: key, as: UTF8.self)] = try JSONParser.parse(value) }
        return object
    }

    /// The value's bytes of the last layer that has the member.
    private func bytes(of name: String) -> UnsafeRawBufferPointer? {
        var name = name
        return name.withUTF8 { name in
            let count = name.count
            guard let name = name.baseAddress else { return nil }   // empty: no member is (see `layer`)
            for member in members.reversed() where member.key.count == count {
                if let key = member.key.baseAddress, memcmp(key, name, count) == 0 { return member.value }
            }
            return nil
        }
    }
}
