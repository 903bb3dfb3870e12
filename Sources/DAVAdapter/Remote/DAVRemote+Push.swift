public import EventStore
public import EventSync
import Foundation
import HTTPTransport
import RemoteHTTP

/// DAV's push: conditional writes, one request each.
///
/// - A create is a `PUT` with `If-None-Match: *` at the href its id gives: a create sent again (after a crash,
///   a lost answer, a retry) finds its first copy (412) and is acknowledged, never made twice.
/// - An update reads the server's item first and patches it (`DAVMapping.write(onto:)`): only the lines of the
///   fields that changed are rewritten, every other client's line stays; then `PUT` with `If-Match`. An ETag other
///   than the update's base version, there or in the PUT's 412, is a failed precondition with the server's item:
///   the engine merges three ways (`RemoteFold`) and pushes the merge in its next round.
/// - A delete is a `DELETE` with `If-Match`.
/// - Another item with the same UID (RFC 4791 `no-uid-conflict`: Radicale answers 409, Xandikos 412) is that
///   item's record, when the server names it, as a failed precondition (a conflict, folded once); else a refusal.
extension DAVRemote {
    public func push(_ operations: [RemoteOperation], of entity: EntitySchema) throws -> [RemoteOutcome] {
        guard let mapping = try mapping(of: entity) else {
            return operations.map { _ in .rejected(status: 0, message: "\(entity.name) has no CalDAV/CardDAV mapping") }
        }
        let collection = try collection(for: entity)
        return try operations.map { operation in
            do {
                return try push(operation, mapping: mapping, collection: collection)
            } catch let error as HTTPRemoteError where error.refusesOnlyThisItem {
                // The server refused to show this item (a 403 to its GET, say): that write is refused, the others go on.
                return .rejected(status: error.status ?? 0, message: error.message)
            }
        }
    }

    private func push(_ operation: RemoteOperation, mapping: any DAVMapping, collection: Collection) throws -> RemoteOutcome {
        switch operation {
        case .create(let id, let fields):
            let uid = DAVIDs.uid(forID: id)
            let href = href(forUID: uid, in: collection)
            let item: VDocument
            do {
                item = try mapping.write(uid: uid, fields: fields, onto: nil, now: now())
            } catch {
                return .rejected(status: 0, message: "cannot be written as \(mapping.component): \(error)")
            }
            return try put(item, at: href, condition: ("If-None-Match", "*"), fields: fields, mapping: mapping, collection: collection)
        case .update(let id, let fields, let version):
            let base = DAVVersion(version)
            let href = base.href ?? href(forUID: DAVIDs.uid(forID: id), in: collection)
            guard let current = try fetch(href, mapping: mapping, collection: collection) else { return .preconditionFailed(current: nil) }
            guard current.etag == base.etag else { return changed(current, at: href) }
            guard let document = try? VDocument(parsing: current.body) else {
                return .rejected(status: 0, message: "the server's item at \(href) is not iCalendar or vCard evsync can patch")
            }
            let uid = (try? mapping.read(document))?.uid ?? DAVIDs.uid(forID: id)
            let item: VDocument
            do {
                item = try mapping.write(uid: uid, fields: fields, onto: document, now: now())
            } catch {
                return .rejected(status: 0, message: "cannot be written as \(mapping.component): \(error)")
            }
            // Nothing evsync maps changed: the item is left as it is, byte for byte.
            if item == document { return .applied(version: version) }
            return try put(item, at: href, condition: ("If-Match", base.etag), fields: fields, mapping: mapping, collection: collection,
                           keepsHref: base.href != nil)
        case .delete(let id, let version):
            let base = DAVVersion(version)
            let href = base.href ?? href(forUID: DAVIDs.uid(forID: id), in: collection)
            let answer = try send(HTTPRequest(method: "DELETE", url: url(of: href, in: collection), headers: [("If-Match", base.etag)]),
                                  doing: "deleting \(href)")
            switch answer.status {
            case 200, 202, 204:
                foreign[collection.entity]?[DAVIDs.key(href)] = nil
                return .applied(version: deletionVersion)
            case 404, 410: return .notFound
            case 412:
                guard let current = try fetch(href, mapping: mapping, collection: collection) else { return .notFound }
                return changed(current, at: href)
            default: return .rejected(status: answer.status, message: "the server refused DELETE \(href): HTTP \(answer.status)")
            }
        }
    }

    /// The server's item, changed since the operation's base: its record, for the engine to merge. An item evsync
    /// cannot read has fields it does not know: left as it is, never written over, never taken for absent.
    private func changed(_ current: (record: RemoteRecord?, body: [UInt8], etag: String, skip: DAVSkip?), at href: String) -> RemoteOutcome {
        guard let record = current.record else {
            return .rejected(status: 0, message: "the server's item at \(href) cannot be read by evsync (\(current.skip?.reason ?? "unreadable")); left as it is")
        }
        return .preconditionFailed(current: record)
    }

