public import EventStore
import Foundation

/// Random JSON for property tests, drawn from a seeded generator so a failure replays.
public enum RandomJSON {
    /// `value` as JSON text written any valid way: white space, escapes where
    /// none are needed. Numbers keep their literal, which is their value.
    public static func messy(_ value: JSONValue, using random: inout SplitMix64) -> String {
        let spaces = ["", " ", "\n  ", "\t"]
        func space() -> String { spaces[Int.random(in: 0..<spaces.count, using: &random)] }
        switch value {
        case .null, .bool: return JSONWriter.string(value)
        case .number(let number):
            return number.text
        case .string(let string):
            var text = "\""
            for scalar in string.unicodeScalars {
                let mustEscape = scalar.value < 0x20 || scalar == "\"" || scalar == "\\"
                if !mustEscape, Bool.random(using: &random) {
                    text.unicodeScalars.append(scalar)
                } else if scalar == "/" {
                    text += "\\/"
                } else {
                    for unit in String(scalar).utf16 { text += "\\u" + String(format: "%04X", unit) }
                }
            }
            return text + "\""
        case .array(let elements):
            return "[" + space() + elements.map { messy($0, using: &random) }.joined(separator: space() + "," + space()) + space() + "]"
        case .object(let members):
            let texts = members.map { messy(.string($0.key), using: &random) + space() + ":" + space() + messy($0.value, using: &random) }
            return "{" + space() + texts.joined(separator: "," + space()) + space() + "}"
        }
    }

    /// A random JSON value, with strings drawn from ASCII, escapes, control
    /// characters, accented letters and astral characters.
    public static func value(depth: Int, using random: inout SplitMix64) -> JSONValue {
        let choice = Int.random(in: 0..<(depth >= 4 ? 5 : 7), using: &random)
        switch choice {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &random))
        case 2: return .number(number(using: &random))
        case 3, 4: return .string(string(using: &random))
        case 5:
            return .array((0..<Int.random(in: 0...5, using: &random)).map { _ in value(depth: depth + 1, using: &random) })
        default:
            var object: JSONObject = [:]
            for _ in 0..<Int.random(in: 0...5, using: &random) {
                object[string(using: &random)] = value(depth: depth + 1, using: &random)
            }
            return .object(object)
        }
    }

    /// A number literal: small and large integers (past 2^53 and 2^64),
    /// microsecond timestamps, fractions with more digits than a Double
    /// holds, exponents, and forms like `1.0`, `-0` and `1E+3`.
    public static func number(using random: inout SplitMix64) -> JSONNumber {
        func digits(_ count: Int) -> String {
            String((0..<count).map { _ in Character(String(Int.random(in: 0...9, using: &random))) })
        }
        let sign = Bool.random(using: &random) ? "-" : ""
        let whole = String(Int.random(in: 1...9, using: &random)) + digits(Int.random(in: 0...40, using: &random))
        let forms = [
            String(Int.random(in: -1_000_000...1_000_000, using: &random)),
            sign + whole,
            "17330112001\(digits(5))",
            sign + whole + "." + digits(Int.random(in: 1...30, using: &random)),
            sign + "0." + digits(Int.random(in: 1...25, using: &random)),
            sign + whole + ["e", "E", "e+", "E-", "e-"][Int.random(in: 0..<5, using: &random)] + String(Int.random(in: 0...400, using: &random)),
            ["1.0", "-0", "0", "-0.0", "1E+3", "1e3", "100.00", "9007199254740993", "12345678901234567891"][Int.random(in: 0..<9, using: &random)],
        ]
        let text = forms[Int.random(in: 0..<forms.count, using: &random)]
        guard let number = JSONNumber(text) else { preconditionFailure("not a JSON number: \(text)") }
        return number
    }

    public static func string(using random: inout SplitMix64) -> String {
        let pools: [[Unicode.Scalar]] = [
            Array("abcXYZ019 _-".unicodeScalars),
            ["\"", "\\", "/", "\n", "\r", "\t", "\u{0}", "\u{8}", "\u{C}", "\u{1F}", "\u{7F}"],
            ["é", "ß", "Ω", "東", "€", "\u{FEFF}", "\u{FFFD}"],
            ["😀", "𝄞", "\u{10FFFF}", "\u{1F1EB}"],
        ]
        var scalars = String.UnicodeScalarView()
        for _ in 0..<Int.random(in: 0...12, using: &random) {
            let pool = pools[Int.random(in: 0..<pools.count, using: &random)]
            scalars.append(pool[Int.random(in: 0..<pool.count, using: &random)])
        }
        return String(scalars)
    }
}
