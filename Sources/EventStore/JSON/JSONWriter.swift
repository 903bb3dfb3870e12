/// Writes JSON as compact UTF-8 with object keys sorted and numbers as
/// their literals, so equal values written alike encode to equal bytes.
public struct JSONWriter {
    public internal(set) var bytes: [UInt8] = []

    public init(capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    /// Writes at the end of `bytes`, in place.
    static func append<T>(to bytes: inout [UInt8], _ body: (inout JSONWriter) throws -> T) rethrows -> T {
        var writer = JSONWriter(capacity: 0)
        swap(&writer.bytes, &bytes)
        defer { swap(&writer.bytes, &bytes) }
        return try body(&writer)
    }

    public static func encode(_ value: JSONValue) -> [UInt8] {
        var writer = JSONWriter()
        writer.write(value)
        return writer.bytes
    }

    public static func string(_ value: JSONValue) -> String {
        String(decoding: encode(value), as: UTF8.self)
    }

    public mutating func write(_ value: JSONValue) {
        switch value {
        case .null: raw("null")
        case .bool(let flag): raw(flag ? "true" : "false")
        case .number(let number): write(number: number)
        case .string(let string): write(string: string)
        case .array(let array):
            bytes.append(UInt8(ascii: "["))
            for (position, element) in array.enumerated() {
                if position > 0 { bytes.append(UInt8(ascii: ",")) }
                write(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let object):
            write(object: object)
        }
    }

    public mutating func write(object: JSONObject) {
        bytes.append(UInt8(ascii: "{"))
        var first = true
        // Sorting the members, not the keys: looking each value up again would hash every key twice.
        for (key, value) in object.sorted(by: { $0.key < $1.key }) {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            write(string: key)
            bytes.append(UInt8(ascii: ":"))
            write(value)
        }
        bytes.append(UInt8(ascii: "}"))
    }

    /// Empties the writer, keeping its buffer for what comes next.
    mutating func removeAll() { bytes.removeAll(keepingCapacity: true) }

    /// Appends bytes that are already JSON (or part of it).
    public mutating func raw(_ text: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    public mutating func open(_ bracket: UInt8) { bytes.append(bracket) }

    public mutating func append(byte: UInt8) { bytes.append(byte) }

    /// Appends bytes that are already JSON.
    public mutating func append(bytes more: [UInt8]) { bytes.append(contentsOf: more) }

    /// Appends bytes that are already JSON.
    mutating func append(raw more: UnsafeRawBufferPointer) { bytes.append(contentsOf: more) }

    /// A number is written exactly as its literal.
    public mutating func write(number: JSONNumber) {
        bytes.append(contentsOf: number.text.utf8)
    }

    public mutating func write(integer: Int64) {
        if integer == 0 { bytes.append(UInt8(ascii: "0")); return }
        var magnitude = integer.magnitude
        if integer < 0 { bytes.append(UInt8(ascii: "-")) }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            while magnitude > 0 {
                buffer[count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            }
            for position in stride(from: count - 1, through: 0, by: -1) {
                bytes.append(buffer[position])
            }
        }
    }

    public mutating func write(string: String) {
        bytes.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { utf8 in
            // Most strings need no escaping: copy them whole.
            var needsEscape = false
            for byte in utf8 where byte < 0x20 || byte == 0x22 || byte == 0x5C {
                needsEscape = true
                break
            }
            if needsEscape { writeEscaped(utf8) } else { bytes.append(contentsOf: utf8) }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func writeEscaped(_ utf8: UnsafeBufferPointer<UInt8>) {
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        for byte in utf8 {
            switch byte {
            case 0x22: bytes.append(contentsOf: [0x5C, 0x22])
            case 0x5C: bytes.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case ..<0x20:
                bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                          hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default: bytes.append(byte)
            }
        }
    }
}

extension JSONWriter {
    public static func encodeObject(_ object: JSONObject) -> [UInt8] {
        var writer = JSONWriter(capacity: 64 + object.count * 32)
        writer.write(object: object)
        return writer.bytes
    }
}
