public import EventStore
import EventSync
public import Foundation
import HTTPTransport
public import RemoteHTTP

/// Parse Server's REST API as a `SyncRemote`: one class per entity, under the
/// server's mount (`https://host/parse`, the prefix of `/classes/…` and `/batch`).
///
/// Parse is weaker than Kinto where a sync needs it most; this adapter makes up for it:
/// - **Ids.** A record's id is its `nid` field (our UUID, written with every
///   create) when it has one, else its `objectId` (a record a web app made).
///   Where the server allows custom object ids, a create also sets `objectId`
///   to our id and a duplicate fails with code 137; where it does not (code
///   105), the server makes the `objectId` and `nid` keeps the mapping.
/// - **No conditional writes.** Before a batch, the records it touches are
///   read (by `objectId` or `nid`): a create finds its first copy (a push
///   retried after a crash), an update or delete whose base version is no
///   longer the server's is a failed precondition, folded as a conflict. An
///   update then sends only the keys that changed (Parse updates are partial).
/// - **No tombstones.** `liveIDs` pages through every `objectId`; the engine
///   turns what is missing into remote deletions.
/// - **A cursor that can miss writes.** `updatedAt` is stamped when a request
///   arrives, not when it commits, so a pull starts `reReadWindow` seconds
///   behind its cursor, pages by (`updatedAt`, `objectId`) (never `skip`), and
///   the engine drops the versions the log already has.
/// - **Batches** run concurrently on the server: at most 20 writes, each
///   answer matched to its request and taken alone.
public final class ParseRemote: HTTPRemote {
    public let server: URL
    public let address: String
    /// Records asked for per page (the server may cap it at its `maxLimit`: paging goes on until an empty page).
    public var pageSize = 1000
    /// Limits, retries, the watcher and the stop, as every HTTP adapter takes them.
    public var settings = HTTPRemoteSettings() {
        didSet { http.apply(settings) }
    }
    /// Seconds a pull re-reads behind its cursor, for writes stamped before they committed.
    public var reReadWindow = 60.0
    /// Writes per `/batch` (what the JS SDK sends; Parse Server 7 sets no limit).
    public static let batchSize = 20
    /// The field holding evsync's id of a record.
    public static let idField = "nid"
    /// Members of a Parse object that are Parse's (or the id mapping's), never record fields.
    static let reservedFields: Set<String> = ["objectId", "createdAt", "updatedAt", "ACL", idField]

    let http: RetryingClient
    let credentials: ParseCredentials
    /// Whether creates carry our id as `objectId`; nil until the server has said.
    var customObjectIDs: Bool?

    /// - Parameters:
    ///   - serverURL: the server's mount, e.g. `http://127.0.0.1:1337/parse`; `parse+http…` is the same, as
    ///     `address` spells it so that a remembered remote says what it is.
    ///   - credentials: the application id and a REST API key, a session token or the master key.
    ///   - allowingInsecureCredentials: send the keys over plain `http` to a host that is not this machine.
    ///   - settings: limits, retries, the watcher and the stop (`settings`).
    public init(serverURL: String, credentials: ParseCredentials, allowingInsecureCredentials: Bool = false,
                settings: HTTPRemoteSettings = HTTPRemoteSettings()) throws(HTTPRemoteError) {
        let url = try Self.checkedServer(serverURL, allowingInsecureCredentials: allowingInsecureCredentials)
        self.server = url
        self.address = Self.address(of: url)
        self.credentials = credentials
        do {
            self.http = try RetryingClient(server: url, credentials: nil, userAgent: EvsyncVersion.userAgent)
        } catch {
            throw HTTPRemoteError(.failure, error.description)
        }
        http.serverMessage = { ParseAnswer.read($0).message }
        self.settings = settings
        http.apply(settings)
    }

