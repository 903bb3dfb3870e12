/// One immutable entry of the log: a change to one record, where it came from and when.
///
/// The log holds nothing else: the current tables, what is still to push and
/// every conflict are derived from the sequence of events. See
/// `Schemas/event.schema.json` for the stored form, which is also its `Codable`
/// form (`Event+Codable.swift`).
public struct Event: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable, Codable {
        /// A new record, with all its fields in `set`.
        case created
        /// Some fields changed (`set`) or were removed (`unset`).
        case updated
        /// The record was deleted.
        case deleted
        /// The server accepted our pushed state of the record (`server`) as `version`.
        case acknowledged
        /// Both sides changed the record: holds both versions and what was kept.
        case conflict
        /// A server record the store could not hold (`reason` says why), passed
        /// over so that the rest of the pull goes on. Changes no view but `history`;
        /// `id` is empty when the server gave no usable id (`reason` quotes what it gave).
        case skipped
        /// A push the server refused (`reason` says why: its status and message). The record
        /// stays pending; changes no view but `history`. Logged once for the same refusal in a row.
        case rejected
        /// A compaction's summary of a record whose older events it archived (`baseline`): its state at
        /// the cut (`set` the row, `version` the server's, `local` `.absent` for a deleted record) and who
        /// set each field. Folds as that state; `history` shows the archived events in its place when
        /// the archive is present.
        case baseline
        /// A compaction sealed an archive segment (`archive`). Of no record; changes no view.
        case compacted
        /// The record left this store's tables without being deleted, here or on the server: the server no
        /// longer lets this account read it (`reason`: "no longer shared with you"). What the log knows of the
        /// server's state goes with it; a pull that reads the record again brings it back, its history going on.
        /// `history`, `diff` and `why` say it left, never that it was deleted.
        case left

        /// A note in the record's history (`skipped`, `rejected`): says nothing of the record's state,
        /// here or on the server, so it changes no view but `history`.
        public var isNote: Bool { self == .skipped || self == .rejected || self == .compacted }
    }

    public enum Origin: String, Sendable, CaseIterable, Codable {
        case local
        case remote
    }

    /// Position in the log, from 1, without gaps.
    public var seq: UInt64
    /// A unique id of this event (a UUID).
    public var eventID: String
    /// When the event was appended, in milliseconds since 1970 (UTC); `date` is the same moment as a `Date`.
    public var at: Int64
    /// The entity's canonical name, as its schema spells it (`Holiday`).
    public var entity: String
    public var recordID: String
    public var kind: Kind
    public var origin: Origin
    /// Who made the change: `user@host` for local changes, the remote's address for remote ones.
    public var author: String
    /// Fields set by a `created` or `updated` event.
    public var set: JSONObject
    /// Fields removed by an `updated` event.
    public var unset: [String]
    /// The server's version of the record after this event (remote events, acknowledgements, conflicts).
    public var version: RemoteVersion?
    /// The server's state of the record (acknowledgements and conflicts).
    public var server: RecordState?
    /// The local state before a conflict was resolved.
    public var local: RecordState?
    /// The state a conflict resolved to.
    public var resolved: RecordState?
    /// The policy that resolved a conflict.
    public var policy: ConflictPolicy?
    /// Why a server record was skipped (`skipped` events).
    public var reason: String?
    /// The `seq` of the `conflict` event this local change decides again (`evsync resolve`).
    public var resolves: UInt64?
    /// What a `baseline` event stands for.
    public var baseline: Baseline?
    /// The segment a `compacted` event sealed.
    public var archive: ArchiveInfo?

    public init(
        seq: UInt64 = 0, eventID: String, at: Int64, entity: String, recordID: String, kind: Kind, origin: Origin,
        author: String, set: JSONObject = [:], unset: [String] = [], version: RemoteVersion? = nil,
        server: RecordState? = nil, local: RecordState? = nil, resolved: RecordState? = nil, policy: ConflictPolicy? = nil,
        reason: String? = nil, resolves: UInt64? = nil, baseline: Baseline? = nil, archive: ArchiveInfo? = nil
    ) {
        self.seq = seq
        self.eventID = eventID
        self.at = at
        self.entity = entity
        self.recordID = recordID
        self.kind = kind
        self.origin = origin
        self.author = author
        self.set = set
        self.unset = unset
        self.version = version
        self.server = server
        self.local = local
        self.resolved = resolved
        self.policy = policy
        self.reason = reason
        self.resolves = resolves
        self.baseline = baseline
        self.archive = archive
    }
}

/// A record's fields, or the fact that it does not exist (never created, or deleted).
public enum RecordState: Sendable, Equatable {
    case present(JSONObject)
    case absent

    public var fields: JSONObject? {
        if case .present(let fields) = self { return fields }
        return nil
    }

    public init(_ fields: JSONObject?) {
        self = fields.map(RecordState.present) ?? .absent
    }
}