    private func put(_ item: VDocument, at href: String, condition: (String, String), fields: JSONObject, mapping: any DAVMapping,
                     collection: Collection, keepsHref: Bool = false) throws -> RemoteOutcome {
        let request = HTTPRequest(method: "PUT", url: try url(of: href, in: collection), headers: [condition],
                                  body: Array(item.serialized().utf8), contentType: collection.contentType)
        let answer = try send(request, doing: "writing \(href)")
        switch answer.status {
        case 200, 201, 204:
            // RFC 4791 §5.3.4: no ETag when the server changed what it stores; then what it holds is read.
            if let etag = answer.headers["etag"], !etag.hasPrefix("W/") {
                return .applied(version: DAVVersion(etag: etag, href: keepsHref ? href : nil).remoteVersion)
            }
            guard let stored = try fetch(href, mapping: mapping, collection: collection), let record = stored.record else {
                return .rejected(status: answer.status, message: "the server took \(href) but gives back nothing evsync can read")
            }
            // Compared on what the server holds: the fields the mapping leaves out are never there.
            let sent = fields.filter { !record.localFields.contains($0.key) }
            return record.fields == sent ? .applied(version: record.version) : .appliedDifferently(current: record)
        case 409, 412:
            let current = try fetch(href, mapping: mapping, collection: collection)
            if let current { return changed(current, at: href) }
            // Nothing at the href: the refusal is about another item with the same UID. Radicale and Xandikos
            // name no href in their no-uid-conflict, so the item is found by its UID.
            if Self.isUIDConflict(answer.body), let uid = try? mapping.read(item).uid,
               let record = try findByUID(uid, mapping: mapping, collection: collection) {
                if let href = DAVVersion(record.version).href { foreign[collection.entity]?[DAVIDs.key(href)] = record.id }
                return .preconditionFailed(current: record)
            }
            if answer.status == 412, condition.0 == "If-Match" { return .preconditionFailed(current: nil) }
            return .rejected(status: answer.status, message: "the server refused \(href): HTTP \(answer.status)"
                + (Self.isUIDConflict(answer.body) ? ": another item of \(collection.url.path) has the same UID (no-uid-conflict)" : ""))
        default:
            return .rejected(status: answer.status, message: "the server refused PUT \(href): HTTP \(answer.status)")
        }
    }

    /// Whether an error body is RFC 4791's `no-uid-conflict` (or RFC 6352's).
    static func isUIDConflict(_ body: [UInt8]) -> Bool {
        guard let root = try? XMLReader.parse(body), root.isNamed(DAVNamespace.dav, "error") else { return false }
        return root.child(DAVNamespace.caldav, "no-uid-conflict") != nil || root.child(DAVNamespace.carddav, "no-uid-conflict") != nil
    }

    /// The item of the collection whose UID is `uid` (a calendar-query or addressbook-query on UID), if any.
    func findByUID(_ uid: String, mapping: any DAVMapping, collection: Collection) throws -> RemoteRecord? {
        let match = #"<C:prop-filter name="UID"><C:text-match collation="i;octet">\#(Self.escape(uid))</C:text-match></C:prop-filter>"#
        let body = collection.isCalendar
            ? #"<C:calendar-query xmlns="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><prop><getetag/><C:calendar-data/></prop><C:filter><C:comp-filter name="VCALENDAR"><C:comp-filter name="\#(collection.component)">\#(match)</C:comp-filter></C:comp-filter></C:filter></C:calendar-query>"#
            : #"<C:addressbook-query xmlns="DAV:" xmlns:C="urn:ietf:params:xml:ns:carddav"><prop><getetag/><C:address-data/></prop><C:filter>\#(match)</C:filter></C:addressbook-query>"#
        let answer = try send(HTTPRequest(method: "REPORT", url: collection.url, headers: [("Depth", "1")], body: Array(body.utf8), contentType: Self.xml),
                              doing: "looking for the item with UID \(uid)")
        guard answer.status == 207 else { return nil }
        let data = collection.dataProperty
        for response in try multistatus(answer, doing: "looking for the item with UID \(uid)").responses {
            guard let text = response.property(data.0, data.1)?.text, let etag = response.property(DAVNamespace.dav, "getetag")?.text.trimmed,
                  case .success(let record) = record(from: Array(text.utf8), href: response.href, etag: etag, mapping: mapping, collection: collection),
                  record.id == DAVIDs.id(forUID: uid) else { continue }
            return record
        }
        return nil
    }
}
