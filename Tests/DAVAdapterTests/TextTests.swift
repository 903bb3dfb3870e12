import Foundation
import Testing
@testable import DAVAdapter

/// TEXT escaping (RFC 5545 §3.3.11, RFC 6350 §3.4), lists and structured values.
@Suite("TEXT values")
struct TextTests {
    @Test("escaping", arguments: [
        ("plain", "plain"),
        ("a;b", "a\\;b"),
        ("a,b", "a\\,b"),
        ("back\\slash", "back\\\\slash"),
        ("two\nlines", "two\\nlines"),
        ("crlf\r\nline", "crlf\\nline"),
        ("cr\ronly", "cr\\nonly"),
        ("colon: stays", "colon: stays"),
        ("é € 日 😀", "é € 日 😀"),
        ("", ""),
    ] as [(String, String)])
    func escaping(text: String, escaped: String) {
        #expect(VText.escape(text) == escaped)
    }

    @Test("unescaping", arguments: [
        ("a\\;b\\,c", "a;b,c"),
        ("back\\\\slash", "back\\slash"),
        ("n\\nN\\N", "n\nN\n"),
        ("unknown \\: kept", "unknown \\: kept"),      // both characters, so nothing is lost
        ("trailing \\", "trailing \\"),
        ("\\\\n", "\\n"),                             // an escaped backslash, then n
    ] as [(String, String)])
    func unescaping(escaped: String, text: String) {
        #expect(VText.unescape(escaped) == text)
    }

    @Test("escape then unescape gives the text back (a newline as LF)", arguments: [
        "a;b,c\\d\ne", "\\n is not a newline", ";;;,,,", "日本の祝日",
    ])
    func inverse(text: String) {
        #expect(VText.unescape(VText.escape(text)) == text)
    }

    @Test("lists split at unescaped commas only")
    func lists() {
        #expect(VText.list("Public holiday,Bank holiday\\, UK,") == ["Public holiday", "Bank holiday, UK", ""])
        #expect(VText.list("") == [""])
        #expect(VText.joinList(["a,b", "c;d"]) == "a\\,b,c\\;d")
        #expect(VText.list(VText.joinList(["a,b", "c\\"])) == ["a,b", "c\\"])
    }

    @Test("structured values: ; between components, , within one")
    func structured() {
        #expect(VText.structured("Lovelace;Ada;;;") == [["Lovelace"], ["Ada"], [""], [""], [""]])
        #expect(VText.structured(";;12 St James\\;s Sq,Floor 2;London") == [[""], [""], ["12 St James;s Sq", "Floor 2"], ["London"]])
        #expect(VText.joinStructured([["Turing"], ["Alan"], ["Mathison"], [""], ["OBE"]]) == "Turing;Alan;Mathison;;OBE")
    }
}
