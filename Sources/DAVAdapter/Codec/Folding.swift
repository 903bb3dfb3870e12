/// Line folding (RFC 5545 §3.1, RFC 6350 §3.2): physical lines of at most 75 octets, each continuation starting
/// with one space, never cut inside a UTF-8 sequence.
enum Folding {
    /// The longest physical line, in octets, without its CRLF.
    static let lineOctets = 75

    /// `line` (one unfolded content line) folded, its physical lines joined by CRLF, with no CRLF at the end.
    static func fold(_ line: String) -> String {
        let bytes = Array(line.utf8)
        guard bytes.count > lineOctets else { return line }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + bytes.count / 24 + 3)
        var start = 0
        var room = lineOctets
        while start < bytes.count {
            var end = min(start + room, bytes.count)
            // Back off to the start of a scalar: a continuation byte is 10xxxxxx.
            while end < bytes.count, end > start, bytes[end] & 0xC0 == 0x80 { end -= 1 }
            // Unreachable with valid UTF-8 (a scalar is at most 4 octets, room at least 74), but never loop forever.
            if end == start { end = min(start + room, bytes.count) }
            if start > 0 { out += [0x0D, 0x0A, 0x20] }
            out += bytes[start..<end]
            start = end
            room = lineOctets - 1
        }
        return String(decoding: out, as: UTF8.self)
    }
}
