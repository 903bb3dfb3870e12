public import EventStore
import EventSync
public import Foundation
public import HTTPTransport
public import RemoteHTTP

/// A CalDAV (RFC 4791) and CardDAV (RFC 6352) server as a `SyncRemote`: each entity with a mapping is one
/// collection, a calendar (Holiday, an entity mapped to VEVENT, VTODO or VJOURNAL) or an address book (Birthday,
/// one mapped to VCARD), named by the schema's `x-evsync-collection`.
///
/// - **Discovery** (RFC 6764, RFC 5397): the remote URL (a server root or a principal) is asked for
///   `current-user-principal`, else `/.well-known/caldav` and `/.well-known/carddav` are followed; the principal
///   for `calendar-home-set` and `addressbook-home-set`. A missing collection is made with MKCALENDAR or an
///   extended MKCOL (RFC 5689).
/// - **Ids** (`DAVIDs`): a record's id is its UID (escaped where the id rule refuses it); an item evsync makes
///   lives at the href its UID gives; the version is the ETag, with the href beside it for another client's item
///   at another href (`DAVVersion`).
/// - **Pull** (`DAVRemote+Pull`): `sync-collection` (RFC 6578), bodies by multiget in batches.
/// - **Push** (`DAVRemote+Push`): `PUT` with `If-None-Match: *` or `If-Match`, `DELETE` with `If-Match`; an
///   update patches the server's item (`DAVMapping.write(onto:)`), so another client's lines stay.
public final class DAVRemote: HTTPRemote {
    /// The URL given, without `dav+`.
    public let server: URL
    public let address: String
    /// Limits, retries, the watcher and the stop, as every HTTP adapter takes them.
    public var settings = HTTPRemoteSettings() {
        didSet { http.apply(settings) }
    }
    /// Items asked for per multiget.
    public var multigetBatch = 100
    /// Answers cut short (507, RFC 6578 §3.6) one pull follows before it stops with an error, having kept what they
    /// brought: a server whose chain never ends cannot hold a sync (and its lock) forever. At 100 items an answer,
    /// 100,000 items; the next sync goes on from the last answer's token.
    public var maximumChainedAnswers = 1000
    /// The largest multiget answer read: a larger one is asked for again in halves, down to the one item too large
    /// to hold, which is skipped.
    public var maximumAnswerBytes = XMLReader.maximumBytes
    /// The clock new and changed items are stamped with (DTSTAMP, REV).
    public var now: () -> Date = Date.init

    let http: RetryingClient
    /// The mapping of each entity used so far (`mapping(of:)`).
    private var mappings: [String: any DAVMapping] = [:]
    /// The fields of each entity its mapping leaves out, by entity (`RemoteRecord.localFields`).
    var localFields: [String: Set<String>] = [:]
    /// Resolved collections, by entity name.
    var collections: [String: Collection] = [:]
    /// Another client's items at an href their id does not give, by entity: href key → id (`DAVHrefTable`). Kept in
    /// the adapter's meta (`metaNamespace`), with the cursor.
    var foreign: [String: [String: String]] = [:]
    /// The href tables `restore` gave back, by entity, for `prepare`.
    private var restoredHrefs: [String: [String: String]] = [:]
    /// The ids a pull from an empty token listed, by entity: every live item (`liveIDs`).
    var listed: [String: Set<String>] = [:]
    private var homes: (calendar: URL?, addressBook: URL?)?

