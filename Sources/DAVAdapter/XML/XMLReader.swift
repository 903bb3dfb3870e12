/// An XML element with its namespace resolved: what a DAV answer is read into.
///
/// Only what WebDAV answers use is kept: the expanded name (namespace URI and local name), the child elements in
/// order, and the character data directly inside (text and CDATA, references replaced). Attributes other than
/// namespace declarations are dropped: no DAV, CalDAV or CardDAV answer evsync reads carries meaning in one.
public struct DAVElement: Sendable, Hashable {
    public var namespace: String
    public var name: String
    public var children: [DAVElement] = []
    public var text = ""

    public init(namespace: String, name: String, children: [DAVElement] = [], text: String = "") {
        (self.namespace, self.name, self.children, self.text) = (namespace, name, children, text)
    }

    public func isNamed(_ namespace: String, _ name: String) -> Bool {
        self.name == name && self.namespace == namespace
    }

    /// The first child so named.
    public func child(_ namespace: String, _ name: String) -> DAVElement? {
        children.first { $0.isNamed(namespace, name) }
    }

    public func children(_ namespace: String, _ name: String) -> [DAVElement] {
        children.filter { $0.isNamed(namespace, name) }
    }
}

/// Why a body is not XML evsync can read, with the byte offset it gave up at.
public struct XMLReadError: Error, Sendable, Hashable, CustomStringConvertible {
    public let offset: Int
    public let reason: String

    public var description: String { "\(reason) (at byte \(offset))" }
}

/// A small, strict, non-validating XML 1.0 reader for WebDAV answers (RFC 4918 §14: namespaces per the XML
/// Namespaces recommendation).
///
/// Our own rather than FoundationXML, whose `XMLParser` is libxml2 on Linux (docs/decisions/dav-xml-a-small-reader-of-our-own-not-foundationxml.md).
/// Bounded for a hostile server: no DTD (a `<!DOCTYPE` is refused, so no entity can expand), only the five
/// predefined entities and character references, a nesting limit, a size limit. It never traps: every way a body
/// can be wrong is an `XMLReadError`.
public struct XMLReader {
    /// The largest body read: a multiget batch of 100 items with inline photos stays far below it.
    public static let maximumBytes = 64 << 20
    /// Deeper than any DAV answer (multistatus/response/propstat/prop/x/y is six).
    public static let maximumDepth = 64

    private let bytes: [UInt8]
    private var index = 0

    private init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The document element of `bytes`.
    public static func parse(_ bytes: [UInt8]) throws(XMLReadError) -> DAVElement {
        guard bytes.count <= maximumBytes else {
            throw XMLReadError(offset: 0, reason: "the XML is larger than \(maximumBytes >> 20) MiB")
        }
        var reader = XMLReader(bytes)
        return try reader.document()
    }

    // MARK: Document

    private struct Open {
        var prefix: String
        var local: String
        var declarations: [(String, String)]
        var element: DAVElement
    }

