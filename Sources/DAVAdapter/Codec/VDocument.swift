/// An iCalendar or vCard text: its top-level components (one VCALENDAR, or one or more VCARDs), in order.
///
///     let document = try VDocument(parsing: body)
///     document.serialized() == body      // when body was CRLF-folded at 75 octets, or had any folds at all
///
/// Reading follows RFC 5545 §3.1 and RFC 6350 §3.2 and forgives what servers and clients are seen to send: bare
/// LF line ends, a UTF-8 byte order mark, blank lines, folds at any width, even folds inside a UTF-8 sequence.
/// Writing uses CRLF. Each line read is written as the bytes it was read from (with CRLF line ends), so an item
/// that is only read and written again keeps its lines, their order, their parameters and their folds; lines
/// made or changed here are folded at 75 octets.
public struct VDocument: Sendable, Hashable {
    public var components: [VComponent]

    /// How deep components may nest (VCALENDAR › VEVENT › VALARM is 3): deeper input is refused, not recursed into.
    public static let maxDepth = 32

    public init(_ components: [VComponent]) {
        self.components = components
    }

    /// Reads a text. Throws `VCodecError` (with the line and the reason) for anything that is not iCalendar or vCard.
    public init(parsing text: String) throws(VCodecError) {
        try self.init(parsing: Array(text.utf8))
    }

    /// Reads UTF-8 bytes, as a server sends them.
    public init(parsing bytes: [UInt8]) throws(VCodecError) {
        self.components = try VParser.parse(bytes)
    }

    /// The top-level components called `name` (ignoring case).
    public func components(named name: String) -> [VComponent] { components.filter { $0.isNamed(name) } }

    /// The text, CRLF after every line. `keepingSources: false` writes every line canonically, folded at 75 octets.
    public func serialized(keepingSources: Bool = true) -> String {
        var out = ""
        for component in components { component.write(into: &out, keepingSources: keepingSources) }
        return out
    }
}