    /// A collection on the server: its URL, the href key of its path, what it holds.
    struct Collection {
        var entity: String
        var url: URL
        /// The mapping's component: VCARD in an address book, VEVENT, VTODO or VJOURNAL in a calendar.
        var component: String
        var supportsSync: Bool
        /// Made by this sync: the server had no such collection.
        var created: Bool
        /// Taken from the cursor, unchecked: a 404 sends the pull to discovery.
        var isFromCursor = false
        /// Its `current-user-privilege-set`, when this sync looked at it and the server said (`access(to:)`).
        var privileges: DAVElement?
        /// Whether this sync looked at it (a PROPFIND), so that `privileges` holds what the server said.
        var wasLookedAt = false
        var isCalendar: Bool { component != "VCARD" }
        var key: String { DAVIDs.key(url.path.hasSuffix("/") ? url.path : url.path + "/") }
        var fileExtension: String { isCalendar ? "ics" : "vcf" }
        var contentType: String { isCalendar ? "text/calendar; charset=utf-8" : "text/vcard; charset=utf-8" }
        /// The property that carries an item's body: CalDAV's `calendar-data`, CardDAV's `address-data`.
        var dataElement: String { isCalendar ? "calendar-data" : "address-data" }
        var dataProperty: (String, String) { (isCalendar ? DAVNamespace.caldav : DAVNamespace.carddav, dataElement) }
    }

    /// The schema keyword DAV reads: `x-evsync-dav` (`EntitySchema.remoteOptions`).
    public static let schemaProtocol = "dav"

    /// The entity's mapping: the schema's own `x-evsync-dav` (`SchemaMapping`; for any entity, so that a user's
    /// mapping of Holiday or Birthday wins), else the built-in Holiday's and Birthday's, else nil (left out of a
    /// DAV sync). An `x-evsync-dav` that cannot be used is an error naming the entity and what is wrong.
    public static func mapping(for schema: EntitySchema) throws(HTTPRemoteError) -> (any DAVMapping)? {
        do {
            if let declared = try SchemaMapping.declared(by: schema) { return declared }
        } catch {
            throw HTTPRemoteError(.invalidData, error.reason)
        }
        return builtInMapping(for: schema)
    }

    /// The built-in Holiday and Birthday mappings.
    static func builtInMapping(for schema: EntitySchema) -> (any DAVMapping)? {
        switch schema.name {
        case "Holiday": HolidayMapping(schema: schema)
        case "Birthday": BirthdayMapping(schema: schema)
        default: nil
        }
    }

    /// - Parameters:
    ///   - serverURL: the server's or the principal's URL (`https://dav.example.com/`, `http://127.0.0.1:5232/evsync/`);
    ///     `dav+https://…` is the same, as `address` spells it.
    ///   - credentials: `user:password` (Basic); nil for a server that asks none.
    ///   - allowingInsecureCredentials: send them over plain `http` to a host that is not this machine.
    ///   - settings: limits, retries, the watcher and the stop (`settings`).
    public init(serverURL: String, credentials: Credentials?, allowingInsecureCredentials: Bool = false,
                settings: HTTPRemoteSettings = HTTPRemoteSettings()) throws(HTTPRemoteError) {
        server = try Self.checkedServer(serverURL, sendsCredentials: credentials != nil, allowingInsecureCredentials: allowingInsecureCredentials)
        address = Self.address(of: server)
        do {
            http = try RetryingClient(server: server, credentials: credentials, userAgent: EvsyncVersion.userAgent)
        } catch {
            throw HTTPRemoteError(.failure, error.description)
        }
        self.settings = settings
        http.apply(settings)
    }

    /// `serverURL` as a user gives it (`dav+` in front or not), checked.
    public static func checkedServer(_ serverURL: String, sendsCredentials: Bool = true,
                                     allowingInsecureCredentials: Bool = false) throws(HTTPRemoteError) -> URL {
        var text = serverURL
        if text.lowercased().hasPrefix("dav+") { text.removeFirst("dav+".count) }
        guard var components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty else {
            throw HTTPRemoteError(.invalidRemote, "the remote must be the http(s) URL of a CalDAV/CardDAV server or principal, like https://dav.example.com/")
        }
        guard components.user == nil, components.password == nil else {
            throw HTTPRemoteError(.invalidRemote, "put credentials in EVSYNC_AUTH or --auth-file, not in the remote URL")
        }
        guard components.query == nil, components.fragment == nil else {
            throw HTTPRemoteError(.invalidRemote, "the remote URL must not have a query or fragment")
        }
        if sendsCredentials, !allowingInsecureCredentials, scheme == "http", !Loopback.isLoopback(host) {
            throw HTTPRemoteError(.invalidRemote, "refusing to send credentials unencrypted over http to \(host), which is not this machine: "
                + "use https (or, accepting that anyone on the way can read them, --allow-insecure-auth or EVSYNC_ALLOW_INSECURE_AUTH=1)")
        }
        if !components.path.hasSuffix("/") { components.path += "/" }
        guard let url = components.url else { throw HTTPRemoteError(.invalidRemote, "cannot use the remote URL \(serverURL)") }
        return url
    }

