import EventStore
import Foundation

/// The decisions of one pull of a Parse class, with no I/O: the query of
/// each request, and what its results make (a page and its cursor, or the
/// end of the pull). `ParseRemote.changes` sends, reads and yields.
///
/// `updatedAt` is stamped when a request arrives, not when it commits, so
/// the first request starts `reReadWindow` seconds behind the cursor's
/// `updatedAt`; each later one asks for what sorts after the last object
/// read, by (`updatedAt`, `objectId`), never by `skip` (which misses and
/// repeats objects when others write meanwhile). The pull ends at a page
/// with no object it can page past.
struct ParsePull {
    /// The `where` of the next request; nil for everything.
    private(set) var condition: JSONValue?

    /// A pull from `cursor` (`ParseRemote.cursor(updatedAt:objectID:)`), re-reading `reReadWindow` seconds behind it.
    init(since cursor: RemoteCursor?, reReadWindow: Double) {
        if let cursor, let start = cursor.token.split(separator: " ").first, let date = ParseRemote.date(fromISO: String(start)) {
            condition = ["updatedAt": ["$gte": ParseRemote.dateValue(date.addingTimeInterval(-reReadWindow))]]
        }
    }

    /// The query of the next request, `pageSize` objects at most.
    func query(pageSize: Int) -> [URLQueryItem] {
        var query = [URLQueryItem(name: "order", value: "updatedAt,objectId"), URLQueryItem(name: "limit", value: String(pageSize))]
        if let condition { query.append(URLQueryItem(name: "where", value: JSONWriter.string(condition))) }
        return query
    }

    /// The page the results of the last request make, its cursor after its last object; nil when the pull is over
    /// (no results, or none with an `objectId` and `updatedAt` to page past). Objects evsync cannot hold are skipped.
    mutating func page(of results: [ParseRemote.FoundObject], schema: EntitySchema) -> RemotePage? {
        var records: [RemoteRecord] = []
        var skipped: [SkippedRecord] = []
        var last: (String, String)?
        for object in results {
            let fields = object.fields
            guard let objectID = fields["objectId"]?.stringValue, let updatedAt = fields["updatedAt"]?.stringValue else {
                skipped.append(SkippedRecord(id: nil, version: nil, reason: object.unreadable
                    ?? "an object without objectId or updatedAt: \(JSONWriter.string(.object(fields)).prefix(200))"))
                continue
            }
            last = (updatedAt, objectID)
            if let unreadable = object.unreadable {
                skipped.append(SkippedRecord(id: ParseRemote.recordID(of: fields) ?? objectID, version: RemoteVersion(updatedAt), reason: unreadable))
                continue
            }
            guard let record = ParseRemote.record(from: fields, schema: schema) else {
                skipped.append(SkippedRecord(id: objectID, version: RemoteVersion(updatedAt), reason: "objectId '\(objectID)' is not an id evsync can hold"))
                continue
            }
            records.append(record)
        }
        guard let (updatedAt, objectID) = last else { return nil }
        let at = ParseRemote.dateValue(iso: updatedAt)
        condition = ["$or": [["updatedAt": ["$gt": at]], ["updatedAt": at, "objectId": ["$gt": .string(objectID)]]]]
        return RemotePage(records: records, skipped: skipped, cursor: ParseRemote.cursor(updatedAt: updatedAt, objectID: objectID))
    }
}
