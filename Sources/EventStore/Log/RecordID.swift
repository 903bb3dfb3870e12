import Foundation
import Synchronization

/// Record ids: the store's rule, which the CLI contract documents. Ids are
/// shared with servers, so they fit in a URL path segment untouched: a letter
/// or digit, then letters, digits, `_` or `-`; at most 128 characters for an
/// id made here (`isValid`). A server may hand out longer ones (Kinto sets no
/// limit): the store holds those up to `maxServerLength` (`isValidServerID`),
/// under a hashed key in the views (`Keys`).
public enum RecordID {
    /// The longest id made here (`add --id`, `import`).
    public static let maxLength = 128
    /// The longest id the store holds from a server.
    public static let maxServerLength = 65_536

    public static func isValid(_ id: String) -> Bool {
        var id = id
        return id.withUTF8 { isValid(UnsafeRawBufferPointer($0)) }
    }

    /// Whether `id` is one the store holds from a server: the same characters, up to `maxServerLength`.
    public static func isValidServerID(_ id: String) -> Bool {
        var id = id
        return id.withUTF8 { isValid(UnsafeRawBufferPointer($0), maxLength: maxServerLength) }
    }

    /// Whether `bytes` (UTF-8) spell a valid id of at most `maxLength` bytes.
    package static func isValid(_ bytes: UnsafeRawBufferPointer, maxLength: Int = maxLength) -> Bool {
        guard let first = bytes.first, bytes.count <= maxLength, isAlphanumeric(first) else { return false }
        return idBytes.withUnsafeBufferPointer { table in
            guard let table = table.baseAddress else { return false }
            return bytes.allSatisfy { table[Int($0)] }
        }
    }

    /// Whether an id may hold each byte: a letter, a digit, '_' or '-'. A table, as every read and write by id
    /// checks its id: a lookup a byte, about half the instructions a bit set's shifts took.
    private static let idBytes: [Bool] = (0...255).map { byte in
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x5F || byte == 0x2D
    }

