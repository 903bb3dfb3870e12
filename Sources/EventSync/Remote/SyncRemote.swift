/// A server evsync syncs with. The engine speaks only this protocol; the
/// Kinto adapter over HTTP is one implementation, `InMemoryRemote` (for fast
/// tests of the algorithm) another.
///
/// Implementations are used by one sync at a time, from one thread.
public protocol SyncRemote: AnyObject {
    /// Where the data lives, without credentials: the author of remote events.
    var address: String { get }

    /// The most operations `push` accepts at once.
    func batchLimit() throws(SyncError) -> Int

    /// Calls `onPage` with each page of records changed after `since` (all
    /// records when nil), oldest change first, deletions included as
    /// tombstones. Stops early when `onPage` returns false.
    /// Creates the collection (and its bucket) if they are missing.
    func changes(in collection: String, since: Int64?, onPage: (RemotePage) throws -> Bool) throws

    /// Applies conditional writes, returning one outcome per operation, in order.
    func push(_ operations: [RemoteOperation], to collection: String) throws(SyncError) -> [RemoteOutcome]

    /// Told which collections are about to be pulled, and from which cursor, so
    /// a remote can start those requests at once. Optional: the default does nothing.
    func willPull(_ collections: [(collection: String, since: Int64?)])
}

extension SyncRemote {
    public func willPull(_ collections: [(collection: String, since: Int64?)]) {}
}

/// A record as the server has it.
public struct RemoteRecord: Sendable, Equatable {
    public var id: String
    /// The server's version (Kinto's `last_modified`).
    public var version: Int64
    /// nil for a tombstone: the record was deleted on the server.
    public var fields: JSONObject?

    public init(id: String, version: Int64, fields: JSONObject?) {
        self.id = id
        self.version = version
        self.fields = fields
    }
}

/// A conditional write: it applies only if the server's record is still the version the local change was based on.
public enum RemoteOperation: Sendable, Equatable {
    /// Create, only if no live record has this id (`If-None-Match: *`).
    case create(id: String, fields: JSONObject)
    /// Replace, only if the server still has `version` (`If-Match`).
    case update(id: String, fields: JSONObject, version: Int64)
    /// Delete, only if the server still has `version` (`If-Match`).
    case delete(id: String, version: Int64)

    public var id: String {
        switch self {
        case .create(let id, _), .update(let id, _, _), .delete(let id, _): id
        }
    }
}

/// What the server did with one operation.
public enum RemoteOutcome: Sendable, Equatable {
    /// Applied; the record's new version.
    case applied(version: Int64)
    /// The precondition failed; the server's current record (a tombstone or nil when it has none).
    case preconditionFailed(current: RemoteRecord?)
    /// The record is not on the server (deleting what is already gone).
    case notFound
    /// Refused for another reason (validation, permissions): not retried.
    case rejected(status: Int, message: String)
}

/// Why a sync failed.
public struct SyncError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable {
        /// Another sync of this store is running.
        case busy
        /// The server cannot be reached, or keeps failing (network errors, 5xx, 429), after retries.
        case unavailable
        /// The server refused the credentials.
        case unauthorized
        /// The server answered something evsync cannot use.
        case server
        /// No remote, or one that is not a usable URL.
        case invalidRemote
        /// Anything else (the local store).
        case failure
    }

    public let code: Code
    public let message: String
    /// What the sync had done before it failed: every page and batch counted here is committed.
    public var partialReport: SyncReport?
    public var description: String { message }

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}
