import EventStore
import Foundation
/// How one server record becomes (at most) one event, given what the log
/// already says about that record. Pure: the engine calls it inside the
/// write transaction that stores the page.
///
/// - A version the log already has writes nothing (our own pushes coming back).
/// - Without local changes pending, the server's change is taken as it is.
/// - With local changes pending, fields are merged three ways against the
///   shadow (the server state the local edits were based on): a field changed
///   on one side keeps that side's value; a field changed on both sides, or
///   an update against a delete, is a conflict settled by the policy and
///   logged with both versions.
enum RemoteFold {
    /// What to append, without the envelope (id, time, author) the engine adds.
    enum Outcome: Equatable {
        case remote(kind: Event.Kind, set: JSONObject, unset: [String], version: RemoteVersion)
        case acknowledged(server: RecordState, version: RemoteVersion)
        case conflict(local: RecordState, server: RecordState, resolved: RecordState, version: RemoteVersion)
    }

    /// - Parameters:
    ///   - pastLocalStates: local states of the record since the server last spoke of it, oldest first;
    ///     asked for only when a conflict seems to arise, to recognise the server holding one of our own
    ///     earlier pushes (a sync that died before logging the acknowledgement).
    ///   - checkVersion: false when the record came from a failed precondition, where the version is news by definition.
    static func fold(_ remote: RemoteRecord, into projection: RecordProjection, policy: ConflictPolicy, checkVersion: Bool = true,
                     pastLocalStates: () throws -> [JSONObject?]) rethrows -> Outcome? {
        if checkVersion, projection.version == remote.version { return nil }
        let base = projection.shadow
        let local = projection.row
        let version = remote.version

        guard let server = remote.fields else {
            // The server deleted the record.
            if local == nil, base == nil { return nil }
            if !projection.isPending || local == nil { return .remote(kind: .deleted, set: [:], unset: [], version: version) }
            if try pastLocalStates().contains(where: { $0 == nil }) {
                return .acknowledged(server: .absent, version: version)
            }
            return .conflict(local: RecordState(local), server: .absent,
                             resolved: policy == .serverWins ? .absent : RecordState(local), version: version)
        }

        if !projection.isPending || local == server {
            let (set, unset) = difference(from: base ?? [:], to: server)
            return .remote(kind: base == nil ? .created : .updated, set: set, unset: unset, version: version)
        }
        if try pastLocalStates().contains(where: { $0 == server }) {
            return .acknowledged(server: .present(server), version: version)
        }
        guard let local else {
            // Deleted here, changed there.
            if server == base { return .remote(kind: .updated, set: [:], unset: [], version: version) }
            return .conflict(local: .absent, server: .present(server),
                             resolved: policy == .serverWins ? .present(server) : .absent, version: version)
        }
        let (merged, conflicting) = merge(base: base ?? [:], local: local, server: server, policy: policy)
        if conflicting.isEmpty {
            let (set, unset) = difference(from: base ?? [:], to: server)
            return .remote(kind: base == nil ? .created : .updated, set: set, unset: unset, version: version)
        }
        return .conflict(local: .present(local), server: .present(server), resolved: .present(merged), version: version)
    }

    /// Field-by-field three-way merge. Returns the merged fields and the fields changed on both sides.
    static func merge(base: JSONObject, local: JSONObject, server: JSONObject, policy: ConflictPolicy) -> (JSONObject, [String]) {
        var merged: JSONObject = [:]
        var conflicting: [String] = []
        for field in Set(base.keys).union(local.keys).union(server.keys).sorted() {
            let (b, l, s) = (base[field], local[field], server[field])
            let value: JSONValue?
            if l == s {
                value = l
            } else if l == b {
                value = s
            } else if s == b {
                value = l
            } else {
                conflicting.append(field)
                value = policy == .serverWins ? s : l
            }
            merged[field] = value
        }
        return (merged, conflicting)
    }

    /// The `set`/`unset` that turn `old` into `new`.
    static func difference(from old: JSONObject, to new: JSONObject) -> (JSONObject, [String]) {
        let set = new.filter { old[$0.key] != $0.value }
        let unset = old.keys.filter { new[$0] == nil }.sorted()
        return (set, unset)
    }
}
