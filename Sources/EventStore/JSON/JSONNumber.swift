/// A JSON number, kept as the literal it was written as.
///
/// evsync must never change a value nobody edited, so a number is not
/// turned into a `Double` (which would make `9007199254740993` into
/// `9007199254740992`, `12345678901234567891` into `1.2345678901234567e+19`
/// and `1.0` into `1`): its text goes from the server or the command line to
/// the log and back exactly, whatever its size or precision.
///
/// Two numbers are equal when they are of the same kind (an integer literal,
/// without fraction or exponent, or not) and have the same exact decimal
/// value: `1.0 == 1.00 == 1e0`, `-0 == 0`, but `1 != 1.0`. The kind is what
/// JSON libraries (Python's, Kinto's) turn into an integer or a float, so an
/// edit from `1` to `1.0` is an edit, while a server writing `1e3` back as
/// `1000.0` changes nothing.
public struct JSONNumber: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The literal, valid by RFC 8259's grammar.
    public let text: String

    /// `text`, checked against JSON's grammar; nil if it is not a JSON number.
    public init?(_ text: String) {
        var text = text
        let valid = text.withUTF8 { Self.literalLength(in: UnsafeRawBufferPointer($0), from: 0) == $0.count }
        guard valid else { return nil }
        self.text = text
    }

    /// A literal the parser has already checked.
    init(checked text: String) { self.text = text }

    public init(_ value: some BinaryInteger) { text = String(value) }

    /// The shortest literal that reads back as `value`; nil for NaN and infinities, which JSON cannot hold.
    public init?(_ value: Double) {
        guard value.isFinite else { return nil }
        text = value.description
    }

    public var description: String { text }

    /// True when written without fraction or exponent, as JSON libraries make integers.
    public var isIntegerLiteral: Bool {
        !text.utf8.contains { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }
    }

    /// The nearest `Double` (infinite beyond its range).
    public var doubleValue: Double { Double(text) ?? .nan }

    /// The value when it is a whole number that `Int64` holds (`3`, `3.0`, `3e0`); nil otherwise.
    public var int64Value: Int64? {
        if isIntegerLiteral { return Int64(text) }
        let decimal = Decimal(self)
        guard decimal.isIntegral, decimal.exponent <= 19 else { return nil }
        if decimal.digits.isEmpty { return 0 }
        var digits = decimal.digits.map { Character(Unicode.Scalar($0)) }
        digits.append(contentsOf: repeatElement("0", count: decimal.exponent - digits.count))
        return Int64((decimal.negative ? "-" : "") + String(digits))
    }

    /// True when the value is a whole number, however large (`1e400`, `12345678901234567891`, `2.0`).
    public var isIntegral: Bool { isIntegerLiteral || Decimal(self).isIntegral }

    public static func == (a: JSONNumber, b: JSONNumber) -> Bool {
        if a.text == b.text { return true }
        guard a.isIntegerLiteral == b.isIntegerLiteral else { return false }
        return Decimal(a) == Decimal(b)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(isIntegerLiteral)
        hasher.combine(Decimal(self))
    }

    /// Orders by exact value (`minimum`, `maximum`), whatever the kind.
    public static func < (a: JSONNumber, b: JSONNumber) -> Bool {
        Decimal(a).isLess(than: Decimal(b))
    }

    /// The value as sign, significant digits and exponent: `±0.d₁d₂…dₙ × 10^exponent`,
    /// with no zero at either end of the digits (none at all for zero).
    struct Decimal: Hashable {
        var negative: Bool
        var digits: [UInt8]
        var exponent: Int

        init(_ number: JSONNumber) {
            var negative = false, digits: [UInt8] = [], exponent = 0, pointSeen = false
            var utf8 = number.text.utf8[...]
            if utf8.first == UInt8(ascii: "-") { negative = true; utf8 = utf8.dropFirst() }
            while let byte = utf8.first, byte != UInt8(ascii: "e"), byte != UInt8(ascii: "E") {
                utf8 = utf8.dropFirst()
                if byte == UInt8(ascii: ".") { pointSeen = true; continue }
                if digits.isEmpty, byte == UInt8(ascii: "0") {
                    if pointSeen { exponent -= 1 }
                    continue
                }
                digits.append(byte)
                if !pointSeen { exponent += 1 }
            }
            if !utf8.isEmpty {
                // The parser and `init?(_:)` keep exponents to `maxExponentDigits` digits: no overflow here.
                exponent += Int(String(decoding: utf8.dropFirst(), as: UTF8.self)) ?? 0
            }
            while digits.last == UInt8(ascii: "0") { digits.removeLast() }
            if digits.isEmpty { negative = false; exponent = 0 }
            self.negative = negative
            self.digits = digits
            self.exponent = exponent
        }

        var isIntegral: Bool { digits.count <= exponent || digits.isEmpty }

        func isLess(than other: Decimal) -> Bool {
            if negative != other.negative { return negative }
            return negative ? other.magnitudeIsLess(than: self) : magnitudeIsLess(than: other)
        }

        private func magnitudeIsLess(than other: Decimal) -> Bool {
            if digits.isEmpty || other.digits.isEmpty { return digits.isEmpty && !other.digits.isEmpty }
            if exponent != other.exponent { return exponent < other.exponent }
            return digits.lexicographicallyPrecedes(other.digits)
        }
    }

    /// Exponents longer than this (after leading zeros) are refused: nothing
    /// real has them, and it keeps exponent arithmetic from overflowing.
    static let maxExponentDigits = 9

    /// The length of the number literal starting at `start`, or nil if none
    /// does (or its exponent is too long). It may be followed by anything.
    static func literalLength(in bytes: UnsafeRawBufferPointer, from start: Int) -> Int? {
        var index = start
        func digits() -> Int {
            let first = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            return index - first
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else { return nil }
        if bytes[index] == UInt8(ascii: "0") { index += 1 } else { _ = digits() }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { return nil }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            while index < bytes.count, bytes[index] == UInt8(ascii: "0"), index + 1 < bytes.count,
                  (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index + 1]) { index += 1 }
            let count = digits()
            guard count > 0, count <= maxExponentDigits else { return nil }
        }
        return index - start
    }
}

extension JSONNumber: ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral {
    public init(integerLiteral value: Int) { self.init(value) }
    /// Float literals in code are finite; their shortest form is their text.
    public init(floatLiteral value: Double) { text = value.description }
}
