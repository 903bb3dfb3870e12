/// What the log says about one record after some of its events: its local
/// fields (the view row), the server's fields as last known (the shadow) and
/// the server's version.
///
/// This fold is the one definition of "current state": the LMDB views, the
/// `--as-of` queries and the sync engine all apply events through it. There
/// is no status flag: a record needs pushing exactly when `row != shadow`.
///
/// `Codable` as `{row?, shadow?, version?}`, each left out when nil.
public struct RecordProjection: Sendable, Equatable, Codable {
    /// The record as the local tables show it; nil if it does not exist (or was deleted) here.
    public var row: JSONObject?
    /// The record as the server last held it, as far as the log knows; nil if not on the server.
    public var shadow: JSONObject?
    /// The server's version of `shadow`, once the server has been heard from.
    public var version: RemoteVersion?

    public init(row: JSONObject? = nil, shadow: JSONObject? = nil, version: RemoteVersion? = nil) {
        self.row = row
        self.shadow = shadow
        self.version = version
    }

    /// True when the local state differs from the server's: something to push.
    public var isPending: Bool { row != shadow }

    public mutating func apply(_ event: Event) {
        switch (event.kind, event.origin) {
        case (.created, .local):
            row = event.set
        case (.updated, .local):
            row = Self.applying(event, to: row ?? [:])
        case (.deleted, .local):
            row = nil
        case (.created, .remote), (.updated, .remote):
            // Remote changes are relative to the server's previous state, so
            // applying them to the row keeps local edits of other fields: the
            // field-by-field merge.
            // A record deleted here but still on the server stays deleted
            // until the delete is pushed (or a conflict event decides).
            if row != nil || shadow == nil { row = Self.applying(event, to: row ?? [:]) }
            shadow = Self.applying(event, to: shadow ?? [:])
            version = event.version
        case (.deleted, .remote):
            row = nil
            shadow = nil
            version = event.version
        case (.acknowledged, _):
            shadow = event.server?.fields
            version = event.version
        case (.conflict, _):
            row = event.resolved?.fields
            shadow = event.server?.fields
            version = event.version
        case (.baseline, _):
            // The state at a compaction's cut, which stands for the events it archived; only records
            // in step with the server are compacted, so the row is the shadow.
            row = event.local == .absent ? nil : event.set
            shadow = event.server.map(\.fields) ?? row
            version = event.version
        case (.left, _):
            // Out of reach, not deleted: nothing is known of the server's state until a pull reads the record again.
            row = nil
            shadow = nil
            version = nil
        case (.skipped, _), (.rejected, _), (.compacted, _):
            break  // the record was not stored: nothing changes
        }
    }

    static func applying(_ event: Event, to fields: JSONObject) -> JSONObject {
        var fields = fields
        for (name, value) in event.set { fields[name] = value }
        for name in event.unset { fields[name] = nil }
        return fields
    }
}