    /// How a remembered remote spells the server: `dav+` and its URL.
    public static func address(of server: URL) -> String {
        "dav+" + server.absoluteString
    }

    // MARK: SyncRemote

    /// Entities without a mapping are left out (the CLI says so in one line). One with an `x-evsync-dav` is held even
    /// when that cannot be used: `prepare` then fails the sync saying why, where leaving it out would hide the mistake.
    public func holds(_ entity: EntitySchema) -> Bool {
        entity.remoteOptions[Self.schemaProtocol] != nil || Self.builtInMapping(for: entity) != nil
    }

    /// The store keeps the href tables under `dav:` (`DAVHrefTable`), beside the cursors.
    public var metaNamespace: String? { "dav" }

    public func restore(_ state: String, of entity: EntitySchema) {
        restoredHrefs[entity.name] = DAVHrefTable.read(state)
    }

    public func prepare(_ entities: [(schema: EntitySchema, since: RemoteCursor?)]) throws {
        for (schema, since) in entities {
            let cursor = since.map(DAVCursor.init)
            // A store written before the table had its own place has it in the cursor: read from there this once.
            foreign[schema.name] = cursor.map { restoredHrefs[schema.name] ?? $0.legacyHrefs } ?? [:]
            guard let mapping = try mapping(of: schema) else { continue }
            if let url = cursor?.collection, collections[schema.name] == nil {
                collections[schema.name] = Collection(entity: schema.name, url: url, component: mapping.component,
                                                      supportsSync: true, created: false, isFromCursor: true)
            }
        }
    }

    /// Writes are sent one by one; this many make one batch of the engine's.
    public func batchLimit() -> Int { 50 }

    public var deletionVersion: RemoteVersion { RemoteVersion("deleted") }

    /// The sync token is not a version.
    public func pullFloor(of cursor: RemoteCursor) -> RemoteVersion? { nil }

    /// The ids a pull from the empty token listed; nil after a collection this sync had to make, which the engine
    /// checks against a listing anyway (`isRecreated`): the records the server lost are counted once.
    public func liveIDs(of entity: EntitySchema) throws -> Set<String>? {
        collections[entity.name]?.created == true ? nil : listed[entity.name]
    }

    /// The entity's mapping, made once: `verify --remote` lists without a `prepare`.
    func mapping(of entity: EntitySchema) throws(HTTPRemoteError) -> (any DAVMapping)? {
        if let known = mappings[entity.name] { return known }
        let mapping = try Self.mapping(for: entity)
        mappings[entity.name] = mapping
        localFields[entity.name] = mapping.map { Set(entity.fieldNames).subtracting($0.mappedFields) } ?? []
        return mapping
    }

    // MARK: Collections

