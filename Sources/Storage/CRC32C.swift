import CCRC32C

/// CRC-32C (Castagnoli, polynomial 0x1EDC6F41, reflected), the checksum of
/// stored events: the one iSCSI, ext4 and SSE 4.2's `crc32` instruction use.
///
/// By the processor's `crc32` instruction where it has one (`CCRC32C`), else
/// slice-by-8 in plain Swift: eight bytes per step through eight 256-entry
/// tables, about a byte per cycle. Every read of a record checks its event's
/// checksum, and on a typical event the instruction costs a third of the tables' instructions.
///
/// ```swift
/// CRC32C.checksum(Array("123456789".utf8))   // 0xE3069283
/// ```
package enum CRC32C {
    /// `tables[k * 256 + b]`: the CRC of byte `b` followed by `k` zero bytes.
    private static let tables: [UInt32] = {
        var tables = [UInt32](repeating: 0, count: 8 * 256)
        for byte in 0..<256 {
            var crc = UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            tables[byte] = crc
        }
        for slice in 1..<8 {
            for byte in 0..<256 {
                let previous = tables[(slice - 1) * 256 + byte]
                tables[slice * 256 + byte] = (previous >> 8) ^ tables[Int(previous & 0xFF)]
            }
        }
        return tables
    }()

    /// Whether this processor computes CRC-32C itself.
    package static let hasInstruction = evsync_crc32c_available() != 0

    /// The CRC-32C of `bytes`, or of the bytes checksummed so far (`crc`) followed by `bytes`.
    package static func checksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        guard let pointer = bytes.baseAddress else { return crc }
        return hasInstruction ? ~evsync_crc32c_update(~crc, pointer, bytes.count) : bySlices(bytes, continuing: crc)
    }

    /// `checksum` through the tables.
    package static func bySlices(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        guard var pointer = bytes.baseAddress else { return crc }
        var remaining = bytes.count
        var crc = ~crc
        tables.withUnsafeBufferPointer { table in
            while remaining >= 8 {
                let word = pointer.loadUnaligned(as: UInt64.self).littleEndian
                let low = UInt32(truncatingIfNeeded: word) ^ crc
                let high = UInt32(truncatingIfNeeded: word >> 32)
                crc = table[7 * 256 + Int(low & 0xFF)] ^ table[6 * 256 + Int((low >> 8) & 0xFF)]
                    ^ table[5 * 256 + Int((low >> 16) & 0xFF)] ^ table[4 * 256 + Int(low >> 24)]
                    ^ table[3 * 256 + Int(high & 0xFF)] ^ table[2 * 256 + Int((high >> 8) & 0xFF)]
                    ^ table[256 + Int((high >> 16) & 0xFF)] ^ table[Int(high >> 24)]
                pointer += 8
                remaining -= 8
            }
            while remaining > 0 {
                crc = table[Int((crc ^ UInt32(pointer.load(as: UInt8.self))) & 0xFF)] ^ (crc >> 8)
                pointer += 1
                remaining -= 1
            }
        }
        return ~crc
    }

    package static func checksum(_ bytes: [UInt8], continuing crc: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0, continuing: crc) }
    }
}
