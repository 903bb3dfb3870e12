/// What a compaction leaves in the live log for a record whose older events it moved to an archive
/// segment (`Event.Kind.baseline`): the record's state at the cut (the event's `set` is the row, its
/// `version` the server's), and for each field the event that last set it, so that `show`, `list`,
/// `blame`, `why` and sync answer as before without the archive.
public struct Baseline: Sendable, Equatable {
    /// The `compacted` event that sealed the segment holding the events this baseline stands for.
    public var compaction: UInt64
    /// The record's events that the segment holds, oldest first.
    public var covers: [UInt64]
    /// For each field of the row, the event that last changed its value.
    public var setters: [String: EventSummary]
    /// The record's last exchange with the server (`acknowledged`, `rejected` or `conflict`), if any.
    public var lastExchange: EventSummary?
    /// The record's last event before the cut.
    public var lastEvent: EventSummary

    public init(compaction: UInt64, covers: [UInt64], setters: [String: EventSummary], lastExchange: EventSummary?,
                lastEvent: EventSummary) {
        self.compaction = compaction
        self.covers = covers
        self.setters = setters
        self.lastExchange = lastExchange
        self.lastEvent = lastEvent
    }
}

/// An archived event as a baseline remembers it: where, when, by whom and what kind, not what it set.
public struct EventSummary: Sendable, Equatable, Codable {
    public var seq: UInt64
    public var at: Int64
    public var kind: Event.Kind
    public var origin: Event.Origin
    public var author: String
    public var version: RemoteVersion?

    public init(_ event: Event) {
        (seq, at, kind, origin, author, version) = (event.seq, event.at, event.kind, event.origin, event.author, event.version)
    }

    /// The event as far as the summary knows it: no id, no fields.
    public func event(entity: String, recordID: String) -> Event {
        Event(seq: seq, eventID: "", at: at, entity: entity, recordID: recordID, kind: kind, origin: origin, author: author,
              version: version)
    }

    enum CodingKeys: String, CodingKey { case seq, at, kind, origin, author = "by", version }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let time = try container.decode(String.self, forKey: .at)
        guard let at = Timestamp.parse(time) else {
            throw DecodingError.dataCorruptedError(forKey: .at, in: container, debugDescription: "'\(time)' is not an ISO 8601 date-time")
        }
        self.at = at
        seq = try container.decode(UInt64.self, forKey: .seq)
        kind = try container.decode(Event.Kind.self, forKey: .kind)
        origin = try container.decode(Event.Origin.self, forKey: .origin)
        author = try container.decode(String.self, forKey: .author)
        version = try container.decodeIfPresent(RemoteVersion.self, forKey: .version)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(seq, forKey: .seq)
        try container.encode(Timestamp.iso8601(milliseconds: at), forKey: .at)
        try container.encode(kind, forKey: .kind)
        try container.encode(origin, forKey: .origin)
        try container.encode(author, forKey: .author)
        try container.encodeIfPresent(version, forKey: .version)
    }
}

/// `Baseline` as JSON (`log tail --json`): `{compaction, covers, setters: {field: summary}, lastExchange?, lastEvent}`.
extension Baseline: Codable {
    enum CodingKeys: String, CodingKey { case compaction, covers, setters, lastExchange, lastEvent }
}

/// What a `compacted` event seals: the archive segment a compaction wrote, and the cut it made.
public struct ArchiveInfo: Sendable, Equatable, Codable {
    /// The segment's file name, in the store's `archive/` directory.
    public var file: String
    /// The store the segment belongs to (`Store.storeID`).
    public var store: String
    /// The first and last event the segment holds, and how many (not every event between: the events of
    /// records that still decide something stay in the live log).
    public var first: UInt64
    public var last: UInt64
    public var count: UInt64
    /// SHA-256, in hex, over the segment's events (`ArchiveSegment`): its seal.
    public var sha256: String
    /// The segment file's size.
    public var bytes: UInt64
    /// The last event the compaction considered: a point before it needs the segment to be answered.
    public var cut: UInt64
    /// How many records it left a baseline for.
    public var records: UInt64

    public init(file: String, store: String, first: UInt64, last: UInt64, count: UInt64, sha256: String, bytes: UInt64,
                cut: UInt64, records: UInt64) {
        (self.file, self.store, self.first, self.last, self.count, self.sha256, self.bytes, self.cut, self.records)
            = (file, store, first, last, count, sha256, bytes, cut, records)
    }
}
