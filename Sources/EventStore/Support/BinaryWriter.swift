/// Writes a binary format front to back, the counterpart of `BinaryReader`: bytes, fixed-width integers
/// (big-endian unless a format already uses the other order: `ByteOrder`), LEB128 varints, counted byte runs and strings.
package struct BinaryWriter {
    package var bytes: [UInt8]

    package init(reservingCapacity capacity: Int = 0) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Runs `body` with a writer that appends to `bytes` (taken over and handed back, not copied): for a buffer
    /// that holds more than one thing written (a batch of events, their keys and view entries).
    package static func appending<R>(to bytes: inout [UInt8], _ body: (inout BinaryWriter) -> R) -> R {
        var writer = BinaryWriter()
        swap(&writer.bytes, &bytes)
        defer { swap(&writer.bytes, &bytes) }
        return body(&writer)
    }

    package var count: Int { bytes.count }

    /// A byte already written, for a field filled in after what follows it (a format's flags).
    package subscript(offset: Int) -> UInt8 {
        get { bytes[offset] }
        set { bytes[offset] = newValue }
    }

    package mutating func byte(_ value: UInt8) {
        bytes.append(value)
    }

    package mutating func u16(_ value: UInt16, _ order: ByteOrder = .bigEndian) { integer(value, order) }
    package mutating func u32(_ value: UInt32, _ order: ByteOrder = .bigEndian) { integer(value, order) }
    package mutating func u64(_ value: UInt64, _ order: ByteOrder = .bigEndian) { integer(value, order) }

    private mutating func integer<T: FixedWidthInteger>(_ value: T, _ order: ByteOrder) {
        withUnsafeBytes(of: order == .bigEndian ? value.bigEndian : value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// Overwrites the four bytes at `offset` (a checksum written once what it covers is).
    package mutating func setU32(_ value: UInt32, at offset: Int, _ order: ByteOrder = .bigEndian) {
        bytes.withUnsafeMutableBytes {
            $0.storeBytes(of: order == .bigEndian ? value.bigEndian : value.littleEndian, toByteOffset: offset, as: UInt32.self)
        }
    }

    /// Unsigned LEB128: seven bits a byte, low first, the high bit set on all but the last.
    package mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    /// A signed number zigzag (`(n << 1) ^ (n >> 63)`), as a varint.
    package mutating func zigzag(_ value: Int64) {
        varint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    package mutating func append(_ more: some Sequence<UInt8>) {
        bytes.append(contentsOf: more)
    }

    package mutating func append(_ more: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: more)
    }

    /// A varint byte count, then UTF-8.
    package mutating func string(_ string: String) {
        varint(UInt64(string.utf8.count))
        bytes.append(contentsOf: string.utf8)
    }

    /// A varint byte count, then the bytes.
    package mutating func counted(_ more: UnsafeRawBufferPointer) {
        varint(UInt64(more.count))
        bytes.append(contentsOf: more)
    }

    /// What `body` appends, preceded by its byte count as a varint (moving it up by the count's size rather than
    /// writing it aside); returns where the content went.
    @discardableResult
    package mutating func counted(_ body: (inout [UInt8]) -> Void) -> Range<Int> {
        let start = bytes.count
        body(&bytes)
        var count = UInt64(bytes.count - start)
        var size = 1
        while count >> (7 * size) != 0 { size += 1 }
        bytes.insert(contentsOf: repeatElement(0, count: size), at: start)
        for index in start..<(start + size) {
            bytes[index] = UInt8(truncatingIfNeeded: count) | (index < start + size - 1 ? 0x80 : 0)
            count >>= 7
        }
        return (start + size)..<bytes.count
    }
}
