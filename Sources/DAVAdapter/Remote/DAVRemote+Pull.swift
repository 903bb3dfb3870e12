public import EventStore
import EventSync
import Foundation
import HTTPTransport
import RemoteHTTP

/// A pull's cursor: the collection's sync token (RFC 6578) and the collection's URL (so that a sync finds it with no
/// discovery: an unchanged collection costs one REPORT). Written as the token, then `@ URL`.
///
/// An evsync before issue 50 also kept the href table (`DAVHrefTable`) here, one `key\tid` line each: such a cursor
/// is read once (`legacyHrefs`), and the next page written moves the table to the adapter's meta (`metaNamespace`).
struct DAVCursor {
    var token: String
    var collection: URL?
    /// The href table an older cursor carries; empty in one written now.
    var legacyHrefs: [String: String] = [:]

    init(token: String, collection: URL? = nil) {
        (self.token, self.collection) = (token, collection)
    }

    init(_ cursor: RemoteCursor) {
        let lines = cursor.token.split(separator: "\n", omittingEmptySubsequences: false)
        token = lines.first.map(String.init) ?? ""
        var table: [Substring] = []
        for line in lines.dropFirst() {
            if line.hasPrefix("@ ") { collection = URL(string: String(line.dropFirst(2))) } else { table.append(line) }
        }
        legacyHrefs = DAVHrefTable.read(table)
    }

    var cursor: RemoteCursor {
        RemoteCursor(([token] + (collection.map { ["@ " + $0.absoluteString] } ?? [])).joined(separator: "\n"))
    }
}

/// The hrefs of other clients' items that their ids do not give (href key → id), so that a removal, which names only
/// the href, is a deletion of the right record: the DAV adapter's state in the store's meta (`RemotePage.state`),
/// one `key\tid` line each (a key is a path: it starts with `/`).
enum DAVHrefTable {
    static func text(_ table: [String: String]) -> String {
        table.sorted { $0.key < $1.key }
            .filter { !$0.key.contains("\n") && !$0.key.contains("\t") }
            .map { "\($0.key)\t\($0.value)" }
            .joined(separator: "\n")
    }

    static func read(_ text: String) -> [String: String] {
        read(text.split(separator: "\n"))
    }

    static func read(_ lines: [Substring]) -> [String: String] {
        var table: [String: String] = [:]
        for line in lines {
            let parts = line.split(separator: "\t", maxSplits: 1)
            if parts.count == 2 { table[String(parts[0])] = String(parts[1]) }
        }
        return table
    }
}

/// A member of a collection as a listing names it: its href, its ETag, and its body when the listing carried it
/// (a sync-collection answer may; a PROPFIND never does).
struct DAVMember {
    var href: String
    var etag: String
    var body: String?
}

