/// The stored form of events: one compact JSON object per event, keys in a
/// fixed order, as documented by `Schemas/event.schema.json`.
public enum EventCoding {
    /// The version of the stored event format. Readers refuse events of a newer format.
    public static let formatVersion = 1

    /// - Parameter encodedSet: `event.set` already encoded, if the caller has it.
    public static func encode(_ event: Event, encodedSet: [UInt8]? = nil) -> [UInt8] {
        var writer = JSONWriter(capacity: 192 + event.set.count * 24)
        writer.open(UInt8(ascii: "{"))
        writer.raw("\"format\":"); writer.write(integer: Int64(formatVersion))
        writer.raw(",\"seq\":"); writer.write(integer: Int64(event.seq))
        writer.raw(",\"event\":"); writer.write(string: event.eventID)
        writer.raw(",\"at\":\""); Timestamp.writeISO8601(milliseconds: event.at, to: &writer); writer.raw("\"")
        writer.raw(",\"entity\":"); writer.write(string: event.entity)
        writer.raw(",\"id\":"); writer.write(string: event.recordID)
        writer.raw(",\"kind\":"); writer.write(string: event.kind.rawValue)
        writer.raw(",\"origin\":"); writer.write(string: event.origin.rawValue)
        writer.raw(",\"by\":"); writer.write(string: event.author)
        if !event.set.isEmpty {
            writer.raw(",\"set\":")
            if let encodedSet { writer.append(bytes: encodedSet) } else { writer.write(object: event.set) }
        }
        if !event.unset.isEmpty { writer.raw(",\"unset\":"); writer.write(.array(event.unset.map(JSONValue.string))) }
        if let version = event.version { writer.raw(",\"version\":"); writer.write(integer: version) }
        if let server = event.server { writer.raw(",\"server\":"); write(server, to: &writer) }
        if let local = event.local { writer.raw(",\"local\":"); write(local, to: &writer) }
        if let resolved = event.resolved { writer.raw(",\"resolved\":"); write(resolved, to: &writer) }
        if let policy = event.policy { writer.raw(",\"policy\":"); writer.write(string: policy) }
        writer.open(UInt8(ascii: "}"))
        return writer.bytes
    }

    private static func write(_ state: RecordState, to writer: inout JSONWriter) {
        switch state {
        case .present(let fields): writer.write(object: fields)
        case .absent: writer.raw("null")
        }
    }

    public static func decode(_ bytes: UnsafeRawBufferPointer) throws -> Event {
        guard case .object(let object) = try JSONParser.parse(bytes) else {
            throw EventDecodingError(reason: "an event is not a JSON object")
        }
        return try decode(object)
    }

    public static func decode(_ bytes: [UInt8]) throws -> Event {
        try bytes.withUnsafeBytes { try decode($0) }
    }

    static func decode(_ object: JSONObject) throws -> Event {
        func string(_ key: String) throws -> String {
            guard let value = object[key]?.stringValue else { throw EventDecodingError(reason: "event has no string '\(key)'") }
            return value
        }
        func state(_ key: String) -> RecordState? {
            switch object[key] {
            case nil: nil
            case .object(let fields)?: .present(fields)
            default: .absent
            }
        }
        guard let format = object["format"]?.int64Value else { throw EventDecodingError(reason: "event has no format") }
        guard format <= formatVersion else {
            throw EventDecodingError(reason: "event format \(format) is newer than this evsync understands (\(formatVersion))")
        }
        guard let seq = object["seq"]?.int64Value, seq > 0 else { throw EventDecodingError(reason: "event has no seq") }
        guard let at = Timestamp.parse(try string("at")) else { throw EventDecodingError(reason: "event has a bad 'at'") }
        guard let kind = Event.Kind(rawValue: try string("kind")) else { throw EventDecodingError(reason: "event has an unknown kind") }
        guard let origin = Event.Origin(rawValue: try string("origin")) else { throw EventDecodingError(reason: "event has an unknown origin") }
        return Event(
            seq: UInt64(seq), eventID: try string("event"), at: at, entity: try string("entity"), recordID: try string("id"),
            kind: kind, origin: origin, author: try string("by"),
            set: object["set"]?.objectValue ?? [:],
            unset: object["unset"]?.arrayValue?.compactMap(\.stringValue) ?? [],
            version: object["version"]?.int64Value,
            server: state("server"), local: state("local"), resolved: state("resolved"),
            policy: object["policy"]?.stringValue
        )
    }
}

public struct EventDecodingError: Error, Sendable, CustomStringConvertible {
    public let reason: String
    public var description: String { "corrupt event in the log: \(reason)" }
}
