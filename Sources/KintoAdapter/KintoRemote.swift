public import EventStore
import EventSync
public import Foundation
import Synchronization
public import HTTPTransport
public import RemoteHTTP

/// The Kinto HTTP API (v1) as a `SyncRemote`: one bucket, one collection per entity.
///
/// What is Kinto's stays here: a record's version is its `last_modified`
/// (an integer), the pull cursor is the newest `last_modified` pulled, an
/// entity's collection is its schema's `x-evsync-collection` or its name
/// lower-cased and pluralised, and `id`, `last_modified`, `deleted` and
/// `schema` are Kinto's own members, never record fields.
///
/// - Pull: `GET …/records?_sort=last_modified&_since=N&_limit=…`, following
///   `Next-Page`; with a known cursor the first request carries
///   `If-None-Match`, so an unchanged collection costs one 304.
/// - Push: `POST /batch` of conditional `PUT`/`DELETE`s (`If-None-Match: *`,
///   `If-Match`), at most the server's `batch_max_requests` each.
/// - Missing bucket and collections are created on first use.
public final class KintoRemote: HTTPRemote {
    /// The server root, e.g. `http://127.0.0.1:8888/v1`.
    public let server: URL
    public let bucket: String
    public let address: String
    /// Records per page when pulling.
    public var pageSize = 1000
    /// Limits, retries, the watcher and the stop, as every HTTP adapter takes them.
    public var settings = HTTPRemoteSettings() {
        didSet { http.apply(settings) }
    }
    /// Ask the server for the number of records first (one HEAD request), to show progress.
    public var wantsTotals = false
    /// How far behind the server's clock the pull cursor stays, in milliseconds.
    ///
    /// Kinto stamps a record when its transaction writes it, not when it
    /// commits: on PostgreSQL below SERIALIZABLE, a record stamped before one
    /// we have pulled can become visible after, below our cursor, where `_since`
    /// never looks again. So the next pull starts from the newest record read,
    /// but no later than the server's clock (its `Date`) minus this window
    /// (`PullPosition`; records we cannot hold are reported once all the same): for
    /// that long after a change, each pull reads it again (the engine writes
    /// nothing for a version the log already has), then the cursor catches up
    /// and an unchanged collection costs one `304` again. 10 s is 2.5 times the
    /// longest batch request (which outlasts its transaction) Kinto logged while 20
    /// stores synced at once on a loaded machine (3.9 s, docs/performance-log.md), and
    /// short enough that the re-reading stops soon after a change.
    /// (The CLI's debug builds set it from `EVSYNC_SETTLE_WINDOW_MS`, so that a test does not depend on its own speed.)
    public var settleWindow: Int64 = 10_000

    /// Every request but those `prepare` sends at once goes through it (KintoHTTP.swift).
    let http: RetryingClient
    let credentials: Credentials?
    private var cachedBatchLimit: Int?
    /// The server's root document (`GET /v1/`: settings, capabilities, user), read once.
    private(set) var cachedRoot: JSONValue?
    /// First responses fetched ahead by `willPull`, by request URL.
    private var prefetched: [URL: HTTPResponse] = [:]
    /// The bucket each entity was last pulled from (`restore`), by entity name; none stored: the remote's own.
    private var pulledFrom: [String: String] = [:]
    /// This account's permissions, by bucket, as `access(to:)` read them (KintoAccess.swift); forgotten when a pull creates anything.
    var permissionsByBucket: [String: KintoPermissions] = [:]
    /// The store's scopes, as Kinto filters, by entity name (`setScope`, KintoScope.swift).
    var scopes: [String: [URLQueryItem]] = [:]

