// What `blame`, `diff`, `conflicts` and `whyPending` answer (Store+Audit.swift), as values an app keeps or encodes.
// The results are `Codable` with their properties' names as keys (`RecordDiff.kind` as `change`, as
// `diff --json` names it); an optional left nil is left out, and a field's value that is JSON null is
// `null`, read back as `.null` (not as absent). Events inside are in the shape of `log tail --json`.

/// Who set each field of a record (`Store.blame`): `{record, fields}`.
public struct Blame: Sendable, Equatable, Codable {
    public let record: Record
    /// One per field of the record, sorted by name.
    public let fields: [FieldOrigin]
}

/// A field's current value and the event that set it: `{field, value, event}`.
public struct FieldOrigin: Sendable, Equatable, Codable {
    public let field: String
    public let value: JSONValue
    public let event: Event
}

/// How one record differs between two points (`Store.diff`): `{entity, id, change, changes}`.
public struct RecordDiff: Sendable, Equatable, Codable {
    /// `left`: gone from this store's tables without being deleted (a `left` event: no longer shared with this account).
    public enum Kind: String, Sendable, Codable { case added, changed, deleted, left }
    public let entity: String
    public let id: String
    public let kind: Kind
    /// The fields whose values differ, sorted by name: nil on one side for a field absent there.
    public let changes: [FieldChange]

    /// Nil when the record is the same at both points (or absent at both). `left`: its last event by the later
    /// point is a `left` one.
    init?(entity: String, id: String, old: JSONObject?, new: JSONObject?, left: Bool = false) {
        switch (old, new) {
        case (nil, nil): return nil
        case (nil, _?): kind = .added
        case (_?, nil): kind = left ? .left : .deleted
        case (let old?, let new?):
            guard old != new else { return nil }
            kind = .changed
        }
        self.entity = entity
        self.id = id
        changes = Store.changedFields(from: old, to: new).map { FieldChange(field: $0, old: old?[$0], new: new?[$0]) }
    }

    enum CodingKeys: String, CodingKey {
        case entity, id, kind = "change", changes
    }
}

/// A field's value before and after; nil where the field (or the record) is absent: `{field, old?, new?}`.
public struct FieldChange: Sendable, Equatable, Codable {
    public let field: String
    public let old: JSONValue?
    public let new: JSONValue?
}

extension FieldChange {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        field = try container.decode(String.self, forKey: .field)
        (old, new) = (try container.decodeJSONIfPresent(forKey: .old), try container.decodeJSONIfPresent(forKey: .new))
    }
}

/// A `conflict` event read for people: what each side had, field by field, and what won:
/// `{event, fields, deleted?, won, resolvedBy?}` (`resolvedBy` the whole event, where `conflicts --json` gives its number).
public struct Conflict: Sendable, Equatable, Codable {
    public enum Side: String, Sendable, Codable { case local, server }

    /// One field changed on both sides: `{field, local?, server?, won}`.
    public struct Field: Sendable, Equatable, Codable {
        public let field: String
        public let local: JSONValue?
        public let server: JSONValue?
        public let won: Side
    }

    /// The `conflict` event.
    public let event: Event
    /// The fields both sides changed, sorted; empty when one side deleted the record (see `deleted`).
    public let fields: [Field]
    /// Which side had deleted the record, for an update against a delete.
    public let deleted: Side?
    /// Which side won: the whole record for an update against a delete, else the fields in conflict.
    public let won: Side
    /// The local change (`evsync resolve`) that decided it again, if any.
    public let resolvedBy: Event?

    public var isOpen: Bool { resolvedBy == nil }