    /// The entity's collection, found (discovery on first use) or made.
    func collection(for entity: EntitySchema) throws -> Collection {
        if let known = collections[entity.name] { return known }
        guard let mapping = try mapping(of: entity) else {
            throw HTTPRemoteError(.invalidData, "\(entity.name) has no CalDAV/CardDAV mapping")
        }
        let isCalendar = mapping.component != "VCARD"
        let (calendarHome, addressBookHome) = try discoverHomes()
        guard let home = isCalendar ? calendarHome : addressBookHome else {
            if let answer = notDAV(server) {
                throw HTTPRemoteError(.server, "\(server.absoluteString) is not a CalDAV/CardDAV server (\(answer)): the remote URL is wrong")
            }
            throw HTTPRemoteError(.invalidRemote, "the server at \(server.absoluteString) names no \(isCalendar ? "calendar-home-set (CalDAV)" : "addressbook-home-set (CardDAV)") for this account")
        }
        let name = entity.remoteName ?? entity.name.lowercased()
        let segment = name.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? name
        guard let url = URL(string: segment + "/", relativeTo: home)?.absoluteURL else {
            throw HTTPRemoteError(.invalidData, "\(entity.name)'s collection name '\(name)' cannot be a URL")
        }
        var collection = Collection(entity: entity.name, url: url, component: mapping.component, supportsSync: true, created: false)
        if try !look(at: &collection) {
            do {
                try make(collection, name: name)
            } catch let error as HTTPRemoteError where error.status != nil {
                // Made all the same when its answer was lost on the way and the retry refused (Radicale 409, Xandikos
                // 403), or when another client made it in between: either way it is there now.
                guard try look(at: &collection) else { throw error }
            }
            collection.created = true
        }
        collections[entity.name] = collection
        return collection
    }

    /// Whether the collection exists, and what it supports (`supportsSync`); one that is not of the wanted kind is an error.
    private func look(at collection: inout Collection) throws -> Bool {
        let url = collection.url
        collection.wasLookedAt = true
        let answer = try send(HTTPRequest(method: "PROPFIND", url: url, headers: [("Depth", "0")], body: Self.collectionPropfind, contentType: Self.xml),
                              doing: "looking for the collection \(url.path)")
        let properties = answer.status == 207 ? try multistatus(answer, doing: "looking for the collection \(url.path)").responses.first : nil
        // Xandikos answers a PROPFIND of nothing 207, with 404 as the response's own status.
        switch properties?.status == 404 ? 404 : answer.status {
        case 207:
            let reports = properties?.property(DAVNamespace.dav, "supported-report-set")
            // A server that lists its reports and not sync-collection has none; one that lists nothing is asked anyway.
            if let reports, !reports.children.isEmpty {
                collection.supportsSync = Self.contains(reports, DAVNamespace.dav, "sync-collection")
            }
            collection.privileges = properties?.property(DAVNamespace.dav, "current-user-privilege-set")
            let types = properties?.property(DAVNamespace.dav, "resourcetype")
            let wanted = collection.isCalendar ? (DAVNamespace.caldav, "calendar") : (DAVNamespace.carddav, "addressbook")
            guard let types, types.child(wanted.0, wanted.1) != nil else {
                throw HTTPRemoteError(.invalidRemote, "\(url.path) on the server is not \(collection.isCalendar ? "a calendar" : "an address book")")
            }
            return true
        case 404:
            return false
        default:
            throw HTTPRemoteError(.server, "the server answered HTTP \(answer.status) when asked for the collection \(url.path)", status: answer.status)
        }
    }

    private func make(_ collection: Collection, name: String) throws {
        let body = collection.isCalendar
            ? #"<C:mkcalendar xmlns="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><set><prop><displayname>\#(Self.escape(name))</displayname><C:supported-calendar-component-set><C:comp name="\#(collection.component)"/></C:supported-calendar-component-set></prop></set></C:mkcalendar>"#
            : #"<mkcol xmlns="DAV:" xmlns:A="urn:ietf:params:xml:ns:carddav"><set><prop><resourcetype><collection/><A:addressbook/></resourcetype><displayname>\#(Self.escape(name))</displayname></prop></set></mkcol>"#
        let answer = try send(HTTPRequest(method: collection.isCalendar ? "MKCALENDAR" : "MKCOL", url: collection.url, body: Array(body.utf8),
                                          contentType: Self.xml), doing: "creating \(collection.url.path)")
        guard (200..<300).contains(answer.status) else {
            throw HTTPRemoteError(.server, "the server refused to create \(collection.url.path): HTTP \(answer.status)", status: answer.status)
        }
    }