    /// - Parameters:
    ///   - bucketURL: the bucket's URL, e.g. `http://127.0.0.1:8888/v1/buckets/evsync`.
    ///   - credentials: the account's `user:password` (Basic auth); nil for a server that needs none.
    ///   - allowingInsecureCredentials: send `credentials` over plain `http` to a
    ///     host that is not this machine, where anyone on the way can read them.
    ///     Refused unless this is true (the URL is checked before anything is sent).
    ///   - settings: limits, retries, the watcher and the stop (`settings`).
    public init(bucketURL: String, credentials: Credentials?, allowingInsecureCredentials: Bool = false,
                settings: HTTPRemoteSettings = HTTPRemoteSettings()) throws(HTTPRemoteError) {
        let (server, bucket) = try Self.parse(bucketURL)
        if credentials != nil, !allowingInsecureCredentials, server.scheme == "http", let host = server.host, !Loopback.isLoopback(host) {
            throw HTTPRemoteError(.invalidRemote, "refusing to send credentials unencrypted over http to \(host), which is not this machine: "
                + "use https (or, accepting that anyone on the way can read them, --allow-insecure-auth or EVSYNC_ALLOW_INSECURE_AUTH=1)")
        }
        self.server = server
        self.bucket = bucket
        self.address = server.absoluteString + "/buckets/" + bucket
        self.credentials = credentials
        do {
            self.http = try RetryingClient(server: server, credentials: credentials, userAgent: EvsyncVersion.userAgent)
        } catch {
            throw HTTPRemoteError(.failure, error.description)
        }
        http.pauseHeader = "backoff"
        http.serverMessage = Self.message(in:)
        self.settings = settings
        http.apply(settings)
    }

    /// Splits a bucket URL into the server root and the bucket id, refusing anything that would leak or mislead.
    static func parse(_ text: String) throws(HTTPRemoteError) -> (URL, String) {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty
        else {
            throw HTTPRemoteError(.invalidRemote, "the remote must be an http(s) URL of a Kinto bucket, like http://127.0.0.1:8888/v1/buckets/evsync")
        }
        guard components.user == nil, components.password == nil else {
            throw HTTPRemoteError(.invalidRemote, "put credentials in EVSYNC_AUTH or --auth-file, not in the remote URL")
        }
        guard components.query == nil, components.fragment == nil else {
            throw HTTPRemoteError(.invalidRemote, "the remote URL must not have a query or fragment")
        }
        var segments = components.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard segments.count >= 2, segments[segments.count - 2] == "buckets", RecordID.isValid(segments[segments.count - 1]) else {
            throw HTTPRemoteError(.invalidRemote, "the remote must end in /buckets/<bucket id>, like http://127.0.0.1:8888/v1/buckets/evsync")
        }
        let bucket = segments.removeLast()
        segments.removeLast()
        var root = URLComponents()
        root.scheme = scheme
        root.host = host
        root.port = components.port
        root.path = segments.isEmpty ? "" : "/" + segments.joined(separator: "/")
        guard let url = root.url else { throw HTTPRemoteError(.invalidRemote, "cannot use the remote URL \(text)") }
        return (url, bucket)
    }

    // MARK: URLs, built from validated path segments and encoded query items

    func url(_ segments: [String], query: [URLQueryItem] = []) -> URL {
        var components = URLComponents(url: server, resolvingAgainstBaseURL: false) ?? URLComponents()
        components.path = server.path + "/" + segments.joined(separator: "/")
        components.queryItems = query.isEmpty ? nil : query
        return components.url ?? server
    }

    func path(_ segments: [String]) -> String {
        "/" + segments.joined(separator: "/")
    }


    // MARK: SyncRemote

    public func batchLimit() throws(HTTPRemoteError) -> Int {
        if let cachedBatchLimit { return cachedBatchLimit }
        let root = try serverRoot()
        if credentials != nil, root.objectValue?["user"] == nil {
            throw HTTPRemoteError(.unauthorized, "the server at \(address) did not accept the credentials")
        }
        let limit = root.objectValue?["settings"]?.objectValue?["batch_max_requests"]?.int64Value.map(Int.init) ?? 25
        cachedBatchLimit = max(1, limit)
        return max(1, limit)
    }

    /// The server's root document, read once per remote.
    func serverRoot() throws(HTTPRemoteError) -> JSONValue {
        if let cachedRoot { return cachedRoot }
        let response = try send(HTTPRequest(method: "GET", url: url([""])))
        try expect(response, [200], doing: "reading the server's settings")
        let root = try json(response, doing: "reading the server's settings")
        cachedRoot = root
        return root
    }

