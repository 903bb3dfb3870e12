import Foundation

/// Record ids: shared with the server, so they must fit in a URL path
/// segment untouched. The rule is Kinto's: a letter or digit, then letters,
/// digits, `_` or `-`; at most 128 characters.
public enum RecordID {
    public static func isValid(_ id: String) -> Bool {
        let bytes = id.utf8
        guard let first = bytes.first, bytes.count <= 128, isAlphanumeric(first) else { return false }
        return bytes.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") }
    }

    /// A new client-side id: a lower-case UUID.
    public static func generate() -> String {
        UUID().uuidString.lowercased()
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
}

/// How the store's databases spell their keys.
enum Keys {
    /// Log key: the sequence number as 8 big-endian bytes, so byte order is log order.
    static func sequence(_ seq: UInt64) -> [UInt8] {
        withUnsafeBytes(of: seq.bigEndian, Array.init)
    }

    static func sequence(from bytes: UnsafeRawBufferPointer) -> UInt64 {
        var value: UInt64 = 0
        for byte in bytes.prefix(8) { value = value << 8 | UInt64(byte) }
        return value
    }

    /// View key: `entity\0id`, entity lower-cased, so one entity's rows are contiguous and sorted by id.
    static func record(entity: String, id: String) -> [UInt8] {
        var key = Array(entity.lowercased().utf8)
        key.append(0)
        key.append(contentsOf: id.utf8)
        return key
    }

    static func entityPrefix(_ entity: String) -> [UInt8] {
        var key = Array(entity.lowercased().utf8)
        key.append(0)
        return key
    }

    /// History key: `id\0entity`, so `history <id>` finds every entity's record of that id by prefix.
    static func history(entity: String, id: String) -> [UInt8] {
        var key = Array(id.utf8)
        key.append(0)
        key.append(contentsOf: entity.lowercased().utf8)
        return key
    }

    static func historyPrefix(id: String) -> [UInt8] {
        var key = Array(id.utf8)
        key.append(0)
        return key
    }

    /// Splits a `a\0b` key into its two parts.
    static func split(_ key: UnsafeRawBufferPointer) -> (String, String)? {
        guard let zero = key.firstIndex(of: 0) else { return nil }
        return (String(decoding: UnsafeRawBufferPointer(rebasing: key[..<zero]), as: UTF8.self),
                String(decoding: UnsafeRawBufferPointer(rebasing: key[(zero + 1)...]), as: UTF8.self))
    }
}