    private mutating func document() throws(XMLReadError) -> DAVElement {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
        try misc()
        guard peek("<"), !peek("</") else { throw fail("no root element") }
        // Scopes of namespace declarations, innermost last; the XML namespace is always bound.
        var scopes: [[(String, String)]] = [[("xml", "http://www.w3.org/XML/1998/namespace")]]
        var stack: [Open] = []
        var root: DAVElement?
        while root == nil {
            guard index < bytes.count else { throw fail("the XML ends inside <\(stack.last?.local ?? "")>") }
            if peek("<!--") {
                try comment()
            } else if peek("<![CDATA[") {
                guard !stack.isEmpty else { throw fail("CDATA outside the root element") }
                index += 9
                let start = index
                guard let end = find("]]>") else { throw fail("an unterminated CDATA section") }
                stack[stack.count - 1].element.text += try utf8(start..<end)
                index = end + 3
            } else if peek("<?") {
                try processingInstruction()
            } else if peek("<!") {
                throw fail("a DTD or declaration inside the document, which evsync does not read")
            } else if peek("</") {
                index += 2
                let (prefix, local) = try qualifiedName()
                skipSpace()
                guard take(">") else { throw fail("a malformed end tag") }
                guard var open = stack.popLast(), open.prefix == prefix, open.local == local else {
                    throw fail("</\(prefix.isEmpty ? "" : prefix + ":")\(local)> does not close the open element")
                }
                scopes.removeLast()
                open.element.namespace = try resolve(open.prefix, in: scopes + [open.declarations], element: true)
                if stack.isEmpty { root = open.element } else { stack[stack.count - 1].element.children.append(open.element) }
            } else if peek("<") {
                index += 1
                var open = try startTag()
                guard stack.count < Self.maximumDepth else { throw fail("elements nested deeper than \(Self.maximumDepth)") }
                if take("/>") {
                    open.element.namespace = try resolve(open.prefix, in: scopes + [open.declarations], element: true)
                    if stack.isEmpty { root = open.element } else { stack[stack.count - 1].element.children.append(open.element) }
                } else {
                    guard take(">") else { throw fail("a malformed start tag") }
                    scopes.append(open.declarations)
                    stack.append(open)
                }
            } else {
                let start = index
                while index < bytes.count, bytes[index] != UInt8(ascii: "<") { index += 1 }
                let text = try characterData(start..<index)
                if stack.isEmpty {
                    guard text.allSatisfy({ $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" || $0 == "\r\n" }) else {
                        throw fail("text outside the root element")
                    }
                } else {
                    stack[stack.count - 1].element.text += text
                }
            }
        }
        try misc()
        guard index == bytes.count else { throw fail("something after the root element") }
        return root ?? DAVElement(namespace: "", name: "")
    }

    /// Comments, processing instructions and white space, before or after the root element.
    private mutating func misc() throws(XMLReadError) {
        while true {
            skipSpace()
            if peek("<!--") { try comment() } else if peek("<?") { try processingInstruction() } else if peek("<!DOCTYPE") {
                throw fail("a DTD (<!DOCTYPE), which evsync does not read")
            } else { return }
        }
    }

    private mutating func comment() throws(XMLReadError) {
        guard let end = find("-->", from: index + 4) else { throw fail("an unterminated comment") }
        index = end + 3
    }

    private mutating func processingInstruction() throws(XMLReadError) {
        guard let end = find("?>", from: index + 2) else { throw fail("an unterminated processing instruction") }
        index = end + 2
    }

    /// After `<`: the name, its attributes (only namespace declarations kept); stops before `>` or `/>`.
    private mutating func startTag() throws(XMLReadError) -> Open {
        let (prefix, local) = try qualifiedName()
        var declarations: [(String, String)] = []
        var seen: Set<String> = []
        while true {
            let spaced = skipSpace()
            if peek(">") || peek("/>") { break }
            guard spaced else { throw fail("no space before an attribute") }
            let (attributePrefix, attributeLocal) = try qualifiedName()
            let whole = attributePrefix.isEmpty ? attributeLocal : attributePrefix + ":" + attributeLocal
            guard seen.insert(whole).inserted else { throw fail("the attribute \(whole) twice") }
            skipSpace()
            guard take("=") else { throw fail("an attribute without '='") }
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'") else {
                throw fail("an attribute value without quotes")
            }
            let quote = bytes[index]
            index += 1
            let start = index
            while index < bytes.count, bytes[index] != quote {
                guard bytes[index] != UInt8(ascii: "<") else { throw fail("'<' in an attribute value") }
                index += 1
            }
            guard index < bytes.count else { throw fail("an unterminated attribute value") }
            let value = try characterData(start..<index)
            index += 1
            if attributePrefix.isEmpty, attributeLocal == "xmlns" {
                declarations.append(("", value))
            } else if attributePrefix == "xmlns" {
                guard !value.isEmpty else { throw fail("the prefix \(attributeLocal) bound to no namespace") }
                declarations.append((attributeLocal, value))
            }
        }
        return Open(prefix: prefix, local: local, declarations: declarations, element: DAVElement(namespace: "", name: local))
    }

    private func resolve(_ prefix: String, in scopes: [[(String, String)]], element: Bool) throws(XMLReadError) -> String {
        for scope in scopes.reversed() {
            if let bound = scope.last(where: { $0.0 == prefix }) { return bound.1 }
        }
        guard prefix.isEmpty else { throw fail("the namespace prefix '\(prefix)' is not declared") }
        return ""
    }

    /// `prefix:local` or `local`; names of letters, digits, `-`, `_`, `.` and any non-ASCII byte.
    private mutating func qualifiedName() throws(XMLReadError) -> (String, String) {
        let first = try name()
        guard take(":") else { return ("", first) }
        return (first, try name())
    }

