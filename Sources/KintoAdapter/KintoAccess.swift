public import EventStore
import Foundation
import HTTPTransport
import RemoteHTTP

/// What this account may do with each collection, from Kinto's permissions endpoint (`GET /v1/permissions`,
/// the `permissions_endpoint` capability: on with `kinto.plugins.admin`, as in stock configs, or
/// `kinto.experimental_permissions_endpoint`). Without it the server does not say, and access stays unknown.
///
/// The endpoint lists each object this account has a permission on, with what that object's own ACL gives
/// (`write` widened to `read` on the same object, not to its children), so inheritance is applied here, as
/// Kinto's authorization applies it (`kinto.core.authorization`, `PERMISSIONS_INHERITANCE_TREE`): a bucket's
/// `write` is every collection's; its `read`, every collection's `read`; `record:create` is the collection's own;
/// a record's own `read` or `write` (shared one by one, or made by this account) is that record's alone.
extension KintoRemote {
    public func access(to entity: EntitySchema) throws -> EntityAccess? {
        let collection = place(of: entity)
        guard let granted = try permissions(in: collection.bucket) else { return nil }
        let access = KintoPermissions.access(bucket: granted.bucket, collection: granted.collections[collection.name] ?? [])
        // Records shared one by one: asked for only here, since the creator of every record holds a permission on it,
        // so that listing them all where the account writes the collection would cost a page per thousand records.
        guard access == .readOnly || access == .noAccess else { return access }
        let records = try recordPermissions(in: collection)
        if access == .noAccess { return records.isEmpty ? .noAccess : .sharedRecords }
        return records.contains("write") ? .readWriteSome : .readOnly
    }

    /// The permissions this account holds on records of `collection` of their own, all together.
    private func recordPermissions(in collection: KintoCollection) throws(HTTPRemoteError) -> Set<String> {
        var found: Set<String> = []
        try forEachPermission(query: [URLQueryItem(name: "bucket_id", value: collection.bucket),
                                      URLQueryItem(name: "collection_id", value: collection.name),
                                      URLQueryItem(name: "resource_name", value: "record")]) { entry in
            guard entry["bucket_id"]?.stringValue == collection.bucket, entry["collection_id"]?.stringValue == collection.name,
                  entry["resource_name"]?.stringValue == "record" else { return }
            found.formUnion(entry["permissions"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        }
        return found
    }

    /// Calls `body` with each entry `GET /permissions` lists for `query`, following `Next-Page` on this server.
    private func forEachPermission(query: [URLQueryItem], _ body: (JSONObject) -> Void) throws(HTTPRemoteError) {
        var next: URL? = url(["permissions"], query: query)
        while let page = next {
            let response = try send(HTTPRequest(method: "GET", url: page))
            try expect(response, [200], doing: "reading this account's permissions")
            for entry in try json(response, doing: "reading this account's permissions").objectValue?["data"]?.arrayValue ?? [] {
                if let object = entry.objectValue { body(object) }
            }
            next = try response.headers["next-page"].map { text throws(HTTPRemoteError) in try sameServer(text) }
        }
    }

    /// The permissions of a bucket and its collections, read once per bucket and sync; nil when the server
    /// has no permissions endpoint.
    private func permissions(in bucket: String) throws(HTTPRemoteError) -> KintoPermissions? {
        if let known = permissionsByBucket[bucket] { return known }
        let root = try serverRoot().objectValue ?? [:]
        // A bucket's writer (its owner, most often) writes every collection in it: read off the bucket itself, which
        // shows its permissions to its writers alone, that costs the server far less than the endpoint's walk.
        let principals = Set(root["user"]?.objectValue?["principals"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        let own = try send(HTTPRequest(method: "GET", url: url(["buckets", bucket])))
        if own.status == 200, let writers = try? JSONParser.parse(own.body).objectValue?["permissions"]?.objectValue?["write"]?.arrayValue,
           !principals.isDisjoint(with: writers.compactMap(\.stringValue)) {
            permissionsByBucket[bucket] = KintoPermissions(bucket: ["write"])
            return permissionsByBucket[bucket]
        }
        guard root["capabilities"]?.objectValue?["permissions_endpoint"] != nil else { return nil }
        var found = KintoPermissions()
        try forEachPermission(query: [URLQueryItem(name: "bucket_id", value: bucket),
                                      URLQueryItem(name: "in_resource_name", value: "bucket,collection")]) { found.add($0, bucket: bucket) }
        permissionsByBucket[bucket] = found
        return found
    }
}

/// The permission names Kinto lists for one bucket and its collections.
struct KintoPermissions {
    var bucket: Set<String> = []
    var collections: [String: Set<String>] = [:]

    /// Takes one entry of `GET /permissions`: another (another bucket, a group, a malformed entry) is ignored.
    mutating func add(_ entry: JSONObject, bucket id: String) {
        guard entry["bucket_id"]?.stringValue == id, let names = entry["permissions"]?.arrayValue?.compactMap(\.stringValue) else { return }
        switch entry["resource_name"]?.stringValue {
        case "bucket": bucket.formUnion(names)
        case "collection":
            guard let collection = entry["collection_id"]?.stringValue ?? entry["id"]?.stringValue else { return }
            collections[collection, default: []].formUnion(names)
        default: return
        }
    }

    /// What a collection's records allow, given the bucket's permissions and the collection's own.
    static func access(bucket: Set<String>, collection: Set<String>) -> EntityAccess {
        let write = bucket.contains("write") || collection.contains("write")
        let read = write || bucket.contains("read") || collection.contains("read")
        return EntityAccess(reads: read, changes: write, creates: write || collection.contains("record:create"))
    }
}
