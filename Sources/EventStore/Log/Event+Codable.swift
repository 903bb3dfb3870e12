/// `Event` as `Codable`, in the shape `log tail --json` and `history --json` print and
/// `Schemas/event.schema.json` documents: `format` (1), `seq`, `event` (the event's id), `at` (ISO 8601
/// in UTC with milliseconds), `entity`, `id` (the record's), `kind`, `origin`, `by` (the author), then
/// only what the event has: `set` and `unset` (left out when empty), `version` (a number when the
/// server's version is one, else its token), `server`, `local` and `resolved` (an object, or null for
/// a record absent on that side), `policy`, `reason`, `resolves`, `baseline` and `archive`.
///
/// Decoding takes that shape, also from the CLI's output, and refuses an event of a newer `format`.
extension Event: Codable {
    enum CodingKeys: String, CodingKey {
        case format, seq, eventID = "event", at, entity, recordID = "id", kind, origin, author = "by"
        case set, unset, version, server, local, resolved, policy, reason, resolves, baseline, archive
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if let format = try container.decodeIfPresent(Int.self, forKey: .format), format > EventJSON.formatVersion {
            throw DecodingError.dataCorruptedError(forKey: .format, in: container,
                debugDescription: "an event of format \(format), newer than this evsync reads (\(EventJSON.formatVersion))")
        }
        let time = try container.decode(String.self, forKey: .at)
        guard let at = Timestamp.parse(time) else {
            throw DecodingError.dataCorruptedError(forKey: .at, in: container, debugDescription: "'\(time)' is not an ISO 8601 date-time")
        }
        func state(_ key: CodingKeys) throws -> RecordState? {
            guard container.contains(key) else { return nil }
            return try container.decodeNil(forKey: key) ? .absent : .present(container.decode(JSONObject.self, forKey: key))
        }
        self.init(
            seq: try container.decode(UInt64.self, forKey: .seq), eventID: try container.decode(String.self, forKey: .eventID),
            at: at, entity: try container.decode(String.self, forKey: .entity),
            recordID: try container.decode(String.self, forKey: .recordID), kind: try container.decode(Kind.self, forKey: .kind),
            origin: try container.decode(Origin.self, forKey: .origin), author: try container.decode(String.self, forKey: .author),
            set: try container.decodeIfPresent(JSONObject.self, forKey: .set) ?? [:],
            unset: try container.decodeIfPresent([String].self, forKey: .unset) ?? [],
            version: try container.decodeIfPresent(RemoteVersion.self, forKey: .version),
            server: try state(.server), local: try state(.local), resolved: try state(.resolved),
            policy: try container.decodeIfPresent(ConflictPolicy.self, forKey: .policy),
            reason: try container.decodeIfPresent(String.self, forKey: .reason),
            resolves: try container.decodeIfPresent(UInt64.self, forKey: .resolves),
            baseline: try container.decodeIfPresent(Baseline.self, forKey: .baseline),
            archive: try container.decodeIfPresent(ArchiveInfo.self, forKey: .archive))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(EventJSON.formatVersion, forKey: .format)
        try container.encode(seq, forKey: .seq)
        try container.encode(eventID, forKey: .eventID)
        try container.encode(Timestamp.iso8601(milliseconds: at), forKey: .at)
        try container.encode(entity, forKey: .entity)
        try container.encode(recordID, forKey: .recordID)
        try container.encode(kind, forKey: .kind)
        try container.encode(origin, forKey: .origin)
        try container.encode(author, forKey: .author)
        if !set.isEmpty { try container.encode(set, forKey: .set) }
        if !unset.isEmpty { try container.encode(unset, forKey: .unset) }
        try container.encodeIfPresent(version, forKey: .version)
        for (state, key) in [(server, CodingKeys.server), (local, .local), (resolved, .resolved)] {
            switch state {
            case .present(let fields)?: try container.encode(fields, forKey: key)
            case .absent?: try container.encodeNil(forKey: key)
            case nil: break
            }
        }
        try container.encodeIfPresent(policy, forKey: .policy)
        try container.encodeIfPresent(reason, forKey: .reason)
        try container.encodeIfPresent(resolves, forKey: .resolves)
        try container.encodeIfPresent(baseline, forKey: .baseline)
        try container.encodeIfPresent(archive, forKey: .archive)
    }
}

/// A record's state on one side of a conflict or acknowledgement: its fields as an object, or null when absent.
extension RecordState: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        self = container.decodeNil() ? .absent : .present(try container.decode(JSONObject.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .present(let fields): try container.encode(fields)
        case .absent: try container.encodeNil()
        }
    }
}