    private mutating func name() throws(XMLReadError) -> String {
        let start = index
        while index < bytes.count, Self.isNameByte(bytes[index]) { index += 1 }
        guard index > start, !Self.isDigitOrPunctuation(bytes[start]) else { throw fail("a malformed name") }
        return try utf8(start..<index)
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        byte >= 0x80 || (byte | 0x20) &- UInt8(ascii: "a") < 26 || byte &- UInt8(ascii: "0") < 10
            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
    }

    private static func isDigitOrPunctuation(_ byte: UInt8) -> Bool {
        byte &- UInt8(ascii: "0") < 10 || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
    }

    // MARK: Text

    /// Text with its references replaced; line ends normalised to LF, as XML 1.0 §2.11 says.
    private func characterData(_ range: Range<Int>) throws(XMLReadError) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(range.count)
        var position = range.lowerBound
        while position < range.upperBound {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\r") {
                out.append(UInt8(ascii: "\n"))
                position += 1
                if position < range.upperBound, bytes[position] == UInt8(ascii: "\n") { position += 1 }
                continue
            }
            guard byte == UInt8(ascii: "&") else {
                guard byte >= 0x20 || byte == 0x09 || byte == 0x0A else {
                    throw XMLReadError(offset: position, reason: "a control character in the text")
                }
                out.append(byte)
                position += 1
                continue
            }
            guard let semicolon = bytes[position..<min(range.upperBound, position + 12)].firstIndex(of: UInt8(ascii: ";")) else {
                throw XMLReadError(offset: position, reason: "an '&' that starts no reference")
            }
            let reference = Array(bytes[(position + 1)..<semicolon])
            switch String(decoding: reference, as: UTF8.self) {
            case "lt": out.append(UInt8(ascii: "<"))
            case "gt": out.append(UInt8(ascii: ">"))
            case "amp": out.append(UInt8(ascii: "&"))
            case "quot": out.append(UInt8(ascii: "\""))
            case "apos": out.append(UInt8(ascii: "'"))
            case let text where text.hasPrefix("#"):
                let hex = text.hasPrefix("#x")
                let digits = text.dropFirst(hex ? 2 : 1)
                guard !digits.isEmpty, let value = UInt32(digits, radix: hex ? 16 : 10), let scalar = Unicode.Scalar(value),
                      value >= 0x20 || value == 0x09 || value == 0x0A || value == 0x0D
                else { throw XMLReadError(offset: position, reason: "an invalid character reference &\(text);") }
                out.append(contentsOf: String(Character(scalar)).utf8)
            default:
                throw XMLReadError(offset: position, reason: "an unknown entity reference (only the five of XML and character references)")
            }
            position = semicolon + 1
        }
        guard let text = String(validating: out, as: UTF8.self) else {
            throw XMLReadError(offset: range.lowerBound, reason: "text that is not UTF-8")
        }
        return text
    }

    private func utf8(_ range: Range<Int>) throws(XMLReadError) -> String {
        guard let text = String(validating: bytes[range], as: UTF8.self) else {
            throw XMLReadError(offset: range.lowerBound, reason: "text that is not UTF-8")
        }
        return text
    }

    // MARK: Scanning

    private func peek(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { return false }
        return literal.withUTF8Buffer { literal in
            for offset in 0..<count where bytes[index + offset] != literal[offset] { return false }
            return true
        }
    }

    private mutating func take(_ literal: StaticString) -> Bool {
        guard peek(literal) else { return false }
        index += literal.utf8CodeUnitCount
        return true
    }

    @discardableResult
    private mutating func skipSpace() -> Bool {
        let start = index
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        return index > start
    }

    private func find(_ literal: StaticString, from start: Int? = nil) -> Int? {
        let count = literal.utf8CodeUnitCount
        var position = start ?? index
        return literal.withUTF8Buffer { literal -> Int? in
            guard let first = literal.first else { return nil }
            while position + count <= bytes.count {
                if bytes[position] == first, (1..<count).allSatisfy({ bytes[position + $0] == literal[$0] }) { return position }
                position += 1
            }
            return nil
        }
    }

    private func fail(_ reason: String) -> XMLReadError {
        XMLReadError(offset: index, reason: reason)
    }
}
