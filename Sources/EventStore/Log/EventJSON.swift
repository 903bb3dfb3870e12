import Foundation

/// Events as JSON objects, keys in a fixed order, as documented by
/// `Schemas/event.schema.json`: what `log tail --json` and `history --json`
/// print, and the stored form of every event written before format 2
/// (`EventCoding`), which stays readable.
///
/// The shape's `format` member is 1, and stays 1 whatever the stored form:
/// it names this JSON shape, not how the log stores the event.
package enum EventJSON {
    /// The version of the JSON shape. Readers refuse events of a newer one.
    public static let formatVersion = 1

    /// - Parameter encodedSet: `event.set` already encoded, if the caller has it.
    public static func encode(_ event: Event, encodedSet: [UInt8]? = nil) -> [UInt8] {
        var writer = JSONWriter(capacity: 192 + (encodedSet?.count ?? event.set.count * 24))
        if let encodedSet {
            encodedSet.withUnsafeBytes { _ = write(event, encodedSet: $0, to: &writer) }
        } else {
            write(event, to: &writer)
        }
        return writer.bytes
    }

    /// Writes the stored form of `event` at the end of `writer`'s bytes.
    /// - Returns: where, in those bytes, `event.set` went (nothing if it is empty).
    /// - Parameter encodedSet: `event.set` already encoded (when given, `event.set` is not read).
    @discardableResult
    static func write(_ event: Event, encodedSet: UnsafeRawBufferPointer? = nil, to writer: inout JSONWriter) -> Range<Int>? {
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
        var set: Range<Int>?
        if encodedSet != nil || !event.set.isEmpty {
            writer.raw(",\"set\":")
            let start = writer.bytes.count
            if let encodedSet { writer.append(raw: encodedSet) } else { writer.write(object: event.set) }
            set = start..<writer.bytes.count
        }
        if !event.unset.isEmpty { writer.raw(",\"unset\":"); writer.write(.array(event.unset.map(JSONValue.string))) }
        if let version = event.version {
            writer.raw(",\"version\":")
            switch version.storage {
            case .integer(let number): writer.write(integer: number)
            case .token(let token): writer.write(string: token)
            }
        }
        if let server = event.server { writer.raw(",\"server\":"); write(server, to: &writer) }
        if let local = event.local { writer.raw(",\"local\":"); write(local, to: &writer) }
        if let resolved = event.resolved { writer.raw(",\"resolved\":"); write(resolved, to: &writer) }
        if let policy = event.policy { writer.raw(",\"policy\":"); writer.write(string: policy.rawValue) }
        if let reason = event.reason { writer.raw(",\"reason\":"); writer.write(string: reason) }
        if let resolves = event.resolves { writer.raw(",\"resolves\":"); writer.write(integer: Int64(clamping: resolves)) }
        if let baseline = event.baseline, let value = try? JSONValueEncoder.encode(baseline) {
            writer.raw(",\"baseline\":"); writer.write(value)
        }
        if let archive = event.archive, let value = try? JSONValueEncoder.encode(archive) {
            writer.raw(",\"archive\":"); writer.write(value)
        }
        writer.open(UInt8(ascii: "}"))
        return set
    }

    private static func write(_ state: RecordState, to writer: inout JSONWriter) {
        switch state {
        case .present(let fields): writer.write(object: fields)
        case .absent: writer.raw("null")
        }
    }

    /// Decodes an event. The envelope is read member by member, not
    /// built as a dictionary first: `rebuild-views` decodes every event.
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws -> Event {
        var encodedSet: [UInt8]?
        return try decode(bytes, encodedSet: &encodedSet)
    }

    /// Decodes an event and hands back its `set` as written, which is
    /// already the canonical encoding of the fields (a creation's view row)
    /// when the event was written by evsync.
    static func decode(_ bytes: UnsafeRawBufferPointer, encodedSet: inout [UInt8]?) throws -> Event {
        var format: Int64?, seq: Int64?, at: Int64?, version: RemoteVersion?
        var eventID: String?, entity: String?, recordID: String?, author: String?, policy: ConflictPolicy?, reason: String?
        var resolves: UInt64?
        var baselineValue: JSONValue?, archiveValue: JSONValue?
        var kind: Event.Kind?, origin: Event.Origin?
        var set: JSONObject = [:], unset: [String] = []
        var server: RecordState?, local: RecordState?, resolved: RecordState?
        func state(_ value: JSONValue) -> RecordState {
            if case .object(let fields) = value { return .present(fields) }
            return .absent
        }
        encodedSet = nil
        do {
            try JSONParser.parseObject(bytes) { key, parser in
                if key.equals("set") {
                    let (value, raw) = try parser.valueAndBytes()
                    encodedSet = Array(raw)
                    set = value.objectValue ?? [:]
                    return
                }
                let value = try parser.value()
                if key.equals("format") { format = value.int64Value }
                else if key.equals("seq") { seq = value.int64Value }
                else if key.equals("event") { eventID = value.stringValue }
                else if key.equals("at") { at = value.stringValue.flatMap(Timestamp.parse) }
                else if key.equals("entity") { entity = value.stringValue }
                else if key.equals("id") { recordID = value.stringValue }
                else if key.equals("kind") { kind = value.stringValue.flatMap(Event.Kind.init(rawValue:)) }
                else if key.equals("origin") { origin = value.stringValue.flatMap(Event.Origin.init(rawValue:)) }
                else if key.equals("by") { author = value.stringValue }
                else if key.equals("unset") { unset = value.arrayValue?.compactMap(\.stringValue) ?? [] }
                else if key.equals("version") { version = value.int64Value.map(RemoteVersion.init) ?? value.stringValue.map(RemoteVersion.init) }
                else if key.equals("server") { server = state(value) }
                else if key.equals("local") { local = state(value) }
                else if key.equals("resolved") { resolved = state(value) }
                else if key.equals("policy") { policy = value.stringValue.flatMap(ConflictPolicy.init(rawValue:)) }
                else if key.equals("reason") { reason = value.stringValue }
                else if key.equals("resolves") { resolves = value.int64Value.flatMap { UInt64(exactly: $0) } }
                else if key.equals("baseline") { baselineValue = value }
                else if key.equals("archive") { archiveValue = value }
                // Anything else: a field added by a later minor revision of format 1.
            }
        } catch let error as JSONParseError {
            // Stored bytes that do not parse are damage, not bad input.
            throw EventDecodingError(reason: "event is not valid JSON (at byte \(error.offset): \(error.reason))")
        }
        guard let format else { throw EventDecodingError(reason: "event has no format") }
        guard format <= formatVersion else {
            throw EventDecodingError(reason: "event format \(format) is newer than this evsync understands (\(formatVersion))",
                                     isNewerFormat: true)
        }
        guard let seq, seq > 0 else { throw EventDecodingError(reason: "event has no seq") }
        guard let at else { throw EventDecodingError(reason: "event has a bad 'at'") }
        guard let kind else { throw EventDecodingError(reason: "event has an unknown kind") }
        guard let origin else { throw EventDecodingError(reason: "event has an unknown origin") }
        guard let eventID, let entity, let recordID, let author else {
            throw EventDecodingError(reason: "event lacks one of event, entity, id, by")
        }
        // A compaction's members say what the log no longer holds: one that does not decode is damage, never dropped.
        let baseline = try baselineValue.map { value in
            do { return try JSONValueDecoder().decode(Baseline.self, from: value) } catch {
                throw EventDecodingError(reason: "event has a bad 'baseline' (\(error))")
            }
        }
        let archive = try archiveValue.map { value in
            do { return try JSONValueDecoder().decode(ArchiveInfo.self, from: value) } catch {
                throw EventDecodingError(reason: "event has a bad 'archive' (\(error))")
            }
        }
        return Event(seq: UInt64(seq), eventID: eventID, at: at, entity: entity, recordID: recordID, kind: kind, origin: origin,
                     author: author, set: set, unset: unset, version: version, server: server, local: local,
                     resolved: resolved, policy: policy, reason: reason, resolves: resolves, baseline: baseline, archive: archive)
    }

    public static func decode(_ bytes: [UInt8]) throws -> Event {
        try bytes.withUnsafeBytes { try decode($0) }
    }

    /// Whether a stored event is of the entity `name` (its canonical name,
    /// as UTF-8), read without decoding the event: the members written before
    /// `entity` are a few short scalars, and nothing after it is parsed.
    /// - Parameter scratch: a buffer kept from one call to the next.
    static func isEvent(_ bytes: UnsafeRawBufferPointer, of name: [UInt8], scratch: inout [UInt8]) throws -> Bool {
        var found: Bool?
        try JSONParser.scanObject(bytes) { key, parser in
            scratch.removeAll(keepingCapacity: true)
            let isString = try parser.string(appendingTo: &scratch)
            guard key.equals("entity") else { return true }
            found = isString && scratch == name
            return false
        }
        guard let found else { throw EventDecodingError(reason: "event lacks one of event, entity, id, by") }
        return found
    }
}