    /// `serverURL` as a user gives it (`parse+` in front or not), checked and without a trailing slash.
    package static func checkedServer(_ serverURL: String, allowingInsecureCredentials: Bool) throws(HTTPRemoteError) -> URL {
        var serverURL = serverURL
        if serverURL.lowercased().hasPrefix("parse+") { serverURL.removeFirst("parse+".count) }
        guard var components = URLComponents(string: serverURL), let scheme = components.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty
        else {
            throw HTTPRemoteError(.invalidRemote, "the remote must be the http(s) URL of a Parse Server mount, like http://127.0.0.1:1337/parse")
        }
        guard components.user == nil, components.password == nil else {
            throw HTTPRemoteError(.invalidRemote, "put credentials in EVSYNC_PARSE_* or --auth-file, not in the remote URL")
        }
        guard components.query == nil, components.fragment == nil else {
            throw HTTPRemoteError(.invalidRemote, "the remote URL must not have a query or fragment")
        }
        if !allowingInsecureCredentials, scheme == "http", !Loopback.isLoopback(host) {
            throw HTTPRemoteError(.invalidRemote, "refusing to send the Parse keys unencrypted over http to \(host), which is not this machine: "
                + "use https (or, accepting that anyone on the way can read them, --allow-insecure-auth or EVSYNC_ALLOW_INSECURE_AUTH=1)")
        }
        while components.path.hasSuffix("/") { components.path.removeLast() }
        guard let url = components.url else { throw HTTPRemoteError(.invalidRemote, "cannot use the remote URL \(serverURL)") }
        return url
    }

    /// How a remembered remote spells the server at `server`: what it is, then its URL.
    package static func address(of server: URL) -> String {
        "parse+" + server.absoluteString
    }

    /// The class an entity lives in: its name, as the tutorial's `Holiday` and `Birthday`.
    public static func className(for entity: EntitySchema) -> String { entity.name }

    // MARK: SyncRemote

    public func prepare(_ entities: [(schema: EntitySchema, since: RemoteCursor?)]) throws {
        for (schema, _) in entities {
            if let reserved = schema.fieldNames.first(where: Self.reservedFields.contains) {
                throw HTTPRemoteError(.invalidData, "\(schema.name) declares the field '\(reserved)', which Parse (or evsync's id mapping) keeps for itself: rename it in the schema")
            }
            let name = Self.className(for: schema)
            guard let first = name.unicodeScalars.first, first.properties.isAlphabetic, first.isASCII,
                  name.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_") })
            else {
                throw HTTPRemoteError(.invalidData, "\(schema.name) is not a valid Parse class name")
            }
        }
    }

    public func batchLimit() -> Int { Self.batchSize }

    /// Parse's versions (`updatedAt`) are stamped when a request arrives, so their order is not the order of the
    /// writes: never take one for older.
    public func isVersion(_ version: RemoteVersion, olderThan other: RemoteVersion) -> Bool { false }

    public var deletionVersion: RemoteVersion { RemoteVersion("deleted") }

    /// The cursor: the last record's `updatedAt` and `objectId`, a space between.
    static func cursor(updatedAt: String, objectID: String) -> RemoteCursor { RemoteCursor(updatedAt + " " + objectID) }

    /// Sends and reads what `ParsePull` decides, page by page.
    public func changes(of entity: EntitySchema, since: RemoteCursor?, onPage: (RemotePage) throws -> Bool) throws {
        let className = Self.className(for: entity)
        var pull = ParsePull(since: since, reReadWindow: reReadWindow)
        var limit = PageLimit(largest: pageSize, cap: http.client.maximumResponseBytes)
        while true {
            let results = try page(of: className, pull, limit: &limit)
            guard let page = pull.page(of: results, schema: entity), try onPage(page) else { return }
        }
    }

    /// The objects of a pull's next page, asked for again with fewer while the answer is over the response cap
    /// (`PageLimit`); one object alone over it comes read without its fields, as unreadable, to be skipped.
    private func page(of className: String, _ pull: ParsePull, limit: inout PageLimit) throws(HTTPRemoteError) -> [FoundObject] {
        while true {
            var size = 0
            let results: [FoundObject]
            do {
                results = try find(className, query: pull.query(pageSize: limit.current), doing: "listing \(className)") { size = $0 }
            } catch {
                guard error.isTooLarge else { throw error }
                if limit.tooLarge() { continue }
                let identity = [URLQueryItem(name: "keys", value: "objectId,updatedAt,\(Self.idField)")]
                let reason = PageLimit.oversizedReason(size: HTTPClient.size(limit.cap))
                return try find(className, query: pull.query(pageSize: 1) + identity, doing: "listing \(className)")
                    .map { FoundObject(fields: $0.fields, unreadable: reason) }
            }
            limit.fit(records: results.count, bytes: size)
            return results
        }
    }

    /// Every live object's id, paged by `objectId` (which never moves, so a live object is never missed).
    public func liveIDs(of entity: EntitySchema) throws -> Set<String>? {
        var ids = Set<String>()
        try listing(of: entity) { page in
            ids.formUnion(page.map(\.id))
            return true
        }
        return ids
    }

