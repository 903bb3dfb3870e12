import Foundation

/// How the `index-entries` view spells its keys: `entity\0field\0` then the value; the key's values (sorted
/// duplicates) are the key parts of the records that hold it (their ids as `Keys.appendID` spells them).
/// A count of one value's records is then LMDB's count of the key's values, read without walking them.
///
/// Values sort as `SortKey.compare` orders them, so a range of keys is a range of values:
///
/// | tag | values | then |
/// |---|---|---|
/// | `0x10` | numbers | the `Double`, 8 bytes, sign-flipped big-endian (so byte order is numeric order) |
/// | `0x20` | strings | their NFC UTF-8 (Swift's `String` order), escaped, then a terminator |
/// | `0x30` | booleans and objects | their JSON text, escaped, then a terminator |
///
/// Escaping writes a 0 byte as `00 FF`; the terminator is `00 00`, or `00 01` for a value cut at
/// `maxValueBytes` (such values share a key with every value of the same first bytes, and a query
/// reads them to tell them apart). An array is indexed under each of its elements; null and a missing
/// field are not indexed (no condition an index answers holds for them).
enum IndexKeys {
    static let number: UInt8 = 0x10
    static let string: UInt8 = 0x20
    static let other: UInt8 = 0x30
    /// The longest value kept whole: with the longest entity name, indexed field name and id, a key fits LMDB's 511 bytes.
    static let maxValueBytes = 100

    /// `entity\0field\0`: where one field's index of one entity starts.
    static func prefix(entity: String, field: String) -> [UInt8] {
        var key = Keys.entityPrefix(entity)
        key.append(contentsOf: field.utf8)
        key.append(0)
        return key
    }

    /// The encoded values `value` is indexed under: none for nil and null, one per element of an array.
    static func values(of value: JSONValue?) -> Set<[UInt8]> {
        var values: Set<[UInt8]> = []
        func add(_ value: JSONValue) {
            switch value {
            case .null: break
            case .array(let elements): elements.forEach(add)
            default: values.insert(encode(value))
            }
        }
        value.map(add)
        return values
    }

    /// One value's bytes (not an array).
    static func encode(_ value: JSONValue) -> [UInt8] {
        switch value {
        case .number(let number): encode(number: number.doubleValue)
        case .string(let text): encode(text: text, tag: string)
        default: encode(text: JSONWriter.string(value), tag: other)
        }
    }

    static func encode(number: Double) -> [UInt8] {
        let bits = (number == 0 ? 0 : number).bitPattern   // -0 is 0
        let ordered = bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
        return [Self.number] + withUnsafeBytes(of: ordered.bigEndian, Array.init)
    }

    static func encode(text: String, tag: UInt8) -> [UInt8] {
        let utf8 = text.utf8.allSatisfy { $0 < 0x80 } ? Array(text.utf8) : Array(text.precomposedStringWithCanonicalMapping.utf8)
        var bytes = [tag]
        bytes.reserveCapacity(min(utf8.count, maxValueBytes) + 3)
        for byte in utf8.prefix(maxValueBytes) {
            bytes.append(byte)
            if byte == 0 { bytes.append(0xFF) }
        }
        bytes += [0, utf8.count > maxValueBytes ? 1 : 0]
        return bytes
    }

    /// Whether an encoded value was cut (`00 01`).
    static func isCut(_ value: some BidirectionalCollection<UInt8>) -> Bool {
        value.count > 2 && value.first != number && value.last == 1
    }

    /// A range of encoded values, `lower` included, `upper` not; nil bounds are the tag's ends.
    struct ValueRange: Equatable {
        var lower: [UInt8]
        var upper: [UInt8]
    }

    /// The values in both lists of ranges (each in key order, not overlapping): what two conditions on one field allow.
    static func intersection(_ a: [ValueRange], _ b: [ValueRange]) -> [ValueRange] {
        var ranges: [ValueRange] = []
        for x in a {
            for y in b {
                let lower = x.lower.lexicographicallyPrecedes(y.lower) ? y.lower : x.lower
                let upper = x.upper.lexicographicallyPrecedes(y.upper) ? x.upper : y.upper
                if lower.lexicographicallyPrecedes(upper) { ranges.append(ValueRange(lower: lower, upper: upper)) }
            }
        }
        return ranges.sorted { $0.lower.lexicographicallyPrecedes($1.lower) }
    }

    /// The ranges of encoded values that may satisfy `condition` (one of `= < <= > >=`), in key order; the
    /// values there satisfy it, but for cut ones, which the caller checks. Empty for `!=` and contains.
    static func ranges(for condition: FieldCondition) -> [ValueRange] {
        let op = condition.op
        guard op != .notEqual, op != .contains else { return [] }
        // A key's bytes after its value (the id) are all below 0xFF: `value + [0xFF]` is past every key of that value.
        func ordered(_ tag: UInt8, _ value: [UInt8]) -> ValueRange? {
            let (start, end, after) = ([tag], [tag + 1], value + [0xFF])
            // A cut operand shares its key with values it is below and above: they are in the range, and checked.
            let cut = isCut(value)
            switch op {
            case .equal: return ValueRange(lower: value, upper: after)
            case .less: return ValueRange(lower: start, upper: cut ? after : value)
            case .atMost: return ValueRange(lower: start, upper: after)
            case .greater: return ValueRange(lower: cut ? value : after, upper: end)
            case .atLeast: return ValueRange(lower: value, upper: end)
            case .notEqual, .contains: return nil
            }
        }
        var ranges: [ValueRange] = []
        if let number = condition.operandNumber, let range = ordered(Self.number, encode(number: number)) { ranges.append(range) }
        if let range = ordered(string, encode(text: condition.operand, tag: string)) { ranges.append(range) }
        // Booleans and objects are only equal to an operand or not.
        if op == .equal || op == .atMost || op == .atLeast {
            let value = encode(text: condition.operand, tag: other)
            ranges.append(ValueRange(lower: value, upper: value + [0xFF]))
        }
        return ranges
    }
}
