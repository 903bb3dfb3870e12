/// A record as a server holds it: what a pull brings and a failed
/// conditional write reports.
public struct RemoteRecord: Sendable, Equatable {
    public var id: String
    /// The server's version of the record.
    public var version: RemoteVersion
    /// nil for a tombstone: the record was deleted on the server.
    public var fields: JSONObject?
    /// Who made this version on the server (`account:bob`), when the server
    /// says; nil credits the change to the remote's address.
    public var author: String?
    /// Fields of the entity the server does not hold (a DAV item's unmapped fields): the record says nothing of
    /// them, so a sync keeps the local row's values instead of reading their absence as the server unsetting them.
    public var localFields: Set<String>

    public init(id: String, version: RemoteVersion, fields: JSONObject?, author: String? = nil, localFields: Set<String> = []) {
        self.id = id
        self.version = version
        self.fields = fields
        self.author = author
        self.localFields = localFields
    }
}

/// A server record the store cannot hold (no id, no version, not an object,
/// a value it cannot read): a pull passes over it, logging a `skipped` event
/// with the reason, and the rest of the page goes on. A sync reports it
/// (`SyncReport.skipped`, where EventSync calls it `Skip`), and so the records
/// a restored server lost (`SyncReport.goneFromServer`).
///
/// `Codable` as `{entity, id?, version?, reason}`.
public struct SkippedRecord: Sendable, Equatable, Codable, CustomStringConvertible {
    /// The entity it is a record of; empty on a remote's page, which does not
    /// say (the store is told the entity a page is of), until a sync reports it.
    public var entity: String
    /// The record's id; nil when the server gave none the store can use (`reason` quotes what it gave).
    public var id: String?
    /// The server's version of the record, when it gave one.
    public var version: RemoteVersion?
    /// Why it was skipped, for people: `history`, `sync` and `log tail` show it.
    public var reason: String

    public init(entity: String = "", id: String?, version: RemoteVersion? = nil, reason: String) {
        self.entity = entity
        self.id = id
        self.version = version
        self.reason = reason
    }

    /// `Holiday abc: it has no last_modified`: the form `sync` prints.
    public var description: String { "\(entity) \(id ?? "(no usable id)"): \(reason)" }
}

/// A local change still to push, as a conditional write: it applies only if
/// the server's record is still the version the local change was based on.
/// The outbox view says which records have one; the log says which.
public enum RemoteOperation: Sendable, Equatable {
    /// Create, only if the server has no live record with this id.
    case create(id: String, fields: JSONObject)
    /// Replace, only if the server still has `version`.
    case update(id: String, fields: JSONObject, version: RemoteVersion)
    /// Delete, only if the server still has `version`.
    case delete(id: String, version: RemoteVersion)

    public var id: String {
        switch self {
        case .create(let id, _), .update(let id, _, _), .delete(let id, _): id
        }
    }

    /// The state the operation leaves on the server.
    public var sentState: RecordState {
        switch self {
        case .create(_, let fields), .update(_, let fields, _): .present(fields)
        case .delete: .absent
        }
    }
}
