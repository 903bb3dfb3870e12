public import EventStore
import Foundation
import HTTPTransport
import RemoteHTTP

/// What this account may do with an entity's collection: RFC 3744's `DAV:current-user-privilege-set` (Radicale
/// answers it from its rights, read-only collections included; Xandikos answers `all`).
extension DAVRemote {
    public func access(to entity: EntitySchema) throws -> EntityAccess? {
        guard try mapping(of: entity) != nil else { return nil }
        let collection = try collection(for: entity)
        // Made by this sync: its maker may write it. Looked at: the PROPFIND asked for the privileges too.
        if collection.created { return .readWrite }
        if collection.wasLookedAt { return collection.privileges.map(Self.access(privileges:)) }
        let answer = try send(HTTPRequest(method: "PROPFIND", url: collection.url, headers: [("Depth", "0")], body: Self.privilegesPropfind,
                                          contentType: Self.xml), doing: "asking what this account may do with \(collection.url.path)")
        guard answer.status == 207,
              let set = try multistatus(answer, doing: "reading what this account may do with \(collection.url.path)")
                .responses.first?.property(DAVNamespace.dav, "current-user-privilege-set")
        else { return nil }
        return Self.access(privileges: set)
    }

    static let privilegesPropfind = Array(#"<propfind xmlns="DAV:"><prop><current-user-privilege-set/></prop></propfind>"#.utf8)

    /// The access a `current-user-privilege-set` grants, RFC 3744's aggregates applied (§3.12: `all` holds every
    /// privilege; `write` holds `write-content`, `bind` and `unbind`).
    static func access(privileges set: DAVElement) -> EntityAccess {
        let names = Set(set.children(DAVNamespace.dav, "privilege").flatMap { $0.children.filter { $0.namespace == DAVNamespace.dav }.map(\.name) })
        let all = names.contains("all"), write = all || names.contains("write")
        return EntityAccess(reads: all || names.contains("read"), changes: write || names.contains("write-content"),
                            creates: write || names.contains("bind"))
    }
}
