import Testing
@testable import EventStore
@testable import evsync

/// What a server says (a refusal, a reason to skip) is stored as it came and
/// shown escaped: any client of the server can choose its words.
@Suite("CLI output of server text")
struct ServerTextOutputTests {
    @Test("a server's refusal is escaped in log lines and in history")
    func refusalIsEscaped() {
        let refusal = Event(seq: 7, eventID: "e", at: 0, entity: "Holiday", recordID: "h", kind: .rejected, origin: .remote,
                            author: "http://127.0.0.1:8888/v1/buckets/evsync", reason: ValueEdgesCLITests.hostile)
        for text in [Output.line(refusal), Output.history([refusal])] {
            let unsafe = text.unicodeScalars.filter {
                ($0.value < 0x20 && $0 != "\n") || (0x7F...0x9F).contains($0.value) || $0 == "\u{202E}"
            }
            #expect(unsafe.isEmpty, "prints \(unsafe.map { String($0.value, radix: 16) }): \(text.debugDescription)")
            #expect(text.contains(#"Evil\u001b]0;pwned"#), "\(text.debugDescription)")
        }
    }
}
