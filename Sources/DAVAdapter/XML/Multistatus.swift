/// XML namespaces of WebDAV, CalDAV and CardDAV.
public enum DAVNamespace {
    public static let dav = "DAV:"
    public static let caldav = "urn:ietf:params:xml:ns:caldav"
    public static let carddav = "urn:ietf:params:xml:ns:carddav"
}

/// A `207 Multi-Status` answer (RFC 4918 §13): one response per resource, each either a status of its own (a
/// removed member in a sync-collection report, RFC 6578 §3.5: 404; a truncated answer, §3.6: 507 on the request
/// URI) or properties grouped by the status they were found with; and, for a sync-collection REPORT, the new
/// sync token.
public struct Multistatus: Sendable, Hashable {
    public struct Response: Sendable, Hashable {
        /// The resource, as the server spelled it (percent-encoded; a path, or a whole URL).
        public var href: String
        /// The response's own status, when it has one instead of properties.
        public var status: Int?
        /// Properties found (status 2xx), by expanded name.
        public var properties: [DAVElement] = []
        /// Properties asked for and not found or refused, with their statuses.
        public var failedProperties: [(name: DAVElement, status: Int)] = []
        /// RFC 4918's `DAV:error` of the response: the precondition it names (`no-uid-conflict`), if any.
        public var error: DAVElement?

        public func property(_ namespace: String, _ name: String) -> DAVElement? {
            properties.first { $0.isNamed(namespace, name) }
        }

        public static func == (lhs: Response, rhs: Response) -> Bool {
            lhs.href == rhs.href && lhs.status == rhs.status && lhs.properties == rhs.properties && lhs.error == rhs.error
                && lhs.failedProperties.map(\.name) == rhs.failedProperties.map(\.name)
                && lhs.failedProperties.map(\.status) == rhs.failedProperties.map(\.status)
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(href)
            hasher.combine(status)
            hasher.combine(properties)
        }
    }

    public var responses: [Response]
    /// Responses left out as malformed, each why in one line (one without an href, a status that is not an HTTP
    /// status line): a reader names them as skipped, never takes them for success nor drops them silently.
    public var malformed: [String] = []
    /// RFC 6578's `DAV:sync-token`, for a sync-collection REPORT.
    public var syncToken: String?

    /// Reads an answer's body.
    /// - Throws: `XMLReadError` for a body that is not XML, or one whose root is not `DAV:multistatus`.
    public init(parsing bytes: [UInt8]) throws(XMLReadError) {
        let root = try XMLReader.parse(bytes)
        guard root.isNamed(DAVNamespace.dav, "multistatus") else {
            throw XMLReadError(offset: 0, reason: "the answer is <\(root.name)> in namespace '\(root.namespace)', not a DAV:multistatus")
        }
        syncToken = root.child(DAVNamespace.dav, "sync-token").map { $0.text.trimmed }
        responses = []
        for element in root.children(DAVNamespace.dav, "response") {
            // RFC 4918 allows several hrefs with one status; each is a response of its own here.
            let hrefs = element.children(DAVNamespace.dav, "href").map { $0.text.trimmed }.filter { !$0.isEmpty }
            guard !hrefs.isEmpty else {
                malformed.append("a <response> without an <href>")
                continue
            }
            let statuses = ([element] + element.children(DAVNamespace.dav, "propstat")).compactMap { $0.child(DAVNamespace.dav, "status")?.text }
            if let bad = statuses.first(where: { Self.statusCode($0) == nil }) {
                malformed.append("\(hrefs[0]): its status '\(bad.trimmed.prefix(40))' is not an HTTP status line")
                continue
            }
            var response = Response(href: hrefs[0])
            response.status = element.child(DAVNamespace.dav, "status").flatMap { Self.statusCode($0.text) }
            response.error = element.child(DAVNamespace.dav, "error")?.children.first
            for propstat in element.children(DAVNamespace.dav, "propstat") {
                // RFC 4918 requires a status in a propstat; one without is taken for the properties' success.
                let status = propstat.child(DAVNamespace.dav, "status").flatMap { Self.statusCode($0.text) } ?? 200
                let properties = propstat.child(DAVNamespace.dav, "prop")?.children ?? []
                if (200..<300).contains(status) {
                    response.properties += properties
                } else {
                    response.failedProperties += properties.map { ($0, status) }
                }
            }
            for href in hrefs {
                response.href = href
                responses.append(response)
            }
        }
    }

    /// `HTTP/1.1 404 Not Found` → 404; nil for anything else.
    public static func statusCode(_ line: String) -> Int? {
        let parts = line.trimmed.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/"), parts[1].count == 3, parts[1].allSatisfy(\.isASCII),
              let code = Int(parts[1]), (100..<600).contains(code) else { return nil }
        return code
    }
}

extension DAVElement {
    /// The hrefs inside (a `current-user-principal`, a `calendar-home-set`).
    public var hrefs: [String] {
        children(DAVNamespace.dav, "href").map { $0.text.trimmed }.filter { !$0.isEmpty }
    }
}

extension String {
    var trimmed: String {
        var scalars = Substring(self).unicodeScalars
        while let first = scalars.first, first == " " || first == "\t" || first == "\n" || first == "\r" { scalars.removeFirst() }
        while let last = scalars.last, last == " " || last == "\t" || last == "\n" || last == "\r" { scalars.removeLast() }
        return String(scalars)
    }
}