    private static func contains(_ element: DAVElement, _ namespace: String, _ name: String) -> Bool {
        element.isNamed(namespace, name) || element.children.contains { contains($0, namespace, name) }
    }

    /// The calendar and address-book homes: the remote URL's principal, else the one the well-known URLs lead to.
    private func discoverHomes() throws -> (URL?, URL?) {
        if let homes { return homes }
        var found: (URL?, URL?) = (nil, nil)
        var tried: Set<String> = []
        for start in [server, URL(string: "/.well-known/caldav", relativeTo: server)?.absoluteURL,
                      URL(string: "/.well-known/carddav", relativeTo: server)?.absoluteURL].compactMap({ $0 }) {
            guard found.0 == nil || found.1 == nil else { break }
            guard let principal = try principal(from: start), tried.insert(principal.absoluteString).inserted else { continue }
            let homes = try homeSets(of: principal)
            found = (found.0 ?? homes.0, found.1 ?? homes.1)
        }
        // A server without current-user-principal (RFC 5397 came late): the URL given may be the principal itself.
        if found.0 == nil, found.1 == nil, let homes = try? homeSets(of: server) { found = homes }
        homes = found
        return found
    }

    /// The `current-user-principal` that `url` names, following redirects (a well-known URL's); nil when none.
    private func principal(from url: URL) throws -> URL? {
        var url = url
        for _ in 0..<5 {
            let answer = try send(HTTPRequest(method: "PROPFIND", url: url, headers: [("Depth", "0")], body: Self.principalPropfind, contentType: Self.xml),
                                  doing: "discovering the account at \(url.path)")
            if [301, 302, 303, 307, 308].contains(answer.status), let location = answer.headers["location"],
               let next = try link(location, from: url, naming: "a redirect (HTTP \(answer.status)) of \(url.path)") {
                url = next
                continue
            }
            guard answer.status == 207 else { return nil }
            let response = try multistatus(answer, doing: "discovering the account").responses.first
            guard let href = response?.property(DAVNamespace.dav, "current-user-principal")?.hrefs.first else { return nil }
            return try link(href, from: url, naming: "the current-user-principal")
        }
        return nil
    }

    private func homeSets(of principal: URL) throws -> (URL?, URL?) {
        let answer = try send(HTTPRequest(method: "PROPFIND", url: principal, headers: [("Depth", "0")], body: Self.principalPropfind, contentType: Self.xml),
                              doing: "reading the principal \(principal.path)")
        guard answer.status == 207 else {
            throw HTTPRemoteError(.server, "the server answered HTTP \(answer.status) when asked for the principal \(principal.path)", status: answer.status)
        }
        let response = try multistatus(answer, doing: "reading the principal").responses.first
        func home(_ namespace: String, _ name: String) throws(HTTPRemoteError) -> URL? {
            guard let href = response?.property(namespace, name)?.hrefs.first else { return nil }
            return try link(href, from: principal, naming: "the \(name)")
        }
        return (try home(DAVNamespace.caldav, "calendar-home-set"), try home(DAVNamespace.carddav, "addressbook-home-set"))
    }

    // MARK: Requests

    static let xml = "application/xml; charset=utf-8"

    static let principalPropfind = Array(#"<propfind xmlns="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav" xmlns:A="urn:ietf:params:xml:ns:carddav"><prop><current-user-principal/><C:calendar-home-set/><A:addressbook-home-set/></prop></propfind>"#.utf8)
    static let collectionPropfind = Array(
        #"<propfind xmlns="DAV:"><prop><resourcetype/><supported-report-set/><current-user-privilege-set/></prop></propfind>"#.utf8)

    /// Text for an XML element's content.
    static func escape(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(character)
            }
        }
        return out
    }

