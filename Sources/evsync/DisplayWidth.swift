import CTerminal
import Foundation

/// How many terminal columns text takes, as the terminal counts them: `wcwidth`
/// per character, so CJK and emoji (two columns) and combining marks (none) line up.
enum DisplayWidth {
    /// `wcwidth` answers only under a UTF-8 locale; C.UTF-8 is in every glibc
    /// since 2.35 and classifies characters the same whatever language the user speaks.
    private static let hasUTF8Locale: Bool = setlocale(LC_CTYPE, "C.UTF-8") != nil

    /// The columns one character takes: its widest scalar (a base with its
    /// combining marks, skin tones and joiners shows as one glyph), two when an
    /// emoji presentation selector (U+FE0F) asks for the emoji form.
    static func of(_ character: Character) -> Int {
        if character.isASCII { return 1 }
        var widest = 0
        for scalar in character.unicodeScalars {
            if scalar.value == 0xFE0F { return 2 }
            widest = max(widest, of(scalar))
        }
        return widest
    }

    private static func of(_ scalar: Unicode.Scalar) -> Int {
        if hasUTF8Locale {
            let width = Int(evsync_wcwidth(scalar.value))
            if width >= 0 { return width }
        }
        // Without a UTF-8 locale (or for an unassigned scalar): what most terminals do.
        return scalar.properties.isEmojiPresentation ? 2 : 1
    }

    static func of(_ text: String) -> Int {
        if text.utf8.allSatisfy({ $0 < 0x80 }) { return text.utf8.count }
        return text.reduce(0) { $0 + of($1) }
    }

    /// `text` cut to at most `width` columns, ending in `…` when something was cut.
    static func truncated(_ text: String, to width: Int) -> String {
        guard of(text) > width else { return text }
        guard width > 0 else { return "" }
        var result = ""
        var used = 0
        for character in text {
            let next = of(character)
            if used + next > width - 1 { break }
            result.append(character)
            used += next
        }
        return result + "…"
    }

    /// `text` padded with spaces to `width` columns.
    static func padded(_ text: String, to width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - of(text)))
    }
}
