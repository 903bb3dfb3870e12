import Foundation
import Testing
@testable import DAVAdapter

/// Unfolding and folding (RFC 5545 §3.1, RFC 6350 §3.2) as table rows.
@Suite("Folding")
struct FoldingTests {
    static func value(_ text: String) throws -> String {
        let document = try VDocument(parsing: "BEGIN:X\r\n" + text + "END:X\r\n")
        return try #require(document.components.first?.lines.first).value
    }

    @Test("unfolding drops each line break and the one space or tab after it", arguments: [
        ("A:abc\r\n def\r\n", "abcdef"),
        ("A:abc\r\n\tdef\r\n", "abcdef"),
        ("A:abc\r\n  def\r\n", "abc def"),                     // only the first space is the fold's
        ("A:a\r\n b\r\n c\r\n d\r\n", "abcd"),
        ("A:abc\n def\n", "abcdef"),                           // bare LF, as some servers send
        ("A:caf\r\n é\r\n", "café"),
        ("A;\r\n B=c:d\r\n", "d"),                             // a fold inside the parameters
    ] as [(String, String)])
    func unfolding(text: String, unfolded: String) throws {
        #expect(try Self.value(text) == unfolded)
    }

    @Test("a fold inside a UTF-8 sequence is read, and the line is written again folded canonically")
    func foldInsideSequence() throws {
        var bytes = Array("BEGIN:X\r\nA:caf".utf8) + [0xC3, 0x0D, 0x0A, 0x20, 0xA9]
        bytes += Array("\r\nEND:X\r\n".utf8)
        let document = try VDocument(parsing: bytes)
        #expect(document.serialized() == "BEGIN:X\r\nA:café\r\nEND:X\r\n")
    }

    /// The physical lines of a folded line, without CRLF.
    static func physical(_ folded: String) -> [String] {
        folded.components(separatedBy: "\r\n")
    }

    @Test("folding: at most 75 octets a line, a space before each continuation, no cut inside a character", arguments: [
        (String(repeating: "a", count: 75), [75]),
        (String(repeating: "a", count: 76), [75, 2]),
        (String(repeating: "a", count: 75 + 74), [75, 75]),
        (String(repeating: "a", count: 75 + 75), [75, 75, 2]),
        (String(repeating: "a", count: 74) + "é", [74, 3]),          // é (2 octets) does not fit in the 75th
        (String(repeating: "a", count: 73) + "é", [75]),             // it does when it ends at the 75th
        (String(repeating: "a", count: 73) + "€", [73, 4]),          // € is 3 octets
        (String(repeating: "a", count: 72) + "€", [75]),
        (String(repeating: "a", count: 72) + "😀", [72, 5]),         // a 4-octet scalar
        (String(repeating: "a", count: 71) + "😀", [75]),
        (String(repeating: "日", count: 30), [75, 16]),               // 25 × 3 octets, then " " + 5 × 3
        (String(repeating: "日", count: 50), [75, 73, 4]),            // continuations hold 74 octets: 24 × 3 = 72, and " "
    ] as [(String, [Int])])
    func folding(line: String, lengths: [Int]) {
        let folded = Folding.fold(line)
        let lines = Self.physical(folded)
        #expect(lines.map(\.utf8.count) == lengths)
        #expect(lines.dropFirst().allSatisfy { $0.hasPrefix(" ") })
        // Each physical line is whole UTF-8 by itself.
        #expect(lines.allSatisfy { String(validating: Array($0.utf8), as: UTF8.self) != nil })
        #expect(!(lines.first ?? " ").hasPrefix(" "))
    }

    @Test("folding and unfolding are inverse, whatever the characters (seeded random lines)")
    func foldUnfold() throws {
        var random = SplitMix(seed: 26)
        let alphabet: [Character] = ["a", "Z", "0", " ", ";", ":", ",", "\\", "é", "€", "日", "😀", "\t", "ß", "ﬁ"]
        for _ in 0..<500 {
            let count = Int(random.next() % 300)
            let text = String((0..<count).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] })
            let line = ContentLine("X-TEST", value: text)
            let folded = line.folded()
            #expect(Self.physical(folded).allSatisfy { $0.utf8.count <= 75 })
            let read = try VDocument(parsing: "BEGIN:X\r\n" + folded + "\r\nEND:X\r\n")
            #expect(read.components.first?.lines.first?.value == text)
        }
    }
}

/// A small seeded generator, so a failure can be replayed.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
