/// SHA-256 (FIPS 180-4), for the view keys of record ids too long to be keys
/// themselves (`Keys`). Written out here because the toolchain on Linux has no
/// digest in Foundation, and a key that two ids could share must not be forgeable; and for the seals
/// of archive segments, fed as they are written (`ArchiveSegmentWriter`).
struct SHA256 {
    private static let k: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    private var state: [UInt32] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]
    /// The bytes of a block not yet complete (fewer than 64).
    private var pending: [UInt8] = []
    private var length: UInt64 = 0

    /// A digest to feed piece by piece (an archive segment's seal is over more bytes than fit in memory at once).
    init() {
        pending.reserveCapacity(64)
    }

    mutating func update(_ bytes: some Collection<UInt8>) {
        if bytes.withContiguousStorageIfAvailable({ update(bytes: UnsafeRawBufferPointer($0)) }) == nil {
            Array(bytes).withUnsafeBytes { update(bytes: $0) }
        }
    }

    /// Whole blocks straight from `bytes`: a compaction seals a million events, and byte by byte this was a
    /// fifth of its time.
    mutating func update(bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        length &+= UInt64(bytes.count)
        var offset = 0
        if !pending.isEmpty {
            offset = min(64 - pending.count, bytes.count)
            pending.append(contentsOf: bytes[0..<offset])
            guard pending.count == 64 else { return }
            pending.withUnsafeBytes { block in block.baseAddress.map { compress($0) } }
            pending.removeAll(keepingCapacity: true)
        }
        while bytes.count - offset >= 64 {
            compress(base + offset)
            offset += 64
        }
        pending.append(contentsOf: bytes[offset...])
    }

    /// The 32-byte digest of everything fed so far.
    consuming func finalize() -> [UInt8] {
        let bitLength = length &* 8
        var tail = pending
        tail.append(0x80)
        while tail.count % 64 != 56 { tail.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) { tail.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }
        tail.withUnsafeBytes { blocks in
            guard let base = blocks.baseAddress else { return }
            for block in stride(from: 0, to: blocks.count, by: 64) { compress(base + block) }
        }
        return state.flatMap { word in stride(from: 24, through: 0, by: -8).map { UInt8(truncatingIfNeeded: word >> UInt32($0)) } }
    }

    /// The 32-byte digest of `message`.
    static func digest(_ message: some Collection<UInt8>) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(message)
        return hasher.finalize()
    }

    /// One 64-byte block at `block`.
    private mutating func compress(_ block: UnsafeRawPointer) {
        var (a, b, c, d, e, f, g, h) = (state[0], state[1], state[2], state[3], state[4], state[5], state[6], state[7])
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
            Self.k.withUnsafeBufferPointer { k in
                for t in 0..<16 { w[t] = UInt32(bigEndian: block.loadUnaligned(fromByteOffset: t * 4, as: UInt32.self)) }
                for t in 16..<64 {
                    let s0 = Self.rotr(w[t - 15], 7) ^ Self.rotr(w[t - 15], 18) ^ (w[t - 15] >> 3)
                    let s1 = Self.rotr(w[t - 2], 17) ^ Self.rotr(w[t - 2], 19) ^ (w[t - 2] >> 10)
                    w[t] = w[t - 16] &+ s0 &+ w[t - 7] &+ s1
                }
                for t in 0..<64 {
                    let t1 = h &+ (Self.rotr(e, 6) ^ Self.rotr(e, 11) ^ Self.rotr(e, 25)) &+ ((e & f) ^ (~e & g)) &+ k[t] &+ w[t]
                    let t2 = (Self.rotr(a, 2) ^ Self.rotr(a, 13) ^ Self.rotr(a, 22)) &+ ((a & b) ^ (a & c) ^ (b & c))
                    (h, g, f, e, d, c, b, a) = (g, f, e, d &+ t1, c, b, a, t1 &+ t2)
                }
            }
        }
        for (index, value) in [a, b, c, d, e, f, g, h].enumerated() { state[index] = state[index] &+ value }
    }

    /// The digest as 64 lower-case hex digits.
    static func hex(_ message: some Collection<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: digest(message).flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0xF)]] }, as: UTF8.self)
    }

    private static func rotr(_ value: UInt32, _ count: UInt32) -> UInt32 {
        value >> count | value << (32 - count)
    }
}
