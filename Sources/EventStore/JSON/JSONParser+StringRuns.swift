/// Finding the end of a string's plain run eight bytes at a time: strings are most of a record's
/// bytes, and reading, skipping and layering members all walk them.
extension JSONParser {
    /// The index of the first byte from `start` that is a quote, a backslash or (when `control`) a
    /// control character; `bytes.count` if there is none. Sets `high`'s top bit when a byte it passes
    /// has its own, so the caller knows whether they were all ASCII.
    ///
    /// Each word is tested with the bit tricks of "Bit Twiddling Hacks" (`haszero`, `hasless`):
    /// exact as to whether a word holds such a byte, not as to where, which the byte loop then finds.
    @inline(__always)
    static func plainRunEnd(in bytes: UnsafeRawBufferPointer, from start: Int, control: Bool, high: inout UInt8) -> Int {
        let ones: UInt64 = 0x0101_0101_0101_0101, tops: UInt64 = 0x8080_8080_8080_8080
        let quotes = ones &* UInt64(UInt8(ascii: "\"")), backslashes = ones &* UInt64(UInt8(ascii: "\\"))
        var index = start
        var highs: UInt64 = 0
        while index &+ 8 <= bytes.count {
            let word = bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            let quote = word ^ quotes, backslash = word ^ backslashes
            var found = (quote &- ones) & ~quote | (backslash &- ones) & ~backslash
            if control { found |= (word &- ones &* 0x20) & ~word }
            if found & tops != 0 { break }
            highs |= word
            index &+= 8
        }
        if highs & tops != 0 { high |= 0x80 }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || (control && byte < 0x20) { break }
            high |= byte
            index &+= 1
        }
        return index
    }
}
