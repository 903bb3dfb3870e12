public import EventStore

/// A server evsync syncs with. The engine speaks only this protocol, in its
/// own terms: entities (by their schemas), records with opaque versions,
/// opaque pull cursors, conditional writes. Everything particular to one
/// server lives in its adapter: how an entity is named there (a Kinto
/// collection, a Parse class), which field names it reserves, which ids it
/// accepts, how versions and cursors are read. `KintoRemote` (the
/// `KintoAdapter` module) is one adapter, `InMemoryRemote` another.
///
/// Implementations are used by one sync at a time, from one thread. They
/// throw their own errors; conforming those to `RemoteError` tells the
/// engine how to report them (anything else is a plain failure).
public protocol SyncRemote: AnyObject {
    /// Where the data lives, without credentials: the author of remote
    /// events, and the key the store keeps pull cursors under.
    var address: String { get }

    /// Called once before a sync with every entity it will pull and push,
    /// and where each pull starts: the place to refuse an entity this server
    /// cannot hold (a field name it reserves, a name it cannot use) before
    /// anything is sent, and to start the first requests early.
    func prepare(_ entities: [(schema: EntitySchema, since: RemoteCursor?)]) throws

    /// The remote's own part of the store's meta: a short name (`dav`; 1 to 8 lower-case letters and digits) under
    /// which the state it hands with a page (`RemotePage.state`) is kept, per remote address and entity, written with
    /// the page's cursor in one transaction. Nil (the default): it keeps nothing but its cursors.
    var metaNamespace: String? { get }

    /// Called before `prepare`, for each entity whose pull goes on from a cursor, with the state this remote stored
    /// with it (`RemotePage.state`). Not called for a pull from the start: whatever was kept then is stale.
    func restore(_ state: String, of entity: EntitySchema)

    /// Whether a sync with this server takes the entity at all: false leaves it out of the sync (neither pulled
    /// nor pushed; its pending changes stay pending), for a server that has no place for it. True by default.
    func holds(_ entity: EntitySchema) -> Bool

    /// The most operations `push` accepts at once.
    func batchLimit() throws -> Int

    /// Calls `onPage` with each page of records changed after `since` (all
    /// live records when nil), oldest change first, deletions included as
    /// tombstones, each page with the cursor to resume after it. Stops early
    /// when `onPage` returns false. Creates whatever the entity needs on the
    /// server if it is missing.
    func changes(of entity: EntitySchema, since: RemoteCursor?, onPage: (RemotePage) throws -> Bool) throws

    /// Applies conditional writes, returning one outcome per operation, in order.
    func push(_ operations: [RemoteOperation], of entity: EntitySchema) throws -> [RemoteOutcome]

    /// Whether `version` is older than `other`, for a server whose versions
    /// are ordered (Kinto's timestamps): a pull never takes a record back to
    /// an older version than the log has (a duplicate in a page, a server
    /// going backwards). False when the server's versions have no order.
    func isVersion(_ version: RemoteVersion, olderThan other: RemoteVersion) -> Bool

    /// For a server that keeps no tombstones (Parse): the ids of every live
    /// record of the entity, read after its changes were pulled. The engine
    /// turns each record the log knows on the server but missing here into a
    /// remote deletion at `deletionVersion`. Nil (the default): the server
    /// reports its deletions in `changes`.
    func liveIDs(of entity: EntitySchema) throws -> Set<String>?

    /// The version logged with a deletion found by `liveIDs`.
    var deletionVersion: RemoteVersion { get }

    /// The newest version at or below which no pull from `cursor` reads again (`verify --remote`'s
    /// "unseen"): a cursor is the adapter's own token, which may hold more than a version.
    func pullFloor(of cursor: RemoteCursor) -> RemoteVersion?

    /// Whether the server says who made each change (remote events then carry
    /// that author instead of `address`); nil when this sync did not find out.
    var knowsAuthors: Bool? { get }

    /// Whether `listing` works: a sync then checks the server against it when it
    /// suspects a loss (another server, records kept after one). False by default.
    var canList: Bool { get }

    /// Calls `onPage` with the id and version of every live record the server
    /// holds, a page at a time, in any order (`verify --remote`). Stops early
    /// when `onPage` returns false.
    func listing(of entity: EntitySchema, onPage: ([(id: String, version: RemoteVersion)]) throws -> Bool) throws

    /// The record as the server holds it now; nil when it holds no live one.
    func record(_ id: String, of entity: EntitySchema) throws -> RemoteRecord?

