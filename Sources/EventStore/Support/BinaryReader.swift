/// Reads a binary format front to back: bytes, fixed-width integers, LEB128 varints, counted byte runs and strings.
///
/// The one rule for bounds: a read that would run past the end throws `BinaryReadError`, naming what it was
/// reading and where, and moves nothing; no read traps, whatever the bytes. Every stored format evsync reads
/// (events, view entries, archive segments) reads through this type, and turns its error into the format's own.
package struct BinaryReader {
    package let bytes: UnsafeRawBufferPointer
    /// Where the next read starts.
    package private(set) var offset: Int

    package init(_ bytes: UnsafeRawBufferPointer, offset: Int = 0) {
        self.bytes = bytes
        self.offset = min(max(offset, 0), bytes.count)
    }

    /// Runs `body` with a reader of `bytes`.
    package static func reading<T>(_ bytes: [UInt8], _ body: (inout BinaryReader) throws(BinaryReadError) -> T) throws(BinaryReadError) -> T {
        let result: Result<T, BinaryReadError> = bytes.withUnsafeBytes { buffer in
            var reader = BinaryReader(buffer)
            do throws(BinaryReadError) { return .success(try body(&reader)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    package var isAtEnd: Bool { offset >= bytes.count }
    package var remaining: Int { bytes.count - offset }

    package mutating func byte(_ what: String) throws(BinaryReadError) -> UInt8 {
        guard offset < bytes.count else { throw cutShort(what, needs: 1) }
        defer { offset += 1 }
        return bytes[offset]
    }

    package mutating func u16(_ what: String, _ order: ByteOrder = .bigEndian) throws(BinaryReadError) -> UInt16 {
        try integer(what, order)
    }

    package mutating func u32(_ what: String, _ order: ByteOrder = .bigEndian) throws(BinaryReadError) -> UInt32 {
        try integer(what, order)
    }

    package mutating func u64(_ what: String, _ order: ByteOrder = .bigEndian) throws(BinaryReadError) -> UInt64 {
        try integer(what, order)
    }

    private mutating func integer<T: FixedWidthInteger & UnsignedInteger>(_ what: String, _ order: ByteOrder) throws(BinaryReadError) -> T {
        let size = MemoryLayout<T>.size
        guard size <= remaining else { throw cutShort(what, needs: size) }
        let raw = bytes.loadUnaligned(fromByteOffset: offset, as: T.self)
        offset += size
        return order == .bigEndian ? T(bigEndian: raw) : T(littleEndian: raw)
    }

    /// An unsigned LEB128 number: seven bits a byte, low first, the high bit set on all but the last.
    /// One that does not fit in 64 bits is `.outOfRange`, at the byte that overflows.
    package mutating func varint(_ what: String) throws(BinaryReadError) -> UInt64 {
        let start = offset
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard offset < bytes.count else {
                let needs = offset - start + 1
                offset = start
                throw cutShort(what, needs: needs)
            }
            let byte = bytes[offset]
            guard shift < 64, shift < 63 || byte <= 1 else {
                defer { offset = start }
                throw BinaryReadError(what: what, offset: offset, problem: .outOfRange)
            }
            offset += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
    }

    /// A signed number written zigzag (`(n << 1) ^ (n >> 63)`) as a varint.
    package mutating func zigzag(_ what: String) throws(BinaryReadError) -> Int64 {
        let zigzag = try varint(what)
        return Int64(bitPattern: zigzag >> 1) ^ -Int64(bitPattern: zigzag & 1)
    }

    /// A byte count, as a varint, that must fit in what is left.
    package mutating func count(_ what: String) throws(BinaryReadError) -> Int {
        let start = offset
        let count = try varint(what)
        guard count <= UInt64(remaining) else {
            let needs = (offset - start).addingReportingOverflow(Int(clamping: count))
            offset = start
            throw cutShort(what, needs: needs.overflow ? .max : needs.partialValue)
        }
        return Int(count)
    }

    /// The next `count` bytes.
    package mutating func take(_ count: Int, _ what: String) throws(BinaryReadError) -> UnsafeRawBufferPointer {
        guard count >= 0, count <= remaining else { throw cutShort(what, needs: count) }
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)])
    }

    /// A varint byte count, then that many bytes.
    package mutating func counted(_ what: String) throws(BinaryReadError) -> UnsafeRawBufferPointer {
        try take(count(what), what)
    }

    /// A varint byte count, then that many bytes of UTF-8.
    package mutating func string(_ what: String) throws(BinaryReadError) -> String {
        String(decoding: try counted(what), as: UTF8.self)
    }

    /// The bytes from here to the end.
    package mutating func rest() -> UnsafeRawBufferPointer {
        defer { offset = bytes.count }
        return UnsafeRawBufferPointer(rebasing: bytes[offset...])
    }

    private func cutShort(_ what: String, needs: Int) -> BinaryReadError {
        BinaryReadError(what: what, offset: offset, problem: .cutShort(needed: needs, left: remaining))
    }
}

/// A read that the bytes cannot satisfy: what was being read, where, and why.
package struct BinaryReadError: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Problem: Sendable, Equatable {
        /// The read needs more bytes than are left from where it started (a counted run: its count and its bytes).
        case cutShort(needed: Int, left: Int)
        /// A varint that does not fit in 64 bits.
        case outOfRange
    }

    /// What was being read ("seq", "index offset").
    package let what: String
    /// Where the read started, the reader left there (for `.outOfRange`, the byte that overflows).
    package let offset: Int
    package let problem: Problem

    package var description: String {
        switch problem {
        case .cutShort(let needed, let left): "\(what) at byte \(offset) needs \(needed) bytes, but \(left) are left"
        case .outOfRange: "\(what) at byte \(offset) is a number out of range"
        }
    }
}
