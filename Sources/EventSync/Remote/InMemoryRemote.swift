public import EventStore
import Synchronization

/// A server held in memory, for fast tests of sync logic in apps and in
/// evsync itself: versions from a counter, tombstones, conditional writes,
/// pages, a cursor that is the newest version seen. Entities are kept by
/// name. The real servers are adapters such as `KintoRemote`.
///
/// Its versions and cursors are text (`v1001`), not numbers, as a CouchDB
/// revision or an ETag would be: whatever passes through the engine must
/// pass as an opaque token.
public final class InMemoryRemote: SyncRemote, Sendable {
    public let address: String
    public let pageSize: Int
    private let state = Mutex<State>(State())

    private struct State {
        var clock: Int64 = 1_000
        var entities: [String: [String: RemoteRecord]] = [:]
    }

    public init(address: String = "memory://evsync", pageSize: Int = 2) {
        self.address = address
        self.pageSize = pageSize
    }

    public func batchLimit() -> Int { 25 }

    public func isVersion(_ version: RemoteVersion, olderThan other: RemoteVersion) -> Bool {
        Self.clock(of: version.token) < Self.clock(of: other.token)
    }

    private static func version(_ clock: Int64) -> RemoteVersion { RemoteVersion("v\(clock)") }

    /// The counter behind a version or cursor token (`v1001`); 0 for a token not of this remote.
    private static func clock(of token: String) -> Int64 { Int64(token.dropFirst()) ?? 0 }

    /// Changes a record as another client (a web app) would; returns its new version. `localFields`: fields the
    /// record says nothing of, as a server that holds only some of the entity's (`RemoteRecord.localFields`).
    @discardableResult
    public func put(_ id: String, _ fields: JSONObject?, in entity: String, localFields: Set<String> = []) -> RemoteVersion {
        state.withLock { state in
            state.clock += 1
            let version = Self.version(state.clock)
            state.entities[entity, default: [:]][id] = RemoteRecord(id: id, version: version, fields: fields, localFields: localFields)
            return version
        }
    }

    /// Live records of an entity, by id.
    public func records(in entity: String) -> [String: JSONObject] {
        state.withLock { $0.entities[entity, default: [:]].compactMapValues(\.fields) }
    }

    public func changes(of entity: EntitySchema, since: RemoteCursor?, onPage: (RemotePage) throws -> Bool) throws {
        let after = since.flatMap { Self.clock(of: $0.token) }
        let changed = state.withLock { state in
            state.entities[entity.name, default: [:]].values
                .filter { Self.clock(of: $0.version.token) > (after ?? 0) && (after != nil || $0.fields != nil) }
                .sorted { Self.clock(of: $0.version.token) < Self.clock(of: $1.version.token) }
        }
        if since == nil, changed.isEmpty {
            // A first pull of an empty entity still gives a cursor, as Kinto's ETag does: without one, the
            // next sync would be a first pull again and take the records we pushed for another server's.
            _ = try onPage(RemotePage(records: [], cursor: RemoteCursor(state.withLock { Self.version($0.clock).token })))
            return
        }
        var start = 0
        while start < changed.count {
            let page = Array(changed[start..<min(start + pageSize, changed.count)])
            start += pageSize
            let cursor = page.last.map { RemoteCursor($0.version.token) }
            guard try onPage(RemotePage(records: page, cursor: cursor, total: changed.count)) else { return }
        }
    }

    public func push(_ operations: [RemoteOperation], of entity: EntitySchema) -> [RemoteOutcome] {
        state.withLock { state in
            operations.map { operation in
                let current = state.entities[entity.name, default: [:]][operation.id]
                let live = current?.fields != nil ? current : nil
                let newFields: JSONObject?
                switch operation {
                case .create(_, let fields):
                    guard live == nil else { return .preconditionFailed(current: live) }
                    newFields = fields
                case .update(_, let fields, let version):
                    guard let live, live.version == version else { return .preconditionFailed(current: live) }
                    newFields = fields
                case .delete(_, let version):
                    guard let live else { return .notFound }
                    guard live.version == version else { return .preconditionFailed(current: live) }
                    newFields = nil
                }
                state.clock += 1
                let version = Self.version(state.clock)
                state.entities[entity.name, default: [:]][operation.id] = RemoteRecord(id: operation.id, version: version, fields: newFields)
                return .applied(version: version)
            }
        }
    }
}