    /// A new client-side id: a random (version 4) UUID, lower-case.
    public static func generate() -> String {
        UUIDv4.next()
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (byte | 0x20) &- UInt8(ascii: "a") < 26 || byte &- UInt8(ascii: "0") < 10
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
    /// The id as `appendID` spells it.
    static func record(entity: String, id: String) -> [UInt8] {
        withRecordKey(entity: entity, id: id) { Array($0) }
    }

    /// `record(entity:id:)`'s bytes, lent to `body`: built in one pass on the stack for an ASCII name and an id kept
    /// as it is, as a read by id needs them only for its lookup (an array of them, grown part by part, was 4% of
    /// its instructions).
    static func withRecordKey<T>(entity: String, id: String, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        var (nameText, idText) = (entity, id)
        return try nameText.withUTF8 { name in
            try idText.withUTF8 { idBytes in
                guard idBytes.count <= RecordID.maxLength, !name.contains(where: { $0 >= 0x80 }) else {
                    return try appendingParts(entity: entity, id: id).withUnsafeBytes(body)
                }
                return try withUnsafeTemporaryAllocation(byteCount: name.count + 1 + idBytes.count, alignment: 1) { key in
                    for (index, byte) in name.enumerated() { key[index] = byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte }
                    key[name.count] = 0
                    UnsafeMutableRawBufferPointer(rebasing: key[(name.count + 1)...]).copyMemory(from: UnsafeRawBufferPointer(idBytes))
                    return try body(UnsafeRawBufferPointer(key))
                }
            }
        }
    }

    /// `record(entity:id:)` part by part: for a name that is not ASCII, or an id that is hashed.
    private static func appendingParts(entity: String, id: String) -> [UInt8] {
        var key: [UInt8] = []
        key.reserveCapacity(entity.utf8.count + 1 + min(id.utf8.count, 65))
        appendLowercased(entity, to: &key)
        key.append(0)
        appendID(id, to: &key)
        return key
    }

    /// An id as the views' keys spell it: itself up to `RecordID.maxLength`
    /// bytes (so every key written before longer ids were held is unchanged);
    /// a longer id (a server's) as `#` and its SHA-256 in hex, 65 bytes, which
    /// fits LMDB's 511-byte keys and which no id spells (ids start with a letter
    /// or digit). The full id is in the record's events (`EventLog.recordID`).
    static func appendID(_ id: String, to key: inout [UInt8]) {
        if id.utf8.count <= RecordID.maxLength {
            key.append(contentsOf: id.utf8)
        } else {
            key.append(hashedIDMark)
            key.append(contentsOf: SHA256.hex(id.utf8).utf8)
        }
    }

    /// The first byte of a hashed id in a key.
    static let hashedIDMark = UInt8(ascii: "#")

    static func entityPrefix(_ entity: String) -> [UInt8] {
        var key: [UInt8] = []
        appendLowercased(entity, to: &key)
        key.append(0)
        return key
    }

    /// Appends the entity's name lower-cased, as UTF-8; by hand for ASCII,
    /// which names are: keys are built for every record written.
    private static func appendLowercased(_ entity: String, to key: inout [UInt8]) {
        var entity = entity
        let isASCII = entity.withUTF8 { utf8 in
            guard !utf8.contains(where: { $0 >= 0x80 }) else { return false }
            let start = key.count
            key.append(contentsOf: utf8)
            for index in start..<key.count where key[index] &- UInt8(ascii: "A") < 26 { key[index] |= 0x20 }
            return true
        }
        if !isASCII { key.append(contentsOf: entity.lowercased().utf8) }
    }

    /// History key: `id\0entity`, so `history <id>` finds every entity's record of that id by prefix.
    static func history(entity: String, id: String) -> [UInt8] {
        var key: [UInt8] = []
        key.reserveCapacity(min(id.utf8.count, 65) + 1 + entity.utf8.count)
        appendID(id, to: &key)
        key.append(0)
        appendLowercased(entity, to: &key)
        return key
    }

    /// Appends `record(entity:id:)` and then `history(entity:id:)` for an id
    /// made here (`RecordID.isValid`: never hashed), from its UTF-8 bytes;
    /// returns where each went. How `import` keys each plain line.
    static func appendRecordAndHistory(entity: String, localID id: UnsafeRawBufferPointer,
                                       to bytes: inout [UInt8]) -> (record: Range<Int>, history: Range<Int>) {
        assert(id.count <= RecordID.maxLength, "a local id is never hashed")
        let recordStart = bytes.count
        appendLowercased(entity, to: &bytes)
        bytes.append(0)
        bytes.append(contentsOf: id)
        let historyStart = bytes.count
        bytes.append(contentsOf: id)
        bytes.append(0)
        appendLowercased(entity, to: &bytes)
        return (recordStart..<historyStart, historyStart..<bytes.count)
    }

    static func historyPrefix(id: String) -> [UInt8] {
        var key: [UInt8] = []
        appendID(id, to: &key)
        key.append(0)
        return key
    }

    /// The indices of `keys` (ranges of `bytes`) in byte order, the order of
    /// keys in the databases; equal keys in index order.
    static func sortedIndices(of keys: [Range<Int>], in bytes: UnsafeRawBufferPointer) -> [Int] {
        // Most comparisons are settled by the keys' first 16 bytes read as two
        // integers (a view key's entity prefix is common to all, the id is not):
        // far cheaper than comparing bytes one by one.
        func word(_ key: Range<Int>, _ offset: Int) -> UInt64 {
            var value: UInt64 = 0
            for position in key.lowerBound + offset..<key.lowerBound + offset + 8 {
                value = value << 8 | UInt64(position < key.upperBound ? bytes[position] : 0)
            }
            return value
        }
        var entries = keys.indices.map { (first: word(keys[$0], 0), second: word(keys[$0], 8), index: $0) }
        entries.sort { a, b in
            if (a.first, a.second) != (b.first, b.second) { return (a.first, a.second) < (b.first, b.second) }
            let (left, right) = (bytes[keys[a.index]], bytes[keys[b.index]])
            if !left.elementsEqual(right) { return left.lexicographicallyPrecedes(right) }
            return a.index < b.index
        }
        return entries.map(\.index)
    }

    /// Splits a `a\0b` key into its two parts.
    static func split(_ key: UnsafeRawBufferPointer) -> (String, String)? {
        guard let zero = key.firstIndex(of: 0) else { return nil }
        return (String(decoding: UnsafeRawBufferPointer(rebasing: key[..<zero]), as: UTF8.self),
                String(decoding: UnsafeRawBufferPointer(rebasing: key[(zero + 1)...]), as: UTF8.self))
    }
}

/// Random UUIDs, fast: 128 bits from the system's generator, spelled by hand.
/// (Foundation's `UUID().uuidString` formats through `sprintf`, and asking
/// the kernel for 16 bytes at a time is a system call per UUID: both showed
/// up on import profiles, where every record takes one or two.)
enum UUIDv4 {
    /// Random bits drawn from the kernel 4 KiB at a time.
    private struct Pool {
        var words = [UInt64](repeating: 0, count: 512)
        var used = 512

