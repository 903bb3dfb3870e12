/// A `BEGIN:NAME` … `END:NAME` component (VCALENDAR, VEVENT, VALARM, VCARD), its lines and its components in order.
///
/// The patch operations change only the lines of the properties they are given and leave every other line
/// and component where it is, as it was read, so that what other clients wrote survives evsync's edits:
///
///     var event = calendar.components(named: "VEVENT")[0]
///     event.replaceLines(named: "SUMMARY", with: [ContentLine("SUMMARY", text: "Bevrijdingsdag")])
///     event.removeLines(named: "DESCRIPTION")
public struct VComponent: Sendable, Hashable {
    /// A line or a nested component, in the order they were read.
    public enum Child: Sendable, Hashable {
        case line(ContentLine)
        case component(VComponent)
    }

    /// The component's name as its BEGIN line writes it (`VEVENT`); compared ignoring case.
    public let name: String
    public var children: [Child]
    /// The BEGIN and END lines as read (their case, their source), or nil for a component made here.
    let begin: ContentLine?
    let end: ContentLine?

    public init(_ name: String, children: [Child] = []) {
        self.init(name: name, children: children, begin: nil, end: nil)
    }

    init(name: String, children: [Child], begin: ContentLine?, end: ContentLine?) {
        self.name = name
        self.children = children
        self.begin = begin
        self.end = end
    }

    public static func == (a: VComponent, b: VComponent) -> Bool { a.name == b.name && a.children == b.children }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(children)
    }

    /// Whether the component is a `name`, ignoring case.
    public func isNamed(_ name: String) -> Bool { self.name.equalsIgnoringCase(name) }

    // MARK: Reading

    /// The component's own lines (not those of nested components), in order.
    public var lines: [ContentLine] {
        children.compactMap { if case .line(let line) = $0 { line } else { nil } }
    }

    /// The lines of the property `name` (ignoring case), in order.
    public func lines(named name: String) -> [ContentLine] { lines.filter { $0.isNamed(name) } }

    /// The first line of the property `name`, if any.
    public func line(named name: String) -> ContentLine? { lines.first { $0.isNamed(name) } }

    /// The nested components (one level down), in order.
    public var components: [VComponent] {
        children.compactMap { if case .component(let component) = $0 { component } else { nil } }
    }

    /// The nested components called `name` (ignoring case), in order.
    public func components(named name: String) -> [VComponent] { components.filter { $0.isNamed(name) } }

    // MARK: Patching

    /// Replaces the lines that match `predicate` by `lines`: the new lines take the place of the first match
    /// and the other matches go. With no match, the new lines are added after the component's last line before
    /// its first nested component (so a VEVENT's new DESCRIPTION comes before its VALARM). Empty `lines` removes.
    /// A new line equal to the old one at its place keeps that one's source: writing what is already there changes no byte.
    public mutating func replaceLines(where predicate: (ContentLine) -> Bool, with lines: [ContentLine]) {
        let old = children.indices.filter { if case .line(let line) = children[$0] { predicate(line) } else { false } }
        let oldLines = old.compactMap { if case .line(let line) = children[$0] { line } else { nil } }
        let new = lines.enumerated().map { index, line in index < oldLines.count && oldLines[index] == line ? oldLines[index] : line }
        let at = old.first ?? insertionIndex
        for index in old.reversed() { children.remove(at: index) }
        children.insert(contentsOf: new.map(Child.line), at: at)
    }

    /// Replaces the lines of the property `name` (ignoring case) by `lines`; see `replaceLines(where:with:)`.
    public mutating func replaceLines(named name: String, with lines: [ContentLine]) {
        replaceLines(where: { $0.isNamed(name) }, with: lines)
    }

    /// Replaces only the first line that matches `predicate` by `line` (nil removes it), or adds `line` where
    /// `replaceLines(where:with:)` would when none matches: for a property of which evsync owns one instance
    /// among several (the first NOTE, the first inline PHOTO), the others staying as they are.
    public mutating func replaceFirstLine(where predicate: (ContentLine) -> Bool, with line: ContentLine?) {
        var found = false
        replaceLines(where: { candidate in
            guard !found, predicate(candidate) else { return false }
            found = true
            return true
        }, with: line.map { [$0] } ?? [])
    }

    /// Removes the lines of the property `name` (ignoring case), leaving everything else where it is.
    public mutating func removeLines(named name: String) {
        replaceLines(named: name, with: [])
    }

    /// Changes the nested components called `name` (ignoring case) in place, in order, through `body`.
    public mutating func updateComponents<E: Error>(named name: String, _ body: (inout VComponent) throws(E) -> Void) throws(E) {
        for index in children.indices {
            guard case .component(var component) = children[index], component.isNamed(name) else { continue }
            try body(&component)
            children[index] = .component(component)
        }
    }

    /// Where a new property line goes: after the last line that comes before the first nested component.
    private var insertionIndex: Int {
        children.firstIndex { if case .component = $0 { true } else { false } } ?? children.count
    }

    // MARK: Writing

    /// The component's physical lines, each ending with CRLF. `keepingSources`: the lines read keep the bytes
    /// they were read from; false writes every line canonically.
    func write(into out: inout String, keepingSources: Bool) {
        out += (begin ?? ContentLine("BEGIN", value: name)).folded(keepingSource: keepingSources) + "\r\n"
        for child in children {
            switch child {
            case .line(let line): out += line.folded(keepingSource: keepingSources) + "\r\n"
            case .component(let component): component.write(into: &out, keepingSources: keepingSources)
            }
        }
        out += (end ?? ContentLine("END", value: name)).folded(keepingSource: keepingSources) + "\r\n"
    }
}