    init(event: Event, base: JSONObject?, resolvedBy: Event?) {
        self.event = event
        self.resolvedBy = resolvedBy
        let local = event.local?.fields, server = event.server?.fields, resolved = event.resolved?.fields
        deleted = local == nil ? .local : server == nil ? .server : nil
        // A merge keeps one-sided changes of both sides: only the fields in conflict follow the policy.
        won = deleted != nil ? (resolved == server ? .server : .local) : (event.policy == .clientWins ? .local : .server)
        guard let local, let server else {
            fields = []
            return
        }
        let base = base ?? [:]
        fields = Set(local.keys).union(server.keys).sorted().compactMap { name in
            let (b, l, s) = (base[name], local[name], server[name])
            guard l != s, l != b, s != b else { return nil }
            return Field(field: name, local: l, server: s, won: resolved?[name] == s ? .server : .local)
        }
    }
}

/// Why a record is pending (`Store.whyPending`): `{entity, id, projection, fields, pendingSince?, lastExchange?, lastEvent}`.
public struct PendingReason: Sendable, Equatable, Codable {
    public let entity: String
    public let id: String
    /// The record here (`row`) and as the server last held it (`shadow`), with the server's version.
    public let projection: RecordProjection
    /// The fields that differ from the server's state, sorted, with the event that set each here.
    public let fields: [PendingField]
    /// The event after which the record became pending, this time; nil when it is in step.
    public let pendingSince: Event?
    /// The last exchange with the server about this record: the `acknowledged` event of its last
    /// successful push, the `rejected` event of a push the server refused (with its reason), or a
    /// `conflict` (a push refused because the server had changed, or a pull).
    public let lastExchange: Event?
    public let lastEvent: Event
    /// The store's remote refused its last push, and nothing happened to it since: syncs do not send it again
    /// until it is edited or reverted, or a sync is asked to (`SyncEngine.sync(resendRefused:)`).
    public var isHeld = false

    public var isPending: Bool { projection.isPending }

    /// Where the record stands against the server's state; the raw values are what `evsync why --json` prints.
    public enum State: String, Sendable, Codable {
        /// Not pending: the record is as the server holds it.
        case inStep
        /// Not pending: deleted here and on the server.
        case deleted
        /// Not pending: it left this store without being deleted, here or on the server (its last event, `left`, says why).
        case left
        /// Pending: created here, not on the server yet.
        case createdHere
        /// Pending: deleted here, still on the server.
        case deletedHere
        /// Pending: fields changed here (`fields`).
        case changedHere
    }

    public var state: State {
        switch (projection.row, projection.shadow, isPending) {
        case (_, _, false): projection.row != nil ? .inStep : lastEvent.kind == .left ? .left : .deleted
        case (_?, nil, _): .createdHere
        case (nil, _?, _): .deletedHere
        default: .changedHere
        }
    }
}

/// A field that differs between the record here and on the server: `{field, local?, server?, since?}`.
public struct PendingField: Sendable, Equatable, Codable {
    public let field: String
    public let local: JSONValue?
    public let server: JSONValue?
    /// The event that set the local value (or removed it).
    public let since: Event?
}

extension Conflict.Field {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        field = try container.decode(String.self, forKey: .field)
        (local, server) = (try container.decodeJSONIfPresent(forKey: .local), try container.decodeJSONIfPresent(forKey: .server))
        won = try container.decode(Conflict.Side.self, forKey: .won)
    }
}

extension PendingReason {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        entity = try container.decode(String.self, forKey: .entity)
        id = try container.decode(String.self, forKey: .id)
        projection = try container.decode(RecordProjection.self, forKey: .projection)
        fields = try container.decode([PendingField].self, forKey: .fields)
        pendingSince = try container.decodeIfPresent(Event.self, forKey: .pendingSince)
        lastExchange = try container.decodeIfPresent(Event.self, forKey: .lastExchange)
        lastEvent = try container.decode(Event.self, forKey: .lastEvent)
        // Written by an evsync before holding refusals: not held.
        isHeld = try container.decodeIfPresent(Bool.self, forKey: .isHeld) ?? false
    }
}

extension PendingField {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        field = try container.decode(String.self, forKey: .field)
        (local, server) = (try container.decodeJSONIfPresent(forKey: .local), try container.decodeJSONIfPresent(forKey: .server))
        since = try container.decodeIfPresent(Event.self, forKey: .since)
    }
}
