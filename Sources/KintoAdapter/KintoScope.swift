public import EventStore
import Foundation
import EventSync
import HTTPTransport
import RemoteHTTP

/// A store's scope of an entity as Kinto filters (`?min_date=2027-01-01`): every list of the collection's records a
/// pull, a count or a listing sends carries them, so records outside the scope are never read in full. A filtered
/// `_since` still lists every tombstone (Kinto matches filters against live records only), so deletions arrive as
/// ever; what it cannot show is a record an edit elsewhere moved out, which two small listings of ids since the
/// cursor find: one filtered, one not.
extension KintoRemote {
    public func setScope(_ conditions: [FieldCondition], of entity: EntitySchema) throws {
        scopes[entity.name] = try conditions.map { condition throws(HTTPRemoteError) in try Self.filter(condition, of: entity) }
    }

    /// Kinto's filter for one condition: equality, and the four orderings, which its storage compares as evsync does
    /// for numbers and ISO dates; `!=` (a record without the field) and `~` it would decide otherwise, so they are refused.
    static func filter(_ condition: FieldCondition, of entity: EntitySchema) throws(HTTPRemoteError) -> URLQueryItem {
        let field = condition.field == "id" ? "id" : condition.field
        let name: String
        switch condition.op {
        case .equal: name = field
        case .less: name = "lt_" + field
        case .atMost: name = "max_" + field
        case .greater: name = "gt_" + field
        case .atLeast: name = "min_" + field
        case .notEqual, .contains:
            throw HTTPRemoteError(.invalidRemote, "\(entity.name)'s scope: Kinto filters can say =, <, <=, > and >= of a field, "
                + "not \(condition) (evsync scope \(entity.name) --where …)")
        }
        return URLQueryItem(name: name, value: condition.operand)
    }

    /// The scope's filters for the entity's collection; none when the store holds all of it.
    func scopeFilters(of entity: String) -> [URLQueryItem] { scopes[entity] ?? [] }

    /// For a scoped entity pulled from a cursor: the records changed since that the scope no longer takes (moved out by
    /// an edit elsewhere), as a page of no records and no cursor, written before the pull's pages. Nil when the entity
    /// is not scoped or none moved out.
    func scopeChanges(of collection: KintoCollection, entity: String, since: Int64) throws(HTTPRemoteError) -> RemotePage? {
        guard let filters = scopes[entity] else { return nil }
        let changed = try changedIDs(of: collection, since: since, filters: [])
        let kept = Set(try changedIDs(of: collection, since: since, filters: filters).keys)
        var page = RemotePage(records: [], cursor: nil)
        page.outOfScope = changed.filter { !$0.value && !kept.contains($0.key) }.keys.sorted()
        return page.outOfScope.isEmpty ? nil : page
    }

    /// The ids changed since `since` (`_fields=id,last_modified,deleted`), each with whether it was deleted.
    private func changedIDs(of collection: KintoCollection, since: Int64, filters: [URLQueryItem]) throws(HTTPRemoteError) -> [String: Bool] {
        var found: [String: Bool] = [:]
        let query = [URLQueryItem(name: "_since", value: String(since)), URLQueryItem(name: "_fields", value: "id,last_modified,deleted"),
                     URLQueryItem(name: "_sort", value: "last_modified"), URLQueryItem(name: "_limit", value: String(pageSize))] + filters
        var next: URL? = url(collection.recordSegments(), query: query)
        while let page = next {
            let response = try send(HTTPRequest(method: "GET", url: page))
            try expect(response, [200], doing: "listing what changed in \(collection)")
            let records = try Self.page(from: response.body, collection: collection.name)
            for entry in records.entries { found[records.id(of: entry)] = entry.fields == nil }
            next = try response.headers["next-page"].map { text throws(HTTPRemoteError) in try sameServer(text) }
        }
        return found
    }
}