        mutating func next() -> UInt64 {
            if used == words.count {
                // glibc's arc4random_buf: the kernel's getrandom(2), in one call for the whole pool.
                words.withUnsafeMutableBytes { bytes in
                    if let base = bytes.baseAddress { arc4random_buf(base, bytes.count) }
                }
                used = 0
            }
            used += 1
            return words[used - 1]
        }
    }

    private static let pool = Mutex(Pool())

    /// A new UUID's 128 bits, as two big-endian halves: its 16 bytes, for
    /// writers that store them (`EventCoding`) without spelling it out.
    static func nextBits() -> (high: UInt64, low: UInt64) {
        let (high, low) = pool.withLock { ($0.next(), $0.next()) }
        return ((high & ~0xF000) | 0x4000,  // version 4
                (low & ~(0xC << 60)) | (0x8 << 60))  // variant 10
    }

    static func next() -> String {
        let (high, low) = nextBits()
        return text(high: high, low: low)
    }

    /// The UUID of these bits, spelt `8-4-4-4-12` in lower-case hex. Eight digits at a time (`hexDigits`): a type
    /// whose `id` defaults to a new one, as the README's does, makes one for every record decoded, then replaces it.
    static func text(high: UInt64, low: UInt64) -> String {
        String(unsafeUninitializedCapacity: 36) { buffer in
            guard let base = buffer.baseAddress else { return 0 }
            let text = UnsafeMutableRawPointer(base)
            func put(_ digits: UInt64, at offset: Int) { text.storeBytes(of: digits.littleEndian, toByteOffset: offset, as: UInt64.self) }
            func putHalves(_ digits: UInt64, at offset: Int) {   // four digits, a dash, four digits
                text.storeBytes(of: UInt32(truncatingIfNeeded: digits).littleEndian, toByteOffset: offset, as: UInt32.self)
                text.storeBytes(of: UInt8(ascii: "-"), toByteOffset: offset + 4, as: UInt8.self)
                text.storeBytes(of: UInt32(truncatingIfNeeded: digits >> 32).littleEndian, toByteOffset: offset + 5, as: UInt32.self)
            }
            put(hexDigits(UInt32(truncatingIfNeeded: high >> 32)), at: 0)
            text.storeBytes(of: UInt8(ascii: "-"), toByteOffset: 8, as: UInt8.self)
            putHalves(hexDigits(UInt32(truncatingIfNeeded: high)), at: 9)
            text.storeBytes(of: UInt8(ascii: "-"), toByteOffset: 18, as: UInt8.self)
            putHalves(hexDigits(UInt32(truncatingIfNeeded: low >> 32)), at: 19)
            put(hexDigits(UInt32(truncatingIfNeeded: low)), at: 28)
            return 36
        }
    }

    /// The eight hex digits of `value`, most significant first, as the bytes of a `UInt64` from its lowest.
    private static func hexDigits(_ value: UInt32) -> UInt64 {
        // Each nibble to a byte of its own (nibble i in byte i), then the bytes reversed.
        var nibbles = UInt64(value)
        nibbles = (nibbles | nibbles << 16) & 0x0000_FFFF_0000_FFFF
        nibbles = (nibbles | nibbles << 8) & 0x00FF_00FF_00FF_00FF
        nibbles = ((nibbles | nibbles << 4) & 0x0F0F_0F0F_0F0F_0F0F).byteSwapped
        // '0' + n, and 39 more for n ≥ 10 ('a' is '0' + 10 + 39): n + 6 reaches 16 exactly then.
        let letters = ((nibbles &+ 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101
        return nibbles &+ 0x3030_3030_3030_3030 &+ letters &* 39
    }
}