    /// Every object of the class, its record id and version (`updatedAt`), a page at a time,
    /// ordered by `objectId` and paged by it (never `skip`): the deletions `liveIDs` finds, and `verify --remote`.
    public var canList: Bool { true }

    public func listing(of entity: EntitySchema, onPage: ([(id: String, version: RemoteVersion)]) throws -> Bool) throws {
        let className = Self.className(for: entity)
        var after: String?
        while true {
            var query = [URLQueryItem(name: "keys", value: "objectId,updatedAt,\(Self.idField)"), URLQueryItem(name: "order", value: "objectId"),
                         URLQueryItem(name: "limit", value: String(pageSize))]
            if let after { query.append(URLQueryItem(name: "where", value: JSONWriter.string(["objectId": ["$gt": .string(after)]]))) }
            let results = try find(className, query: query, doing: "listing the ids of \(className)")
            if results.isEmpty { return }
            // An object without an objectId cannot be paged past: ending the listing there would take every
            // object after it for deleted.
            guard let last = results.last(where: { $0.fields["objectId"]?.stringValue != nil })?.fields["objectId"]?.stringValue else {
                throw HTTPRemoteError(.server, "the server listed objects of \(className) without an objectId")
            }
            let page = results.compactMap { object -> (id: String, version: RemoteVersion)? in
                // An object evsync cannot read whole is listed by the members it could read, so it is never taken for deleted.
                guard let id = Self.recordID(of: object.fields) else { return nil }
                // Every Parse object has an updatedAt; one without is listed all the same, so it is never taken for deleted.
                return (id, RemoteVersion(object.fields["updatedAt"]?.stringValue ?? ""))
            }
            guard try onPage(page) else { return }
            after = last
        }
    }

    public func record(_ id: String, of entity: EntitySchema) throws -> RemoteRecord? {
        try read([id], of: entity).readable[id]?.record
    }

    // MARK: Reading objects

    /// A record as the server holds it, and the object id it is under.
    struct ServerObject {
        var objectID: String
        var record: RemoteRecord
    }

    /// What the server holds for some record ids: the objects evsync can read, and why it cannot read the others.
    struct ServerObjects {
        var readable: [String: ServerObject] = [:]
        var unreadable: [String: String] = [:]
    }

    /// The server's objects for these record ids (by `objectId` or `nid`).
    func read(_ ids: [String], of entity: EntitySchema) throws -> ServerObjects {
        let className = Self.className(for: entity)
        let list = JSONValue.array(ids.map { .string($0) })
        let condition: JSONValue = ["$or": [["objectId": ["$in": list]], [Self.idField: ["$in": list]]]]
        let query = [URLQueryItem(name: "where", value: JSONWriter.string(condition)), URLQueryItem(name: "order", value: "createdAt,objectId"),
                     URLQueryItem(name: "limit", value: String(ids.count * 2 + 10))]
        var objects = ServerObjects()
        for object in try find(className, query: query, doing: "reading \(className) before writing") {
            let fields = object.fields
            if let unreadable = object.unreadable {
                if let id = Self.recordID(of: fields) { objects.unreadable[id] = unreadable }
                continue
            }
            guard let objectID = fields["objectId"]?.stringValue,
                  let record = Self.record(from: fields, schema: entity), objects.readable[record.id] == nil else { continue }
            objects.readable[record.id] = ServerObject(objectID: objectID, record: record)
        }
        return objects
    }

    /// The record id of a Parse object: its `nid` when it holds a valid id, else its `objectId`.
    static func recordID(of object: JSONObject) -> String? {
        if let nid = object[idField]?.stringValue, RecordID.isValid(nid) { return nid }
        guard let objectID = object["objectId"]?.stringValue, RecordID.isValid(objectID) else { return nil }
        return objectID
    }

    /// A Parse object as a record: Parse's own members dropped, typed values as the schema's strings.
    static func record(from object: JSONObject, schema: EntitySchema) -> RemoteRecord? {
        guard let id = recordID(of: object), let updatedAt = object["updatedAt"]?.stringValue else { return nil }
        var fields: JSONObject = [:]
        for (key, value) in object where !reservedFields.contains(key) {
            fields[key] = decode(value, field: key, schema: schema)
        }
        return RemoteRecord(id: id, version: RemoteVersion(updatedAt), fields: fields)
    }
}