extension DAVRemote {
    /// Changes since the cursor's sync token: a sync-collection REPORT (sync-level 1, never DAV:limit, which
    /// Xandikos answers with a cut list and the newest token) asking for the changed members' bodies too (RFC 6578
    /// lets a client ask for any property: Radicale sends them, so a first sync is one request where it was one
    /// and a multiget per 100 items; Xandikos answers them 404, and they are read by multiget in batches; an
    /// answer with them that is refused, past `maximumAnswerBytes` or unreadable is asked for again without
    /// them), its removed members (404) as tombstones; a truncated answer (507 on the collection) followed with
    /// the token it gave. The token goes with the last page of its answer only, so a crash re-reads the answer
    /// and never skips one. An invalid or expired token (Radicale 403, Xandikos 412 or 500) starts again from
    /// an empty token: every member, and `liveIDs` then names them all, so what the server lost in between is a
    /// deletion, reconciled by the engine (never a wipe: `MissingRecords`). A collection without sync-collection
    /// is listed whole (PROPFIND Depth 1) at every pull.
    public func changes(of entity: EntitySchema, since: RemoteCursor?, onPage: (RemotePage) throws -> Bool) throws {
        guard let mapping = try mapping(of: entity) else { return }
        var collection = try collection(for: entity)
        var token = since.map { DAVCursor($0).token } ?? ""
        if collection.created { token = "" }
        var first = true
        var withBodies = true
        // Answers of this pull cut short (507) and followed: bounded by `maximumChainedAnswers`.
        var answers = 0
        guard collection.supportsSync else {
            let (members, skipped) = try propfindMembers(collection)
            listed[entity.name] = []
            _ = try emit(members, removed: [], skipped: skipped, token: "", entity: entity, mapping: mapping, collection: collection,
                         markRecreated: collection.created && since != nil, onPage: onPage)
            return
        }
        while true {
            let request = HTTPRequest(method: "REPORT", url: collection.url, headers: [("Depth", "0")],
                                      body: Array(Self.syncCollection(token: token, bodies: withBodies ? collection : nil).utf8), contentType: Self.xml)
            let sent = Result { () throws(HTTPRemoteError) in try send(request, doing: "listing the changes of \(collection.url.path)") }
            if case .failure(let error) = sent, error.isTooLarge, withBodies {
                withBodies = false
                continue
            }
            if case .failure(let error) = sent, error.status == 500, !token.isEmpty {
                // Xandikos has answered a token it no longer has with 500: retried as any 5xx, then taken for invalid.
                token = ""
                continue
            }
            let answer = try sent.get()
            if answer.status == 404, collection.isFromCursor {
                // The collection the cursor remembers is gone (deleted, or the account moved): found again, or made.
                collections[entity.name] = nil
                collection = try self.collection(for: entity)
                token = ""
                continue
            }
            if withBodies, answer.status != 207 || answer.body.count > maximumAnswerBytes {
                // Asked again without the bodies before the answer is judged: a server may refuse a property in
                // sync-collection that RFC 6578 allows, and an answer too large to read has a smaller form.
                withBodies = false
                continue
            }
            if answer.status != 207 {
                guard !token.isEmpty, [403, 409, 412, 500].contains(answer.status) else {
                    throw HTTPRemoteError(.server, "the server answered HTTP \(answer.status) to a sync-collection REPORT on \(collection.url.path)",
                                   status: answer.status)
                }
                // The token is no longer valid: every member again, from an empty token.
                token = ""
                continue
            }
            let read = Result { () throws(HTTPRemoteError) in try multistatus(answer, doing: "listing the changes of \(collection.url.path)") }
            if case .failure = read, withBodies {
                // One item's bytes can make the whole answer unreadable: the listing alone, and the bodies by
                // multiget, where an unreadable batch is the same failure it always was.
                withBodies = false
                continue
            }
            let status = try read.get()
            if token.isEmpty { listed[entity.name] = listed[entity.name] ?? [] }
            var changed: [DAVMember] = []
            var removed: [String] = []
            var skipped = skips(status, collection: collection)
            var truncated = false
            for response in status.responses {
                let key = DAVIDs.key(response.href)
                if key == collection.key || key + "/" == collection.key {
                    if response.status == 507 { truncated = true }
                    continue
                }
                // A collection inside is no member (RFC 4791 allows none in a calendar): left alone, as it always was.
                if key.hasSuffix("/") { continue }
                if let outside = skip(outside: response.href, collection: collection) {
                    skipped.append(outside)
                } else if response.status == 404 {
                    removed.append(response.href)
                } else if let etag = response.property(DAVNamespace.dav, "getetag")?.text.trimmed {
                    changed.append(DAVMember(href: response.href, etag: etag, body: response.property(collection.dataProperty.0, collection.dataProperty.1)?.text))
                }
            }
            guard let newToken = status.syncToken, !newToken.isEmpty else {
                throw HTTPRemoteError(.server, "the server's sync-collection answer for \(collection.url.path) has no sync-token")
            }
            // Nothing to write, unless the cursor itself changes: the collection's URL added to an older one, or the href
            // table taken out of one an earlier evsync wrote (the table then goes to the adapter's meta).
            let unchanged = newToken == token && changed.isEmpty && removed.isEmpty && skipped.isEmpty
                && since == DAVCursor(token: newToken, collection: collection.url).cursor
            let chained = truncated && newToken != token
            if !unchanged {
                guard try emit(changed, removed: removed, skipped: skipped, token: newToken, entity: entity, mapping: mapping, collection: collection,
                               markRecreated: first && collection.created && since != nil, checkpoint: chained, onPage: onPage) else { return }
            }
            first = false
            guard chained else { return }
            answers += 1
            guard answers < maximumChainedAnswers else {
                throw HTTPRemoteError(.server, "the server cut its sync-collection listing of \(collection.url.path) short (507) \(answers) times in a row; "
                    + "what those answers brought is kept: sync again to go on from there")
            }
            token = newToken
        }
    }

