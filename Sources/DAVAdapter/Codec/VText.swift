/// The TEXT value type of RFC 5545 §3.3.11 and RFC 6350 §3.4: escaping, and the lists and structures made of it.
///
/// A TEXT value escapes `\`, `;`, `,` and newlines (`\\`, `\;`, `\,`, `\n`; `\N` is read as a newline too).
/// An unknown escape (`\:`, which some clients write, or a lone `\` at the end) is kept as written, both
/// characters: reading must lose nothing, and a value read and written again is the same text.
public enum VText {
    /// The value as a TEXT property writes it.
    ///
    ///     VText.escape("Mon; Tue, Wed\nThu")   // "Mon\\; Tue\\, Wed\\nThu"
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        var previousWasCR = false
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case ";": out += "\\;"
            case ",": out += "\\,"
            case "\r": out += "\\n"
            // CRLF is one newline: its CR already wrote it.
            case "\n": if !previousWasCR { out += "\\n" }
            default: out.unicodeScalars.append(scalar)
            }
            previousWasCR = scalar == "\r"
        }
        return out
    }

    /// The text a TEXT value holds.
    ///
    ///     VText.unescape("Mon\\; Tue\\, Wed\\nThu")   // "Mon; Tue, Wed\nThu"
    public static func unescape(_ value: some StringProtocol) -> String {
        var out = ""
        out.reserveCapacity(value.utf8.count)
        var escaping = false
        for scalar in value.unicodeScalars {
            if escaping {
                switch scalar {
                case "\\", ";", ",": out.unicodeScalars.append(scalar)
                case "n", "N": out += "\n"
                default: out += "\\"; out.unicodeScalars.append(scalar)
                }
                escaping = false
            } else if scalar == "\\" {
                escaping = true
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        if escaping { out += "\\" }
        return out
    }

    /// The raw pieces of a value split at every `separator` that is not escaped (still escaped themselves).
    ///
    ///     VText.split("a\\,b,c", at: ",")   // ["a\\,b", "c"]
    public static func split(_ value: String, at separator: Unicode.Scalar) -> [String] {
        var pieces: [String] = []
        var current = ""
        var escaping = false
        for scalar in value.unicodeScalars {
            if escaping {
                escaping = false
            } else if scalar == "\\" {
                escaping = true
            } else if scalar == separator {
                pieces.append(current)
                current = ""
                continue
            }
            current.unicodeScalars.append(scalar)
        }
        pieces.append(current)
        return pieces
    }

    /// The texts of a comma-separated list of TEXT (CATEGORIES, NICKNAME).
    ///
    ///     VText.list("Public holiday,Bank holiday\\, UK")   // ["Public holiday", "Bank holiday, UK"]
    public static func list(_ value: String) -> [String] {
        split(value, at: ",").map { unescape($0) }
    }

    /// A comma-separated list of TEXT, as CATEGORIES writes it.
    public static func joinList(_ texts: [String]) -> String {
        texts.map(escape).joined(separator: ",")
    }

    /// The components of a structured value (vCard's N and ADR: `;` between components, `,` within one), unescaped.
    ///
    ///     VText.structured("Lovelace;Ada;;;")   // [["Lovelace"], ["Ada"], [""], [""], [""]]
    public static func structured(_ value: String) -> [[String]] {
        split(value, at: ";").map { list($0) }
    }

    /// A structured value from its components (each a list of texts).
    public static func joinStructured(_ components: [[String]]) -> String {
        components.map(joinList).joined(separator: ";")
    }
}
