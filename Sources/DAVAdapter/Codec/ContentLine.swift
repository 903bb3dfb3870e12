/// One content line of iCalendar or vCard: `[group.]NAME;PARAM=value,…:value`, unfolded.
///
///     let line = ContentLine("SUMMARY", text: "New Year; observed")
///     line.render()                      // "SUMMARY:New Year\\; observed"
///     line.textValue                     // "New Year; observed"
///
/// A line read from a text remembers the text it came from (`source`): written out again unchanged, it is the
/// same bytes, folds and all, even where another client folded at another width. Any line made or changed here
/// has no source and is written canonically (folded at 75 octets). Two lines are equal when their group, name,
/// parameters and value are, whatever their source. Names keep the case they were written in and are compared
/// ignoring it.
public struct ContentLine: Sendable, CustomStringConvertible {
    /// vCard's group prefix (`item1` in `item1.EMAIL`), if any.
    public let group: String?
    public let name: String
    public let parameters: [ContentLineParameter]
    /// The value as written: still escaped, for TEXT (see `textValue`).
    public let value: String
    /// The physical lines this line was read from, joined by CRLF (no CRLF at the end); nil for a line made here.
    public let source: String?

    /// A line with a raw value (escaped already if it is TEXT).
    public init(_ name: String, group: String? = nil, parameters: [ContentLineParameter] = [], value: String) {
        self.init(group: group, name: name, parameters: parameters, value: value, source: nil)
    }

    /// A TEXT line: `text` is escaped.
    public init(_ name: String, group: String? = nil, parameters: [ContentLineParameter] = [], text: String) {
        self.init(group: group, name: name, parameters: parameters, value: VText.escape(text), source: nil)
    }

    init(group: String?, name: String, parameters: [ContentLineParameter], value: String, source: String?) {
        self.group = group
        self.name = name
        self.parameters = parameters
        self.value = value
        self.source = source
    }

    /// The value read as TEXT.
    public var textValue: String { VText.unescape(value) }

    /// Whether the line's name is `name`, ignoring case (and the group).
    public func isNamed(_ name: String) -> Bool { self.name.equalsIgnoringCase(name) }

    /// The values of the first parameter called `name` (ignoring case), or nil when there is none.
    public func parameter(_ name: String) -> [String]? {
        parameters.first { $0.name.equalsIgnoringCase(name) }?.values.map(\.text)
    }

    /// Whether a parameter `name` has the value `value`, both ignoring case (`TYPE=facebook`, `VALUE=DATE`).
    public func hasParameter(_ name: String, value: String) -> Bool {
        parameters.contains { $0.name.equalsIgnoringCase(name) && $0.values.contains { $0.text.equalsIgnoringCase(value) } }
    }

    /// The unfolded line, as it is written before folding.
    public func render() -> String {
        var out = group.map { $0 + "." } ?? ""
        out += name
        for parameter in parameters { out += ";" + parameter.render() }
        out += ":" + value
        return out
    }

    /// The line's physical lines joined by CRLF: its source, or the line folded at 75 octets.
    public func folded(keepingSource: Bool = true) -> String {
        if keepingSource, let source { return source }
        return Folding.fold(render())
    }

    public var description: String { render() }
}

extension ContentLine: Hashable {
    public static func == (a: ContentLine, b: ContentLine) -> Bool {
        a.group == b.group && a.name == b.name && a.parameters == b.parameters && a.value == b.value
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(group)
        hasher.combine(name)
        hasher.combine(parameters)
        hasher.combine(value)
    }
}

/// A parameter of a content line: `TYPE=home,work`, `CN="Doe, Jane"`; a vCard 2.1 bare `WORK` has no values.
///
/// Values keep whether they were quoted, so a line written again has the same quotes. RFC 6868's `^n`, `^'`
/// and `^^` stay as written (no property evsync maps has them).
public struct ContentLineParameter: Sendable, Hashable, CustomStringConvertible {
    public struct Value: Sendable, Hashable {
        public let text: String
        public let quoted: Bool

        /// A value, quoted when it must be (it holds `;`, `:` or `,`) or when asked. A `"` or a control
        /// character cannot be in a parameter value: each becomes a space.
        public init(_ text: String, quoted: Bool = false) {
            let clean = String(String.UnicodeScalarView(text.unicodeScalars.map { $0 == "\"" || Self.isControl($0) ? " " : $0 }))
            self.text = clean
            self.quoted = quoted || clean.unicodeScalars.contains { $0 == ";" || $0 == ":" || $0 == "," }
        }

        init(read text: String, quoted: Bool) {
            self.text = text
            self.quoted = quoted
        }

        private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
            (scalar.value < 0x20 && scalar != "\t") || scalar.value == 0x7F
        }
    }

    public let name: String
    public let values: [Value]
    /// Whether the parameter is written `NAME=…` (false only for a bare vCard 2.1 parameter such as `WORK`).
    let hasEquals: Bool

    /// `NAME=value,…`, each value quoted only where it must be.
    public init(_ name: String, _ values: String...) {
        self.init(name: name, values: values.map { Value($0) }, hasEquals: true)
    }

    public init(name: String, values: [Value]) {
        self.init(name: name, values: values, hasEquals: true)
    }

    init(name: String, values: [Value], hasEquals: Bool) {
        self.name = name
        self.values = values
        self.hasEquals = hasEquals
    }

    public func render() -> String {
        guard hasEquals else { return name }
        return name + "=" + values.map { $0.quoted ? "\"" + $0.text + "\"" : $0.text }.joined(separator: ",")
    }

    public var description: String { render() }
}

extension String {
    /// ASCII case-insensitive equality: property and parameter names, and the values compared here, are ASCII.
    func equalsIgnoringCase(_ other: String) -> Bool {
        utf8.count == other.utf8.count && zip(utf8, other.utf8).allSatisfy { a, b in
            a == b || (a | 0x20 == b | 0x20 && (a | 0x20) >= 0x61 && (a | 0x20) <= 0x7A)
        }
    }
}
