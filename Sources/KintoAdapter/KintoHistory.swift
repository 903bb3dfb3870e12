public import EventStore
import EventSync
import RemoteHTTP
import Foundation

/// Kinto's history plugin (`kinto.plugins.history`), read by a pull: who
/// made each change, and every version between two syncs.
///
/// The plugin keeps, per bucket, one entry for every create, update and
/// delete, with the account that made it (`user_id`) and the record as that
/// change left it (`target.data`, whose `last_modified` is the record's
/// version). A pull with a cursor reads its records page by page as before;
/// for each page, whose versions span `(previous cursor, page cursor]`, it
/// reads the collection's history entries of that same span, oldest first,
/// and hands them on before the page, each as a record version with its
/// author. The page's own records then repeat the newest of them (a version
/// the log already has writes nothing), and stand alone for any change the
/// history lacks (trimmed, excluded by the server's settings): nothing is
/// ever missed because the history is incomplete, it only loses its author.
///
/// A first pull (no cursor, or the cursor of one a crash interrupted:
/// `PullPosition.firstPullMark`) and a collection read again from the start
/// read only the current records: years of history would make the first
/// sync of a large collection as slow as its whole past, and the versions
/// before this store existed are not its history.
extension KintoRemote {
    /// Whether the server announces the history plugin in its capabilities (`GET /v1/`).
    public func hasHistory() throws(HTTPRemoteError) -> Bool {
        try serverRoot().objectValue?["capabilities"]?.objectValue?["history"] != nil
    }

    /// Whether the history plugin is on, once this remote has read the server's
    /// root (a sync with nothing to pull or push does not ask).
    public var knowsAuthors: Bool? {
        cachedRoot.map { $0.objectValue?["capabilities"]?.objectValue?["history"] != nil }
    }

    /// Hands on, through `emit`, the history entries of `collection` whose
    /// record versions lie in `(after, upTo]`, oldest first, a page at a
    /// time, and returns the (id, version) pairs they held. Returns nil,
    /// having emitted nothing, when the history cannot be read (no
    /// permission on it): the pull then goes on without authors.
    ///
    /// A page over the response cap is asked for again with fewer entries (`PageLimit`), from the newest
    /// version read; one entry alone over it ends the reading of this span there: the records listing brings
    /// each record's newest version (or skips it), and only the authors and versions between are not read.
    func emitHistory(of collection: KintoCollection, after: Int64, upTo: Int64,
                     emit: (RemotePage) -> Bool) throws(HTTPRemoteError) -> Set<HistoryKey>? {
        func query(after: Int64, limit: Int) -> URL {
            historyURL(of: collection.bucket, query: [URLQueryItem(name: "resource_name", value: "record"),
                               URLQueryItem(name: "collection_id", value: collection.name),
                               URLQueryItem(name: "gt_target.data.last_modified", value: String(after)),
                               URLQueryItem(name: "max_target.data.last_modified", value: String(upTo)),
                               URLQueryItem(name: "_sort", value: "last_modified"),
                               URLQueryItem(name: "_limit", value: String(limit))])
        }
        var limit = PageLimit(largest: pageSize, cap: http.client.maximumResponseBytes)
        var readUpTo = after
        var next: URL? = query(after: after, limit: limit.current)
        var seen: Set<HistoryKey> = []
        while let url = next {
            let asked = limit.current
            let response: HTTPResponse
            do {
                response = try send(HTTPRequest(method: "GET", url: url))
            } catch where error.isTooLarge {
                guard limit.tooLarge() else { return seen }
                next = query(after: readUpTo, limit: limit.current)
                continue
            }
            if [401, 403, 404].contains(response.status), seen.isEmpty { return nil }
            try expect(response, [200], doing: "reading the history of \(collection)")
            let records = try Self.historyRecords(from: response.body, collection: collection.name)
            limit.fit(records: records.count, bytes: response.body.count)
            let pageAfter = readUpTo
            for record in records {
                seen.insert(HistoryKey(id: record.id, version: record.version))
                if let version = record.version.integer { readUpTo = max(readUpTo, version) }
            }
            if !records.isEmpty, !emit(RemotePage(records: records, cursor: nil)) { return seen }
            next = try response.headers["next-page"].map { text throws(HTTPRemoteError) in try sameServer(text) }
            // The server's Next-Page asks for as many as the last request: followed while that is the limit (or
            // while no version read says where to go on from).
            if next != nil, limit.current != asked, readUpTo > pageAfter { next = query(after: readUpTo, limit: limit.current) }
        }
        return seen
    }