    /// The live records of `ids` the server holds, in any order: a remote that can ask for many at once does
    /// (Kinto: `in_id`); by default, `record` for each.
    func records(_ ids: [String], of entity: EntitySchema) throws -> [RemoteRecord]

    /// Whether records are sealed before they reach the server (Sealing's `SealedRemote`): a store that synced
    /// sealed with an address never syncs with it otherwise. False by default.
    var sealsRecords: Bool { get }

    /// What the server lets this account do with the entity's records, asked after its pull (which creates what
    /// is missing); nil (the default) when the server does not say. The store keeps it (`Store.access(of:)`),
    /// and refuses a local change of a read-only entity up front. A throw leaves what an earlier sync learned.
    func access(to entity: EntitySchema) throws -> EntityAccess?

    /// Called before `prepare` for each entity the store holds only part of (`Store.scope(of:)`): every pull,
    /// count and listing of the entity then asks the server for the records that meet every condition, and a pull
    /// from a cursor also names those an edit elsewhere moved out (`RemotePage.outOfScope`). Throws, naming what
    /// it can express, for a condition its protocol cannot; by default, for any (this server syncs whole entities).
    func setScope(_ conditions: [FieldCondition], of entity: EntitySchema) throws
}

extension SyncRemote {
    public func prepare(_ entities: [(schema: EntitySchema, since: RemoteCursor?)]) throws {}

    public var metaNamespace: String? { nil }

    public func restore(_ state: String, of entity: EntitySchema) {}

    public func holds(_ entity: EntitySchema) -> Bool { true }

    public func isVersion(_ version: RemoteVersion, olderThan other: RemoteVersion) -> Bool { false }

    public func liveIDs(of entity: EntitySchema) throws -> Set<String>? { nil }

    public var deletionVersion: RemoteVersion { RemoteVersion("deleted") }

    public var knowsAuthors: Bool? { nil }

    public var canList: Bool { false }

    public var sealsRecords: Bool { false }

    public func access(to entity: EntitySchema) throws -> EntityAccess? { nil }

    public func setScope(_ conditions: [FieldCondition], of entity: EntitySchema) throws {
        throw SyncError(.invalidRemote, "\(entity.name) has a scope (evsync scope), and this server syncs whole entities only: "
            + "scopes are Kinto's (evsync scope \(entity.name) --all holds all of it)")
    }

    public func pullFloor(of cursor: RemoteCursor) -> RemoteVersion? { RemoteVersion(cursor.token) }

    public func listing(of entity: EntitySchema, onPage: ([(id: String, version: RemoteVersion)]) throws -> Bool) throws {
        throw SyncError(.server, "this remote cannot list its records")
    }

    public func record(_ id: String, of entity: EntitySchema) throws -> RemoteRecord? {
        throw SyncError(.server, "this remote cannot read one record")
    }

    public func records(_ ids: [String], of entity: EntitySchema) throws -> [RemoteRecord] {
        try ids.compactMap { try record($0, of: entity) }
    }
}

/// What the server did with one operation.
public enum RemoteOutcome: Sendable, Equatable {
    /// Applied; the record's new version.
    case applied(version: RemoteVersion)
    /// Applied, but the server answered with a record other than the one
    /// sent (other fields, not just the server's own members): `current` is
    /// what it holds, folded in as the server's state, never acknowledged as ours.
    case appliedDifferently(current: RemoteRecord)
    /// The precondition failed; the server's current record (a tombstone, or nil when it has none).
    case preconditionFailed(current: RemoteRecord?)
    /// The record is not on the server (deleting what is already gone).
    case notFound
    /// Refused for another reason (validation, permissions): not retried.
    /// `status` is the server's code for it (an HTTP status, a protocol error code).
    case rejected(status: Int, message: String)
}

/// An error a remote throws, saying how a sync should report it.
public protocol RemoteError: Error, CustomStringConvertible {
    /// What kind of failure it is, for the engine's `SyncError`.
    var syncCode: SyncError.Code { get }
    /// True for a refusal that promises nothing was written (a wrong passphrase): the engine does not record
    /// even the failure in `status`.
    var wroteNothing: Bool { get }
    /// True when the server no longer lets this account read an entity's place (a permission withdrawn): the
    /// engine leaves that entity as it is here, neither pulled nor pushed, names it (`SyncReport.unreadable`) and
    /// goes on with the others. Access lost is not a deletion, and not a server that lost records.
    var deniesAccess: Bool { get }
}

extension RemoteError {
    public var wroteNothing: Bool { false }
    public var deniesAccess: Bool { false }
}