    /// The sync-collection REPORT's body; with a collection, its members' bodies are asked for too.
    static func syncCollection(token: String, bodies collection: Collection? = nil) -> String {
        let data = collection.map { #"<\#($0.dataElement) xmlns="\#($0.dataProperty.0)"/>"# } ?? ""
        return #"<sync-collection xmlns="DAV:"><sync-token>\#(escape(token))</sync-token><sync-level>1</sync-level><prop><getetag/>\#(data)</prop></sync-collection>"#
    }

    /// Every member and its ETag (PROPFIND Depth 1), for a collection without sync-collection; and the responses
    /// skipped (malformed, outside the collection).
    func propfindMembers(_ collection: Collection) throws -> (members: [DAVMember], skipped: [SkippedRecord]) {
        let body = Array(#"<propfind xmlns="DAV:"><prop><getetag/><resourcetype/></prop></propfind>"#.utf8)
        let answer = try send(HTTPRequest(method: "PROPFIND", url: collection.url, headers: [("Depth", "1")], body: body, contentType: Self.xml),
                              doing: "listing \(collection.url.path)")
        guard answer.status == 207 else {
            throw HTTPRemoteError(.server, "the server answered HTTP \(answer.status) when listing \(collection.url.path)", status: answer.status)
        }
        let listing = try multistatus(answer, doing: "listing \(collection.url.path)")
        var skipped = skips(listing, collection: collection)
        let members = listing.responses.compactMap { response -> DAVMember? in
            let key = DAVIDs.key(response.href)
            guard key != collection.key, !key.hasSuffix("/"), response.property(DAVNamespace.dav, "resourcetype")?.children.isEmpty != false,
                  let etag = response.property(DAVNamespace.dav, "getetag")?.text.trimmed else { return nil }
            if let outside = skip(outside: response.href, collection: collection) {
                skipped.append(outside)
                return nil
            }
            return DAVMember(href: response.href, etag: etag)
        }
        return (members, skipped)
    }

    /// The responses of an answer left out as malformed, as skipped records: no id, the reason naming what came.
    func skips(_ answer: Multistatus, collection: Collection) -> [SkippedRecord] {
        answer.malformed.map { SkippedRecord(id: nil, reason: "the server's answer for \(collection.url.path) has \($0)") }
    }

    /// A member the server names by an href outside the collection (`url(of:in:)`), as a skipped record; nil for one inside.
    func skip(outside href: String, collection: Collection) -> SkippedRecord? {
        do {
            _ = try url(of: href, in: collection)
            return nil
        } catch {
            return SkippedRecord(id: nil, reason: error.message)
        }
    }

    /// Hands the engine the removals and the changed members' bodies, a multiget batch a page, the cursor on the last.
    /// - Returns: false when `onPage` asked to stop.
    private func emit(_ changed: [DAVMember], removed: [String], skipped: [SkippedRecord], token: String, entity: EntitySchema,
                      mapping: any DAVMapping, collection: Collection, markRecreated: Bool, checkpoint: Bool = false,
                      onPage: (RemotePage) throws -> Bool) throws -> Bool {
        var foreign = self.foreign[entity.name] ?? [:]
        var tombstones: [RemoteRecord] = []
        for href in removed {
            let key = DAVIDs.key(href)
            let id = foreign.removeValue(forKey: key) ?? DAVIDs.uid(inHref: href).map(DAVIDs.id(forUID:))
            if let id { tombstones.append(RemoteRecord(id: id, version: deletionVersion, fields: nil)) }
        }
        var batches = stride(from: 0, to: changed.count, by: multigetBatch).map { Array(changed[$0..<min($0 + multigetBatch, changed.count)]) }
        if batches.isEmpty { batches = [[]] }
        var stopped = false
        // The next multiget is sent and parsed on a worker while the page before it is written (as Kinto's pages):
        // the server and the log take turns no more. The worker alone uses `http` and this remote's state until
        // `run` returns; `onPage` touches neither.
        try Pipeline<RemotePage>(depth: 2).run(produce: { [self] emit in
            var seen: Set<String> = []
            for (number, batch) in batches.enumerated() {
                var page = try bodies(batch, entity: entity, mapping: mapping, collection: collection, foreign: &foreign, seen: &seen)
                if number == 0 {
                    page.append(contentsOf: RemotePage(records: tombstones, skipped: skipped, cursor: nil))
                    page.isRecreated = markRecreated
                }
                if number == batches.count - 1 {
                    self.foreign[entity.name] = foreign
                    if !token.isEmpty {
                        page.cursor = DAVCursor(token: token, collection: collection.url).cursor
                        page.state = DAVHrefTable.text(foreign)
                    }
                    page.isCheckpoint = checkpoint
                }
                guard emit(page) else { return }
            }
        }, consume: { page in
            stopped = try !onPage(page)
            return !stopped
        })
        return !stopped
    }

    /// These members' records: the bodies a listing carried, and the others read by one multiget; an item that
    /// cannot be held is skipped with its reason.
    func bodies(_ members: [DAVMember], entity: EntitySchema, mapping: any DAVMapping, collection: Collection,
                foreign: inout [String: String], seen: inout Set<String>) throws -> RemotePage {
        var page = RemotePage(records: [], cursor: nil)
        let carried = members.filter { $0.body != nil }
        if !carried.isEmpty {
            page.append(contentsOf: read(carried.map { Fetched(href: $0.href, body: $0.body) }, listed: carried, entity: entity, mapping: mapping,
                                         collection: collection, foreign: &foreign, seen: &seen))
        }
        let missing = members.filter { $0.body == nil }
        guard !missing.isEmpty else { return page }
        let answer: Multistatus
        do {
            answer = try multiget(missing.map(\.href), collection: collection)
        } catch let error as HTTPRemoteError where error.isTooLarge || error.isUnreadable {
            // Past the size bound, or unreadable (one item's bytes are not UTF-8, say): halves, down to the one item
            // that is too large or unreadable, skipped with the reason; the others arrive.
            guard missing.count > 1 else {
                let hrefID = foreign[DAVIDs.key(missing[0].href)] ?? DAVIDs.uid(inHref: missing[0].href).map(DAVIDs.id(forUID:))
                if let hrefID { listed[entity.name]?.insert(hrefID) }
                let why = error.isTooLarge ? "is too large" : "cannot be read"
                page.append(contentsOf: RemotePage(records: [], skipped: [SkippedRecord(id: hrefID, version: RemoteVersion(missing[0].etag),
                                                                                        reason: "\(missing[0].href) \(why): \(error)")], cursor: nil))
                return page
            }
            let half = missing.count / 2
            page.append(contentsOf: try bodies(Array(missing[..<half]), entity: entity, mapping: mapping, collection: collection,
                                               foreign: &foreign, seen: &seen))
            page.append(contentsOf: try bodies(Array(missing[half...]), entity: entity, mapping: mapping, collection: collection,
                                               foreign: &foreign, seen: &seen))
            return page
        }
        page.append(contentsOf: RemotePage(records: [], skipped: skips(answer, collection: collection), cursor: nil))
        let fetched = answer.responses.map { response in
            Fetched(href: response.href, body: response.property(collection.dataProperty.0, collection.dataProperty.1)?.text,
                    etag: response.property(DAVNamespace.dav, "getetag")?.text.trimmed, isGone: response.status == 404)
        }
        page.append(contentsOf: read(fetched, listed: missing, entity: entity, mapping: mapping, collection: collection,
                                     foreign: &foreign, seen: &seen))
        return page
    }

    /// An item as a listing or a multiget gave it: its body (nil when none was sent), its ETag when the answer gave
    /// one, or gone (404: removed since the listing).
    private struct Fetched {
        var href: String
        var body: String?
        var etag: String? = nil
        var isGone = false
    }

    /// The records of the items fetched, in their order, of the members `listed` (an item not listed is ignored).
    private func read(_ items: [Fetched], listed members: [DAVMember], entity: EntitySchema, mapping: any DAVMapping,
                      collection: Collection, foreign: inout [String: String], seen: inout Set<String>) -> RemotePage {
        var records: [RemoteRecord] = []
        var skipped: [SkippedRecord] = []
        let listedETags = Dictionary(members.map { (DAVIDs.key($0.href), $0.etag) }, uniquingKeysWith: { first, _ in first })
        for item in items {
            let href = item.href
            let key = DAVIDs.key(href)
            guard let listedETag = listedETags[key] else { continue }
            let hrefID = foreign[key] ?? DAVIDs.uid(inHref: href).map(DAVIDs.id(forUID:))
            if item.isGone {
                if let hrefID { records.append(RemoteRecord(id: hrefID, version: deletionVersion, fields: nil)) }
                foreign[key] = nil
                continue
            }
            let etag = item.etag ?? listedETag
            guard let body = item.body else {
                skipped.append(SkippedRecord(id: hrefID, version: RemoteVersion(etag), reason: "the server sent no body for \(href)"))
                continue
            }
            switch record(from: Array(body.utf8), href: href, etag: etag, mapping: mapping, collection: collection) {
            case .failure(let skip):
                if let hrefID { listed[entity.name]?.insert(hrefID) }
                skipped.append(SkippedRecord(id: hrefID, version: RemoteVersion(etag), reason: "\(skip.kind.rawValue): \(skip.reason)"))
            case .success(let record):
                listed[entity.name]?.insert(record.id)
                guard seen.insert(record.id).inserted else {
                    skipped.append(SkippedRecord(id: record.id, version: record.version,
                                                 reason: "another item of \(collection.url.path) has the same UID; \(href) is left as it is"))
                    continue
                }
                if DAVVersion(record.version).href != nil { foreign[key] = record.id } else { foreign[key] = nil }
                records.append(record)
            }
        }
        return RemotePage(records: records, skipped: skipped, cursor: nil)
    }

    /// The record an item's body holds, its version the ETag (and the href, where its id does not give it).
    func record(from body: [UInt8], href: String, etag: String, mapping: any DAVMapping, collection: Collection) -> Result<RemoteRecord, DAVSkip> {
        let item: DAVMappedItem
        do {
            item = try mapping.read(bytes: body)
        } catch {
            return .failure(error)
        }
        let id = DAVIDs.id(forUID: item.uid)
        guard RecordID.isValidServerID(id) else {
            return .failure(DAVSkip(.noUID, "the UID is longer than evsync holds (\(RecordID.maxServerLength) bytes escaped)"))
        }
        let atOwnHref = DAVIDs.key(href) == DAVIDs.key(self.href(forUID: item.uid, in: collection))
        return .success(RemoteRecord(id: id, version: DAVVersion(etag: etag, href: atOwnHref ? nil : href).remoteVersion, fields: item.fields,
                                     localFields: localFields[collection.entity] ?? []))
    }

    /// Where an item with this UID is written when evsync makes it.
    func href(forUID uid: String, in collection: Collection) -> String {
        collection.url.path + (collection.url.path.hasSuffix("/") ? "" : "/") + DAVIDs.segment(forUID: uid, extension: collection.fileExtension)
    }

    func multiget(_ hrefs: [String], collection: Collection) throws -> Multistatus {
        let report = collection.isCalendar ? "C:calendar-multiget" : "C:addressbook-multiget"
        let body = #"<\#(report) xmlns="DAV:" xmlns:C="\#(collection.dataProperty.0)"><prop><getetag/><C:\#(collection.dataElement)/></prop>"#
            + hrefs.map { "<href>\(Self.escape($0))</href>" }.joined() + "</\(report)>"
        let answer = try send(HTTPRequest(method: "REPORT", url: collection.url, headers: [("Depth", "1")], body: Array(body.utf8), contentType: Self.xml),
                              doing: "reading items of \(collection.url.path)")
        guard answer.status == 207 else {
            throw HTTPRemoteError(.server, "the server answered HTTP \(answer.status) to a multiget of \(collection.url.path)", status: answer.status)
        }
        guard answer.body.count <= maximumAnswerBytes else {
            throw HTTPRemoteError(.server, "the answer is larger than \(maximumAnswerBytes) bytes", isTooLarge: true)
        }
        return try multistatus(answer, doing: "reading items of \(collection.url.path)")
    }

    // MARK: Listing (verify --remote)

    public var canList: Bool { true }

    /// Every member by PROPFIND Depth 1, read by multiget: an id is the UID inside, as a pull reads it (an href
    /// does not always say it), and an item evsync cannot hold is listed by its href's id, never taken for gone.
    public func listing(of entity: EntitySchema, onPage: ([(id: String, version: RemoteVersion)]) throws -> Bool) throws {
        guard let mapping = try mapping(of: entity) else { return }
        let collection = try collection(for: entity)
        let members = try propfindMembers(collection).members
        var foreign = self.foreign[entity.name] ?? [:]
        var seen: Set<String> = []
        for start in stride(from: 0, to: members.count, by: multigetBatch) {
            let batch = Array(members[start..<min(start + multigetBatch, members.count)])
            let page = try bodies(batch, entity: entity, mapping: mapping, collection: collection, foreign: &foreign, seen: &seen)
            var listed = try page.entries.compactMap { entry -> (id: String, version: RemoteVersion)? in
                let record = try page.record(entry)
                return record.fields == nil ? nil : (record.id, record.version)
            }
            listed += page.skipped.compactMap { skip in skip.id.map { ($0, skip.version ?? RemoteVersion("")) } }
            guard try onPage(listed) else { return }
        }
    }

    public func record(_ id: String, of entity: EntitySchema) throws -> RemoteRecord? {
        guard let mapping = try mapping(of: entity) else { return nil }
        let collection = try collection(for: entity)
        // A key is a decoded path: encoded again to be sent.
        let known = (foreign[entity.name] ?? [:]).first { $0.value == id }?.key.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed)
        let href = known ?? self.href(forUID: DAVIDs.uid(forID: id), in: collection)
        return try fetch(href, mapping: mapping, collection: collection)?.record
    }

    /// The item at `href` as the server holds it now: its record (or why it cannot be one) and its body; nil when there is none.
    func fetch(_ href: String, mapping: any DAVMapping, collection: Collection) throws
        -> (record: RemoteRecord?, body: [UInt8], etag: String, skip: DAVSkip?)? {
        let answer = try send(HTTPRequest(method: "GET", url: url(of: href, in: collection)), doing: "reading \(href)")
        if answer.status == 404 || answer.status == 410 { return nil }
        guard answer.status == 200, let etag = answer.headers["etag"] else {
            throw HTTPRemoteError(.server, "the server answered HTTP \(answer.status) to GET \(href)\(answer.status == 200 ? " without an ETag" : "")",
                           status: answer.status)
        }
        switch record(from: answer.body, href: href, etag: etag, mapping: mapping, collection: collection) {
        case .success(let record): return (record, answer.body, etag, nil)
        case .failure(let skip): return (nil, answer.body, etag, skip)
        }
    }
}