    /// A URL the server names in discovery (a redirect's `Location`, the principal, a home set), resolved against
    /// `base`; nil when it is no URL. One on another origin than the server given is refused, not followed: the
    /// credentials go nowhere else, and a user who trusts that server gives it as the remote (docs/decisions).
    func link(_ text: String, from base: URL, naming what: String) throws(HTTPRemoteError) -> URL? {
        guard let url = URL(string: text, relativeTo: base)?.absoluteURL else { return nil }
        guard let origin = Origin(server), Origin(url) == origin else {
            throw HTTPRemoteError(.server, "the server at \(server.absoluteString) points \(what) to another server, "
                + "\(Origin(url)?.description ?? HTTPClient.describe(url)): refusing to follow it, as credentials go only to \(Origin(server)?.description ?? "the server given")")
        }
        return url
    }

    /// An href from the server as a URL to send to, when it names a member inside the collection: resolved against
    /// the collection, on its origin, under its path, no segment of the rest empty, `.` or `..` or holding a `/`
    /// once percent-decoded (a server may decode before it resolves). Anything else is refused, concerning that
    /// item alone: no request of evsync's reads or writes outside the collection it syncs.
    func url(of href: String, in collection: Collection) throws(HTTPRemoteError) -> URL {
        func outside(_ why: String) -> HTTPRemoteError {
            HTTPRemoteError(.server, "\(href) is not inside the collection \(collection.url.path): \(why)", concernsOneItem: true)
        }
        guard let url = URL(string: href, relativeTo: collection.url)?.absoluteURL,
              let path = URLComponents(url: url, resolvingAgainstBaseURL: true)?.percentEncodedPath,
              let base = URLComponents(url: collection.url, resolvingAgainstBaseURL: true)?.percentEncodedPath else {
            throw outside("it is not a URL")
        }
        guard let origin = Origin(url), origin == Origin(collection.url) else {
            throw outside("it is on another server, \(Origin(url)?.description ?? HTTPClient.describe(url))")
        }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).map { $0.removingPercentEncoding }
        let baseSegments = base.split(separator: "/", omittingEmptySubsequences: false).map { $0.removingPercentEncoding }.dropLast()
        if segments.contains(where: { $0 == nil || $0 == "." || $0 == ".." }) {
            throw outside("it has a '.' or '..' segment, or an invalid percent-encoding")
        }
        let rest = segments.dropFirst(baseSegments.count)
        guard segments.starts(with: baseSegments), !rest.isEmpty, !rest.contains(where: { $0?.isEmpty != false || $0?.contains("/") != false }) else {
            throw outside("its path leads elsewhere")
        }
        return url
    }

    /// Sends with the retrying client's retries; a refused login is a failure at once, any other answer the caller's to read.
    func send(_ request: HTTPRequest, doing what: String) throws(HTTPRemoteError) -> HTTPResponse {
        let response: HTTPResponse
        do {
            response = try http.send(request)
        } catch {
            throw HTTPRemoteError(error)
        }
        if response.status == 401 {
            if let answer = notDAV(request.url) {
                throw HTTPRemoteError(.server, "\(HTTPClient.describe(request.url)) is not a CalDAV/CardDAV server (\(answer)): "
                    + "the remote URL is wrong, not the credentials", status: 401)
            }
            throw HTTPRemoteError(.unauthorized, "the server refused the credentials while \(what) (HTTP 401)", status: 401)
        }
        return response
    }

    /// What an `OPTIONS` request answered when it does not say `DAV:` (every CalDAV and CardDAV server
    /// does, RFC 4918 §10.1); nil when it does, or when nothing answered.
    func notDAV(_ url: URL) -> String? {
        guard let answer = ProtocolProbe.answer(HTTPRequest(method: "OPTIONS", url: url), userAgent: EvsyncVersion.userAgent),
              answer.status != 401 else { return nil }
        return answer.headers["dav"] == nil ? "OPTIONS answered HTTP \(answer.status) without a DAV header" : nil
    }

    func multistatus(_ response: HTTPResponse, doing what: String) throws(HTTPRemoteError) -> Multistatus {
        do {
            return try Multistatus(parsing: response.body)
        } catch {
            throw HTTPRemoteError(.server, "the server's answer to \(what) is not a readable multistatus: \(error)", isUnreadable: true)
        }
    }
}
