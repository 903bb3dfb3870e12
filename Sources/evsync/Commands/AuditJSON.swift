import EventStore

/// The `--json` results of blame, diff, conflicts, resolve, revert and why, as `Encodable` types. They go
/// through `JSONValueEncoder` and `JSONWriter` (keys sorted, numbers as their literals), the bytes every
/// other `--json` has; an optional left out is `?` in the `--json` help, one marked `NullWhenAbsent` is `null`.
enum AuditJSON {
    /// `value` as one line of JSON.
    static func text(_ value: some Encodable) throws -> String {
        Output.json(try JSONValueEncoder.encode(value))
    }

    /// What names an event: its number, time, author, origin, kind, and its version and reason if it has them.
    struct EventSummary: Encodable {
        let seq: UInt64
        let at: String
        let by: String
        let origin: String
        let kind: String
        let version: Version?
        let reason: String?

        init(_ event: Event) {
            seq = event.seq
            at = Timestamp.iso8601(milliseconds: event.at)
            by = event.author
            origin = event.origin.rawValue
            kind = event.kind.rawValue
            version = event.version.map(Version.init)
            reason = event.reason
        }
    }

    /// A server's version: a number when it is one, else its token.
    struct Version: Encodable {
        let version: RemoteVersion
        init(_ version: RemoteVersion) { self.version = version }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            if let integer = version.integer { try container.encode(integer) } else { try container.encode(version.token) }
        }
    }

    /// Two results as one object: the members of both.
    struct Merged<First: Encodable, Second: Encodable>: Encodable {
        let first: First
        let second: Second

        func encode(to encoder: any Encoder) throws {
            try first.encode(to: encoder)
            try second.encode(to: encoder)
        }
    }

    /// `blame`: `{entity, id, fields: {field: {value, seq, at, by, origin, kind, version?}}}`.
    struct BlameResult: Encodable {
        struct Value: Encodable { let value: EncodableJSON }
        let entity: String
        let id: String
        let fields: [String: Merged<EventSummary, Value>]

        init(_ blame: Blame) {
            entity = blame.record.entity
            id = blame.record.id
            fields = Dictionary(blame.fields.map { ($0.field, Merged(first: EventSummary($0.event), second: Value(value: EncodableJSON($0.value)))) },
                                uniquingKeysWith: { $1 })
        }
    }

    /// A field's value before and after, each left out where the field is absent; with the field's name
    /// in an array (`resolve`, `revert`), without it where the name is the key (`diff`).
    struct Change: Encodable {
        let field: String?
        let old: EncodableJSON?
        let new: EncodableJSON?

        init(_ change: FieldChange, named: Bool) {
            field = named ? change.field : nil
            (old, new) = (change.old.map(EncodableJSON.init), change.new.map(EncodableJSON.init))
        }
    }

    /// One element of `diff`'s array: `{entity, id, change: added|changed|deleted, fields: {field: {old?, new?}}}`.
    struct DiffEntry: Encodable {
        let entity: String
        let id: String
        let change: String
        let fields: [String: Change]

        init(_ diff: RecordDiff) {
            (entity, id, change) = (diff.entity, diff.id, diff.kind.rawValue)
            fields = Dictionary(diff.changes.map { ($0.field, Change($0, named: false)) }, uniquingKeysWith: { $1 })
        }
    }

    /// One element of `conflicts`' array: the conflict event's summary and
    /// `{entity, id, policy, won, deleted, fields: [{field, local?, server?, won}], resolvedBy}`.
    struct ConflictDetails: Encodable {
        struct Field: Encodable {
            let field: String
            let local: EncodableJSON?
            let server: EncodableJSON?
            let won: String
        }
        let entity: String
        let id: String
        @NullWhenAbsent var policy: String?
        let won: String
        @NullWhenAbsent var deleted: String?
        let fields: [Field]
        @NullWhenAbsent var resolvedBy: UInt64?

        static func entry(_ conflict: Conflict) -> Merged<EventSummary, ConflictDetails> {
            Merged(first: EventSummary(conflict.event), second: ConflictDetails(
                entity: conflict.event.entity, id: conflict.event.recordID, policy: conflict.event.policy?.rawValue,
                won: conflict.won.rawValue, deleted: conflict.deleted?.rawValue,
                fields: conflict.fields.map { Field(field: $0.field, local: $0.local.map(EncodableJSON.init),
                                                    server: $0.server.map(EncodableJSON.init), won: $0.won.rawValue) },
                resolvedBy: conflict.resolvedBy?.seq))
        }
    }

    /// What `resolve` and `revert` share: `{entity, id, kind, seq, changes: [{field, old?, new?}]}`.
    struct RestorationResult: Encodable {
        let entity: String
        let id: String
        @NullWhenAbsent var kind: String?
        @NullWhenAbsent var seq: UInt64?
        let changes: [Change]

        init(_ restoration: Restoration) {
            (entity, id) = (restoration.entity, restoration.id)
            (kind, seq) = (restoration.event?.kind.rawValue, restoration.event?.seq)
            changes = restoration.changes.map { Change($0, named: true) }
        }
    }

    /// `resolve`'s own members: `{conflict, take}`.
    struct Resolved: Encodable {
        let conflict: UInt64
        let take: String
    }

    /// `revert`'s own members: `{to, dryRun}`.
    struct Reverted: Encodable {
        let to: UInt64
        let dryRun: Bool
    }

    /// `why`: `{entity, id, pending, state, version, fields: [{field, local?, server?, since}], pendingSince, lastExchange, missingFromServer, held}`.
    struct WhyResult: Encodable {
        struct Field: Encodable {
            let field: String
            let local: EncodableJSON?
            let server: EncodableJSON?
            @NullWhenAbsent var since: EventSummary?
        }
        let entity: String
        let id: String
        let pending: Bool
        let state: String
        @NullWhenAbsent var version: String?
        let fields: [Field]
        @NullWhenAbsent var pendingSince: EventSummary?
        @NullWhenAbsent var lastExchange: EventSummary?
        /// Kept here while the server lacks it (`Store.recordsMissingFromServer`): in step with nothing.
        var missingFromServer = false
        /// Refused by the server, and not sent again until edited or reverted (`PendingReason.isHeld`).
        let held: Bool

        init(_ reason: PendingReason) {
            (entity, id, pending, state) = (reason.entity, reason.id, reason.isPending, reason.state.rawValue)
            version = reason.projection.version?.token
            fields = reason.fields.map { Field(field: $0.field, local: $0.local.map(EncodableJSON.init),
                                               server: $0.server.map(EncodableJSON.init), since: $0.since.map(EventSummary.init)) }
            pendingSince = reason.pendingSince.map(EventSummary.init)
            lastExchange = reason.lastExchange.map(EventSummary.init)
            held = reason.isHeld
        }
    }
}