    /// A bucket's history list (`kinto.plugins.history`).
    func historyURL(of bucket: String, query: [URLQueryItem]) -> URL {
        url(["buckets", bucket, "history"], query: query)
    }

    /// A list request of `collection`: changes after `listing.since`, oldest first, `limit` at most (`pageSize`);
    /// with `onlyVersions`, their ids and versions alone (for one record too large to read, `list`).
    private func changesRequest(_ collection: KintoCollection, _ listing: KintoPull.Listing, limit: Int? = nil,
                                onlyVersions: Bool = false) -> HTTPRequest {
        var query = [URLQueryItem(name: "_sort", value: "last_modified"), URLQueryItem(name: "_limit", value: String(limit ?? pageSize))]
        if let since = listing.since { query.append(URLQueryItem(name: "_since", value: String(since))) }
        query += scopeFilters(of: collection.entity)
        if onlyVersions { query.append(URLQueryItem(name: "_fields", value: "id,last_modified")) }
        var request = HTTPRequest(method: "GET", url: url(collection.recordSegments(), query: query))
        if let etag = listing.ifNoneMatch { request.headers.append(("If-None-Match", "\"\(etag)\"")) }
        return request
    }

    /// Refuses an entity Kinto cannot hold, then sends the first request of
    /// every collection at once, each on its own connection: a sync with
    /// nothing to do then costs one round trip, not one per collection. Only
    /// usable answers are kept; anything else is sent again, with retries, by `changes`.
    public func prepare(_ entities: [(schema: EntitySchema, since: RemoteCursor?)]) throws {
        for (schema, _) in entities {
            if let reserved = schema.fieldNames.first(where: Self.reservedFields.contains) {
                throw HTTPRemoteError(.invalidData, "\(schema.name) declares the field '\(reserved)', which Kinto keeps for itself: rename it in the schema")
            }
            let collection = place(of: schema)
            guard RecordID.isValid(collection.name) else {
                throw HTTPRemoteError(.invalidData, "\(schema.name)'s collection name '\(collection.name)' is not a valid Kinto id")
            }
            if let options = schema.remoteOptions[Self.schemaProtocol],
               options.objectValue?.keys.allSatisfy({ $0 == "bucket" }) != true || !RecordID.isValid(Self.bucket(named: schema) ?? "") {
                throw HTTPRemoteError(.invalidData, "\(schema.name)'s schema: x-evsync-kinto takes {\"bucket\": ID}, a Kinto bucket id, not \(JSONWriter.string(options))")
            }
        }
        guard entities.count > 1 else { return }
        let requests = entities.map { changesRequest(place(of: $0.schema), KintoPull.Listing(from: moved($0.schema) ? nil : $0.since)) }
        let (credentials, limits, server) = (credentials, settings.transferLimits, server)
        let outcomes = Mutex<[Int: Result<HTTPResponse, TransportError>]>([:])
        DispatchQueue.concurrentPerform(iterations: requests.count) { index in
            guard let client = try? HTTPClient(server: server, credentials: credentials) else { return }
            client.limits = limits
            let outcome = Result { () throws(TransportError) in try client.send(requests[index]) }
            outcomes.withLock { $0[index] = outcome }
        }
        for (index, outcome) in outcomes.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
            let request = requests[index]
            switch outcome {
            case .success(let response):
                report(request, status: response.status, failure: nil)
                // Kept only if small: a page of large records (up to the response cap) waiting for its turn while
                // another collection is pulled would add its size to the pull's memory; it is fetched again then.
                if response.status == 200 || response.status == 304, response.body.count <= Self.largestPrefetch {
                    prefetched[request.url] = response
                }
            case .failure(let error):
                report(request, status: nil, failure: error.description)
                // One that would fail again (an https URL on a plain http server) fails the sync now, not after another
                // wait; a page too large is asked for again smaller by `changes`.
                if !error.isRetryable, error.kind != .tooLarge { throw HTTPRemoteError(.server, error.description) }
            }
        }
    }

    /// A page from another bucket than the one stored for its entity (none stored: the remote's) is stored with that
    /// bucket, so that a schema naming another bucket is noticed.
    public var metaNamespace: String? { "kinto" }

    public func restore(_ state: String, of entity: EntitySchema) {
        pulledFrom[entity.name] = state
    }

    /// Whether the entity's records were last pulled from another bucket than its schema now names.
    func moved(_ entity: EntitySchema) -> Bool {
        (pulledFrom[entity.name] ?? bucket) != place(of: entity).bucket
    }

    /// The largest first answer `prepare` keeps for `changes`.
    static let largestPrefetch = 4 << 20

    /// Sends and reads what `KintoPull` decides (the rules are there), page by page.
    public func changes(of entity: EntitySchema, since: RemoteCursor?, onPage: (RemotePage) throws -> Bool) throws {
        let collection = place(of: entity)
        var pull = KintoPull(since: since, settleWindow: settleWindow)
        if since != nil, moved(entity) { pull.readFromStartAfterMove() }
        var limit = PageLimit(largest: pageSize, cap: http.client.maximumResponseBytes)
        var listing = pull.listing
        let first = changesRequest(collection, listing)
        var answer = try prefetched.removeValue(forKey: first.url).map { ListAnswer(response: $0, limit: pageSize, isOversized: false) }
            ?? list(collection, listing, limit: &limit)
        opening: while true {
            switch pull.open(status: answer.response.status, etag: answer.response.headers["etag"].flatMap(KintoPull.timestamp(fromETag:))) {
            case .create:
                pull.created(try createForPull(collection, pulledBefore: since != nil))
                answer = try list(collection, listing, limit: &limit)
            case .unchanged:
                return
            case .readAgain(let again):
                listing = again
                answer = try list(collection, listing, limit: &limit)
                break opening
            case .read:
                break opening
            }
        }
        // The history lists every record's versions, the scope's or not: a scoped pull reads the records alone.
        if pull.historyFloor != nil, try scopes[entity.name] != nil || !hasHistory() { pull.withoutHistory() }
        var total: Int?
        if wantsTotals {
            var head = changesRequest(collection, listing)
            head.method = "HEAD"
            head.headers = []
            total = try send(head).headers["total-records"].flatMap { Int($0) }
        }
        // Pages are fetched and parsed on a worker while earlier ones are
        // written. Up to 8 wait, about one of the store's write batches
        // (8,000 records at 1,000 a page): while a batch's commit is flushed
        // to disk, the next batch keeps arriving. With 2 waiting, a first pull
        // of a million records took 56 s instead of 46 s (peak RSS 87.6 vs 90.8 MiB).
        // Pages of large records (up to the response cap each) are not fetched ahead of one being written
        // once 32 MiB of them wait: a pull's memory stays near twice its largest page.
        // What the scope no longer takes, or was deleted in it, since the cursor: found before the pull's pages move it.
        let outOfScope = try listing.since.flatMap { since throws(HTTPRemoteError) in try scopeChanges(of: collection, entity: entity.name, since: since) }
        try Pipeline<RemotePage>(depth: 8, budget: 32 << 20, weight: { $0.bytes.count }).run(produce: { [self] emit in
            if let outOfScope, !emit(outOfScope) { return }
            var current = answer
            answer.response.body = []  // `current` alone holds the first page's bytes, freed once read
            while true {
                try expect(current.response, [200], doing: "listing \(collection)")
                var records = try Self.page(from: current.response.body, collection: collection.name)
                if current.isOversized {
                    records = Self.skippingAll(records, reason: PageLimit.oversizedReason(size: HTTPClient.size(limit.cap)))
                } else {
                    limit.fit(records: records.entries.count + records.skipped.count, bytes: current.response.body.count)
                }
                current.response.body = []  // the page holds what it needs: the raw bytes go before the next page comes
                let next = try current.response.headers["next-page"].map { text throws(HTTPRemoteError) in try sameServer(text) }
                // Where the next page starts if it is asked for by this pull, not by the server's Next-Page.
                let readUpTo = records.cursor.flatMap { Int64($0.token) }
                var step = pull.step(records, hasNext: next != nil,
                                     serverTime: current.response.headers["date"].flatMap(KintoPull.milliseconds(fromHTTPDate:)))
                step.page.total = total
                // Where the pages came from, stored while it differs from what was stored: not at every page.
                if moved(entity) { step.page.state = collection.bucket }
                if let history = step.history {
                    // Unreadable history (nil): the rest of the pull goes on without it.
                    let covered = try emitHistory(of: collection, after: history.after, upTo: history.upTo, emit: emit)
                    if let covered { step.page = step.page.removing { covered.contains(HistoryKey(id: $0, version: $1)) } }
                    pull.historyRead(upTo: history.upTo, readable: covered != nil)
                }
                if step.countsLiveRecords {
                    let head = HTTPRequest(method: "HEAD", url: url(collection.recordSegments(), query: scopeFilters(of: entity.name)))
                    let counted = try send(head).headers
                    step.page.liveRecords = KintoPull.liveRecords(total: counted["total-records"],
                                                                  countETag: counted["etag"].flatMap(KintoPull.timestamp(fromETag:)),
                                                                  pageETag: current.response.headers["etag"].flatMap(KintoPull.timestamp(fromETag:)))
                }
                guard emit(step.page), let next else { return }
                // The server's Next-Page asks for as many as the last request: followed while that is the limit
                // (or while no version read says where to go on from).
                // A page asked for again smaller starts after the newest change read.
                if let readUpTo { listing = .continuing(after: readUpTo) }
                let followsNext = readUpTo == nil || (current.limit == limit.current && !current.isOversized)
                current = try list(collection, listing, limit: &limit, next: followsNext ? next : nil)
            }
        }, consume: onPage)
    }

    /// The answer to a list request, and the `_limit` it was sent with.
    private struct ListAnswer {
        var response: HTTPResponse
        let limit: Int
        /// One record over the cap alone: the answer lists its id and version only (`skippingAll`).
        let isOversized: Bool
    }

    /// Sends a list request (`next`, the server's Next-Page, while the limit is as it was), asking again with
    /// half the records while the answer is over the response cap (`PageLimit`). One record alone over it is
    /// asked for again without its fields, to be skipped with its id and version.
    private func list(_ collection: KintoCollection, _ listing: KintoPull.Listing, limit: inout PageLimit,
                      next: URL? = nil) throws(HTTPRemoteError) -> ListAnswer {
        let asked = limit.current
        while true {
            let request = next.flatMap { limit.current == asked ? HTTPRequest(method: "GET", url: $0) : nil }
                ?? changesRequest(collection, listing, limit: limit.current)
            do {
                return ListAnswer(response: try send(request), limit: limit.current, isOversized: false)
            } catch where error.isTooLarge {
                guard limit.tooLarge() else {
                    let versions = changesRequest(collection, listing, limit: 1, onlyVersions: true)
                    return ListAnswer(response: try send(versions), limit: 1, isOversized: true)
                }
            }
        }
    }

    /// A page whose records are all skipped with `reason`, keeping its cursor.
    static func skippingAll(_ page: RemotePage, reason: String) -> RemotePage {
        let skipped = page.skipped + page.entries.map { SkippedRecord(id: page.id(of: $0), version: $0.version, reason: reason) }
        return RemotePage(records: [], skipped: skipped, cursor: page.cursor)
    }

    /// The next pull reads from the position's `start` (behind its newest while it settles).
    public func pullFloor(of cursor: RemoteCursor) -> RemoteVersion? {
        PullPosition(cursor).map { RemoteVersion(String($0.start)) }
    }

    public func isVersion(_ version: RemoteVersion, olderThan other: RemoteVersion) -> Bool {
        guard let version = version.integer, let other = other.integer else { return false }
        return version < other
    }

    /// A `Next-Page` URL, accepted only on our own server: credentials must not follow a link elsewhere.
    func sameServer(_ text: String) throws(HTTPRemoteError) -> URL {
        guard let url = URL(string: text), Origin(url) == Origin(server) else {
            let origin = URL(string: text).flatMap(Origin.init)?.description ?? text
            throw HTTPRemoteError(.server, "the server sent a Next-Page URL on another server, \(origin); refusing to follow it")
        }
        return url
    }
}