    /// One record version of a history page: the record's id and version.
    struct HistoryKey: Hashable {
        let id: String
        let version: RemoteVersion
    }

    /// The record versions a history page holds, each with its author. An
    /// entry that is not a usable record is passed over: the records listing
    /// still brings the record's newest version (and skips it if it must).
    static func historyRecords(from body: [UInt8], collection: String) throws(HTTPRemoteError) -> [RemoteRecord] {
        let page: JSONValue
        do {
            page = try JSONParser.parse(body)
        } catch {
            throw HTTPRemoteError(.server, "the server sent invalid JSON while reading the history of \(collection): \(error)")
        }
        guard let entries = page.objectValue?["data"]?.arrayValue else {
            throw HTTPRemoteError(.server, "the server's history of \(collection) has no data array")
        }
        return entries.compactMap { entry in
            guard let entry = entry.objectValue, entry["collection_id"]?.stringValue == collection,
                  let target = entry["target"]?.objectValue?["data"]?.objectValue,
                  var record = record(from: target) else { return nil }
            record.author = entry["user_id"]?.stringValue
            return record
        }
    }
}

// MARK: verify --remote

extension KintoRemote {
    /// `GET …/records?_fields=id,last_modified`, following `Next-Page`.
    public var canList: Bool { true }

    public func listing(of entity: EntitySchema, onPage: ([(id: String, version: RemoteVersion)]) throws -> Bool) throws {
        let collection = place(of: entity)
        let query = [URLQueryItem(name: "_fields", value: "id,last_modified"), URLQueryItem(name: "_sort", value: "last_modified"),
                     URLQueryItem(name: "_limit", value: String(pageSize))] + scopeFilters(of: entity.name)
        var next: URL? = url(collection.recordSegments(), query: query)
        while let url = next {
            let response = try send(HTTPRequest(method: "GET", url: url))
            if response.status == 403 || response.status == 404 { return }  // no collection: nothing on the server
            try expect(response, [200], doing: "listing \(collection)")
            let page = try Self.page(from: response.body, collection: collection.name)
            guard try onPage(page.entries.map { (page.id(of: $0), $0.version) }) else { return }
            next = try response.headers["next-page"].map { text throws(HTTPRemoteError) in try sameServer(text) }
        }
    }

    /// `GET …/records/<id>`.
    public func record(_ id: String, of entity: EntitySchema) throws -> RemoteRecord? {
        let collection = place(of: entity)
        let response = try send(HTTPRequest(method: "GET", url: url(collection.recordSegments(id))))
        if response.status == 404 || response.status == 403 { return nil }
        try expect(response, [200], doing: "reading \(collection)/\(id)")
        let body = try JSONParser.parse(response.body)
        return body.objectValue?["data"]?.objectValue.flatMap(Self.record(from:))
    }

    /// `GET …/records?in_id=a,b,…`, 50 ids a request (the URL stays near 2 KiB), following `Next-Page`. A record of
    /// the page evsync cannot read is left out, as a pull skips it.
    public func records(_ ids: [String], of entity: EntitySchema) throws -> [RemoteRecord] {
        let collection = place(of: entity)
        var found: [RemoteRecord] = []
        for start in stride(from: 0, to: ids.count, by: 50) {
            let chunk = ids[start..<min(start + 50, ids.count)]
            var next: URL? = url(collection.recordSegments(), query: [URLQueryItem(name: "in_id", value: chunk.joined(separator: ",")),
                                                                  URLQueryItem(name: "_limit", value: String(pageSize))])
            while let page = next {
                let response = try send(HTTPRequest(method: "GET", url: page))
                if response.status == 404 || response.status == 403 { break }
                try expect(response, [200], doing: "reading records of \(collection)")
                let records = try Self.page(from: response.body, collection: collection.name)
                found += try records.entries.filter { $0.fields != nil }.map { try records.record($0) }
                next = try response.headers["next-page"].map { text throws(HTTPRemoteError) in try sameServer(text) }
            }
        }
        return found
    }
}
