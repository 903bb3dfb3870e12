import Synchronization

/// A server held in memory with Kinto's semantics (increasing versions,
/// tombstones, conditional writes, pages), for fast tests of sync logic
/// in apps and in evsync itself. The real server is `KintoRemote`.
public final class InMemoryRemote: SyncRemote, Sendable {
    public let address: String
    public let pageSize: Int
    private let state = Mutex<State>(State())

    private struct State {
        var clock: Int64 = 1_000
        var collections: [String: [String: RemoteRecord]] = [:]
    }

    public init(address: String = "memory://evsync", pageSize: Int = 2) {
        self.address = address
        self.pageSize = pageSize
    }

    public func batchLimit() -> Int { 25 }

    /// Changes a record as another client (a web app) would; returns its new version.
    @discardableResult
    public func put(_ id: String, _ fields: JSONObject?, in collection: String) -> Int64 {
        state.withLock { state in
            state.clock += 1
            state.collections[collection, default: [:]][id] = RemoteRecord(id: id, version: state.clock, fields: fields)
            return state.clock
        }
    }

    /// Live records of a collection, by id.
    public func records(in collection: String) -> [String: JSONObject] {
        state.withLock { $0.collections[collection, default: [:]].compactMapValues(\.fields) }
    }

    public func changes(in collection: String, since: Int64?, onPage: (RemotePage) throws -> Bool) throws {
        let changed = state.withLock { state in
            state.collections[collection, default: [:]].values
                .filter { $0.version > (since ?? 0) && (since != nil || $0.fields != nil) }
                .sorted { $0.version < $1.version }
        }
        var start = 0
        while start < changed.count {
            let page = Array(changed[start..<min(start + pageSize, changed.count)])
            start += pageSize
            guard try onPage(RemotePage(records: page, total: changed.count)) else { return }
        }
    }

    public func push(_ operations: [RemoteOperation], to collection: String) -> [RemoteOutcome] {
        state.withLock { state in
            operations.map { operation in
                let current = state.collections[collection, default: [:]][operation.id]
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
                state.collections[collection, default: [:]][operation.id] = RemoteRecord(id: operation.id, version: state.clock, fields: newFields)
                return .applied(version: state.clock)
            }
        }
    }
}
