/// The stored form of events (the values of the `events` database).
///
/// Events are written in format 2, a compact binary envelope with a
/// checksum; events written before it are JSON objects (`EventJSON`, format 1),
/// which are read forever and never rewritten. The first byte tells them
/// apart: `{` is format 1, anything else a binary format. Every binary format,
/// this one and any later, starts with its format byte and then the CRC-32C
/// of all its other bytes (the format byte, then everything after the CRC),
/// so a reader can tell a damaged event from one of a newer format it cannot read.
///
/// Format 2 (integers little-endian; varint: unsigned LEB128, shortest form;
/// string: varint byte count, then UTF-8):
///
/// | bytes       | field                                                                    |
/// |-------------|--------------------------------------------------------------------------|
/// | 1           | `0x02`                                                                   |
/// | 4           | CRC-32C of byte 0 and of every byte from 5 on                            |
/// | varint      | `seq`                                                                    |
/// | varint      | `at`, milliseconds since 1970, zigzag (`(n << 1) ^ (n >> 63)`)           |
/// | 1           | `kind` code << 2 \| `origin` code (`kinds`, `origins`)                   |
/// | 1           | flags: bit 0, `event` is a UUID; bit 1, `id` is a UUID; others 0         |
/// | 16 / string | `event`: a lower-case UUID's 16 bytes, else a string                     |
/// | string      | `entity`                                                                 |
/// | 16 / string | `id`: likewise                                                           |
/// | string      | `by`                                                                     |
/// | varint, …   | `set`: byte count, then the canonical JSON of the fields (0: no `set`)   |
/// | tag, …      | optional fields, each a `Tag` byte and its value, to the end, in tag order |
///
/// `set` stays canonical JSON (`JSONWriter.encodeObject`): a creation's view
/// row is those very bytes, copied rather than re-encoded. An unknown format
/// byte, code, flag or tag, in an event whose checksum holds, is an event
/// written by a newer evsync. Adding an optional field is one `Tag`, one
/// line in `write` (`append(event.reason, tag: .reason, to: &bytes)`) and one
/// case in `decode`; a kind, origin or policy is one entry at the end of its table.
package enum EventCoding {
    /// The format events are written in.
    public static let formatVersion = 2

    /// The codes of kinds, origins and policies are their positions in these tables: append only.
    static let kinds: [Event.Kind] = [.created, .updated, .deleted, .acknowledged, .conflict, .skipped, .rejected]
    static let origins: [Event.Origin] = [.local, .remote]
    static let policies: [ConflictPolicy] = [.serverWins, .clientWins]

    /// What follows a tag byte.
    enum Tag: UInt8 {
        /// varint count, then that many strings.
        case unset = 1
        /// varint: a `RemoteVersion` that is an integer.
        case versionInteger = 2
        /// string: any other `RemoteVersion`.
        case versionToken = 3
        /// varint byte count, then JSON: the object, or `null` for `.absent`.
        case server = 4
        case local = 5
        case resolved = 6
        /// 1 byte: the policy's code.
        case policy = 7
        /// string: why a server record was skipped (`skipped` events).
        case reason = 8
        /// varint: the `seq` of the conflict a local change resolves.
        case resolves = 9
    }

    private static let flagEventUUID: UInt8 = 1
    private static let flagRecordUUID: UInt8 = 2
    private static let headerCount = 5

    /// - Parameter encodedSet: `event.set` already encoded, if the caller has it.
    public static func encode(_ event: Event, encodedSet: [UInt8]? = nil) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(96 + (encodedSet?.count ?? event.set.count * 24))
        if let encodedSet {
            encodedSet.withUnsafeBytes { _ = write(event, encodedSet: $0, to: &bytes) }
        } else {
            write(event, to: &bytes)
        }
        return bytes
    }

    /// Writes the stored form of `event` at the end of `bytes`.
    /// - Returns: where, in `bytes`, `event.set` went (nothing if it is empty).
    /// - Parameter encodedSet: `event.set` already encoded (when given, `event.set` is not read).
    @discardableResult
    static func write(_ event: Event, encodedSet: UnsafeRawBufferPointer? = nil, to bytes: inout [UInt8]) -> Range<Int>? {
        let start = bytes.count
        let flags = appendHead(seq: event.seq, at: event.at, kind: event.kind, origin: event.origin, to: &bytes)
        if appendUUID(event.eventID, to: &bytes) { bytes[flags] |= flagEventUUID } else { append(event.eventID, to: &bytes) }
        append(event.entity, to: &bytes)
        var recordID = event.recordID
        recordID.withUTF8 { appendID(UnsafeRawBufferPointer($0), flags: flags, to: &bytes) }
        append(event.author, to: &bytes)
        var set: Range<Int>?
        if let encodedSet {
            appendVarint(UInt64(encodedSet.count), to: &bytes)
            set = bytes.count..<bytes.count + encodedSet.count
            bytes.append(contentsOf: encodedSet)
        } else if !event.set.isEmpty {
            set = appendCounted(to: &bytes) { JSONWriter.append(to: &$0) { $0.write(object: event.set) } }
        } else {
            bytes.append(0)
        }
        if !event.unset.isEmpty {
            bytes.append(Tag.unset.rawValue)
            appendVarint(UInt64(event.unset.count), to: &bytes)
            for field in event.unset { append(field, to: &bytes) }
        }
        switch event.version?.storage {
        case .integer(let number)?: bytes.append(Tag.versionInteger.rawValue); appendVarint(UInt64(number), to: &bytes)
        case .token(let token)?: append(token, tag: .versionToken, to: &bytes)
        case nil: break
        }
        append(event.server, tag: .server, to: &bytes)
        append(event.local, tag: .local, to: &bytes)
        append(event.resolved, tag: .resolved, to: &bytes)
        if let policy = event.policy { bytes.append(Tag.policy.rawValue); bytes.append(code(of: policy, in: policies)) }
        append(event.reason, tag: .reason, to: &bytes)
        if let resolves = event.resolves { bytes.append(Tag.resolves.rawValue); appendVarint(resolves, to: &bytes) }
        sealChecksum(ofEventAt: start, in: &bytes)
        return set
    }

    /// Writes what `write` writes for a local creation with a new event id,
    /// from bytes: `recordID` (UTF-8) and `set`, the fields' canonical JSON
    /// (`JSONWriter`), not empty. What `import` writes for each plain line
    /// (`ImportedLines`), without building an `Event`.
    static func writeLocalCreation(seq: UInt64, at: Int64, entity: String, recordID: UnsafeRawBufferPointer,
                                   author: String, set: UnsafeRawBufferPointer, to bytes: inout [UInt8]) {
        let start = bytes.count
        let flags = appendHead(seq: seq, at: at, kind: .created, origin: .local, to: &bytes)
        let (high, low) = UUIDv4.nextBits()
        withUnsafeBytes(of: high.bigEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: low.bigEndian) { bytes.append(contentsOf: $0) }
        bytes[flags] |= flagEventUUID
        append(entity, to: &bytes)
        appendID(recordID, flags: flags, to: &bytes)
        append(author, to: &bytes)
        appendVarint(UInt64(set.count), to: &bytes)
        bytes.append(contentsOf: set)
        sealChecksum(ofEventAt: start, in: &bytes)
    }

    /// Writes the fields every event of format 2 starts with, up to its flags, the checksum left as zeros;
    /// returns where the flags byte is.
    private static func appendHead(seq: UInt64, at: Int64, kind: Event.Kind, origin: Event.Origin,
                                   to bytes: inout [UInt8]) -> Int {
        bytes.append(UInt8(formatVersion))
        bytes.append(contentsOf: repeatElement(0, count: 4))
        appendVarint(seq, to: &bytes)
        appendVarint(UInt64(bitPattern: (at << 1) ^ (at >> 63)), to: &bytes)
        bytes.append(code(of: kind, in: kinds) << 2 | code(of: origin, in: origins))
        bytes.append(0)
        return bytes.count - 1
    }

    /// Writes the record id: its 16 bytes if it is a lower-case UUID (setting its flag), else as a string.
    private static func appendID(_ id: UnsafeRawBufferPointer, flags: Int, to bytes: inout [UInt8]) {
        if appendUUID(id, to: &bytes) {
            bytes[flags] |= flagRecordUUID
        } else {
            appendVarint(UInt64(id.count), to: &bytes)
            bytes.append(contentsOf: id)
        }
    }

    /// Fills in the checksum of the event that starts at `start` and ends with `bytes`.
    private static func sealChecksum(ofEventAt start: Int, in bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { buffer in
            let crc = checksum(of: UnsafeRawBufferPointer(rebasing: buffer[start...]))
            buffer.storeBytes(of: crc.littleEndian, toByteOffset: start + 1, as: UInt32.self)
        }
    }

    /// Decodes a stored event, of any format this evsync reads.
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws -> Event {
        var encodedSet: [UInt8]?
        return try decode(bytes, encodedSet: &encodedSet)
    }

    public static func decode(_ bytes: [UInt8]) throws -> Event {
        try bytes.withUnsafeBytes { try decode($0) }
    }

    /// Decodes a stored event and hands back its `set` as stored, which is
    /// already the canonical encoding of the fields (a creation's view row).
    static func decode(_ bytes: UnsafeRawBufferPointer, encodedSet: inout [UInt8]?) throws -> Event {
        if bytes.first == UInt8(ascii: "{") { return try EventJSON.decode(bytes, encodedSet: &encodedSet) }
        var reader = try checkedBody(of: bytes)
        let seq = try reader.varint()
        guard seq > 0 else { throw EventDecodingError(reason: "event has no seq") }
        let zigzag = try reader.varint()
        let at = Int64(bitPattern: zigzag >> 1) ^ -Int64(bitPattern: zigzag & 1)
        let kindAndOrigin = try reader.byte()
        guard let kind = entry(Int(kindAndOrigin >> 2), of: kinds), let origin = entry(Int(kindAndOrigin & 3), of: origins) else {
            throw newer("event has a kind or origin this evsync does not know (code \(kindAndOrigin))")
        }
        let flags = try readFlags(&reader)
        let eventID = flags & flagEventUUID != 0 ? try reader.uuid() : try reader.string()
        let entity = try reader.string()
        let recordID = flags & flagRecordUUID != 0 ? try reader.uuid() : try reader.string()
        let author = try reader.string()
        var set: JSONObject = [:]
        let setBytes = try reader.take(reader.count())
        if setBytes.isEmpty {
            encodedSet = nil
        } else {
            guard case .object(let fields) = try json(setBytes, "set") else { throw EventDecodingError(reason: "its set is not an object") }
            set = fields
            encodedSet = Array(setBytes)
        }
        var event = Event(seq: seq, eventID: eventID, at: at, entity: entity, recordID: recordID, kind: kind, origin: origin,
                          author: author, set: set)
        while !reader.isAtEnd {
            let tagByte = try reader.byte()
            guard let tag = Tag(rawValue: tagByte) else { throw newer("event has a field this evsync does not know (tag \(tagByte))") }
            switch tag {
            case .unset:
                event.unset = try (0..<reader.count()).map { _ in try reader.string() }
            case .versionInteger:
                let number = try reader.varint()
                guard number <= UInt64(Int64.max) else { throw EventDecodingError(reason: "its version is out of range") }
                event.version = RemoteVersion(Int64(number))
            case .versionToken:
                event.version = RemoteVersion(try reader.string())
            case .server: event.server = try state(&reader, "server")
            case .local: event.local = try state(&reader, "local")
            case .resolved: event.resolved = try state(&reader, "resolved")
            case .policy:
                let code = try reader.byte()
                guard let policy = entry(Int(code), of: policies) else { throw newer("event has a policy this evsync does not know (code \(code))") }
                event.policy = policy
            case .reason:
                event.reason = try reader.string()
            case .resolves:
                event.resolves = try reader.varint()
            }
        }
        return event
    }

    /// Whether a stored event is of the entity `name` (its canonical name,
    /// as UTF-8), read without decoding the event: of format 2, only the
    /// members before `entity`; of format 1, see `EventJSON.isEvent`.
    /// - Parameter scratch: a buffer kept from one call to the next.
    static func isEvent(_ bytes: UnsafeRawBufferPointer, of name: [UInt8], scratch: inout [UInt8]) throws -> Bool {
        if bytes.first == UInt8(ascii: "{") { return try EventJSON.isEvent(bytes, of: name, scratch: &scratch) }
        var reader = try checkedBody(of: bytes)
        _ = try reader.varint()
        _ = try reader.varint()
        _ = try reader.byte()
        if try readFlags(&reader) & flagEventUUID != 0 { _ = try reader.take(16) } else { _ = try reader.take(reader.count()) }
        return try reader.take(reader.count()).elementsEqual(name)
    }

    /// A stored event's kind, read without decoding the event (of format 2,
    /// only the members before it): what a scan for one kind reads of the rest.
    static func kind(of bytes: UnsafeRawBufferPointer) throws -> Event.Kind {
        if bytes.first == UInt8(ascii: "{") { return try decode(bytes).kind }
        var reader = try checkedBody(of: bytes)
        _ = try reader.varint()
        _ = try reader.varint()
        let kindAndOrigin = try reader.byte()
        guard let kind = entry(Int(kindAndOrigin >> 2), of: kinds), entry(Int(kindAndOrigin & 3), of: origins) != nil else {
            throw newer("event has a kind or origin this evsync does not know (code \(kindAndOrigin))")
        }
        return kind
    }

    /// The fields a stored event sets (empty when it sets none), decoded from
    /// its `set` alone: what a view row stored by reference (`RecordEntry`) reads.
    static func setFields(of bytes: UnsafeRawBufferPointer) throws -> JSONObject {
        if bytes.first == UInt8(ascii: "{") { return try decode(bytes).set }
        var reader = try checkedBody(of: bytes)
        _ = try reader.varint()
        _ = try reader.varint()
        _ = try reader.byte()
        let flags = try readFlags(&reader)
        _ = try reader.take(flags & flagEventUUID != 0 ? 16 : reader.count())
        _ = try reader.take(reader.count())
        _ = try reader.take(flags & flagRecordUUID != 0 ? 16 : reader.count())
        _ = try reader.take(reader.count())
        let setBytes = try reader.take(reader.count())
        guard !setBytes.isEmpty else { return [:] }
        guard case .object(let fields) = try json(setBytes, "set") else { throw EventDecodingError(reason: "its set is not an object") }
        return fields
    }

    /// Whether a stored event carries a checksum (every event but those of format 1).
    static func hasChecksum(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.first != UInt8(ascii: "{")
    }

    // MARK: Writing

    private static func code<T: Equatable>(of value: T, in table: [T]) -> UInt8 {
        guard let index = table.firstIndex(of: value) else { preconditionFailure("\(value) has no code in the event format") }
        return UInt8(index)
    }

    /// LEB128: seven bits a byte, low first, the high bit set on all but the last (view entries use it too).
    static func appendVarint(_ value: UInt64, to bytes: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    private static func append(_ string: String, to bytes: inout [UInt8]) {
        appendVarint(UInt64(string.utf8.count), to: &bytes)
        bytes.append(contentsOf: string.utf8)
    }

    /// An optional string field: its tag and the string, if it has one.
    private static func append(_ string: String?, tag: Tag, to bytes: inout [UInt8]) {
        guard let string else { return }
        bytes.append(tag.rawValue)
        append(string, to: &bytes)
    }

    private static func append(_ state: RecordState?, tag: Tag, to bytes: inout [UInt8]) {
        guard let state else { return }
        bytes.append(tag.rawValue)
        appendCounted(to: &bytes) { bytes in
            JSONWriter.append(to: &bytes) {
                if let fields = state.fields { $0.write(object: fields) } else { $0.raw("null") }
            }
        }
    }

    /// Appends what `body` writes, preceded by its byte count (moving it up
    /// by the count's size, rather than writing it aside); returns where the content went.
    @discardableResult
    private static func appendCounted(to bytes: inout [UInt8], _ body: (inout [UInt8]) -> Void) -> Range<Int> {
        let start = bytes.count
        body(&bytes)
        var count = UInt64(bytes.count - start)
        var size = 1
        while count >> (7 * size) != 0 { size += 1 }
        bytes.insert(contentsOf: repeatElement(0, count: size), at: start)
        for index in start..<(start + size) {
            bytes[index] = UInt8(truncatingIfNeeded: count) | (index < start + size - 1 ? 0x80 : 0)
            count >>= 7
        }
        return (start + size)..<bytes.count
    }

    /// Appends the 16 bytes of `text` if it is a lower-case UUID (`8-4-4-4-12` hex digits); else appends nothing.
    private static func appendUUID(_ text: String, to bytes: inout [UInt8]) -> Bool {
        var text = text
        return text.withUTF8 { appendUUID(UnsafeRawBufferPointer($0), to: &bytes) }
    }

    private static func appendUUID(_ utf8: UnsafeRawBufferPointer, to bytes: inout [UInt8]) -> Bool {
        guard utf8.count == 36 else { return false }
        let start = bytes.count
        var index = 0
        while index < 36 {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard utf8[index] == UInt8(ascii: "-") else { break }
                index += 1
                continue
            }
            guard let high = hexDigit(utf8[index]), let low = hexDigit(utf8[index + 1]) else { break }
            bytes.append(high << 4 | low)
            index += 2
        }
        guard index == 36 else {
            bytes.removeSubrange(start...)
            return false
        }
        return true
    }

    private static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        default: nil
        }
    }

    // MARK: Reading

    /// The checksum of a binary event: its format byte, then everything after the checksum.
    private static func checksum(of bytes: UnsafeRawBufferPointer) -> UInt32 {
        let format = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[..<1]))
        return CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[headerCount...]), continuing: format)
    }

    /// A reader past the header of a binary event whose checksum holds and whose format this evsync reads.
    private static func checkedBody(of bytes: UnsafeRawBufferPointer) throws -> Reader {
        guard bytes.count > headerCount else { throw EventDecodingError(reason: "event is cut short (\(bytes.count) bytes)") }
        guard UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 1, as: UInt32.self)) == checksum(of: bytes) else {
            throw EventDecodingError(reason: "its checksum does not match its bytes")
        }
        guard bytes[0] == UInt8(formatVersion) else {
            throw newer("event format \(bytes[0]) is newer than this evsync understands (\(formatVersion))")
        }
        return Reader(bytes: bytes, offset: headerCount)
    }

    private static func readFlags(_ reader: inout Reader) throws -> UInt8 {
        let flags = try reader.byte()
        guard flags & ~(flagEventUUID | flagRecordUUID) == 0 else { throw newer("event has flags this evsync does not know (\(flags))") }
        return flags
    }

    private static func state(_ reader: inout Reader, _ name: String) throws -> RecordState {
        switch try json(reader.take(reader.count()), name) {
        case .object(let fields): .present(fields)
        case .null: .absent
        default: throw EventDecodingError(reason: "its \(name) is neither an object nor null")
        }
    }

    private static func json(_ bytes: UnsafeRawBufferPointer, _ name: String) throws -> JSONValue {
        do {
            return try JSONParser.parse(bytes)
        } catch {
            throw EventDecodingError(reason: "its \(name) is not valid JSON (at byte \(error.offset): \(error.reason))")
        }
    }

    private static func entry<T>(_ index: Int, of table: [T]) -> T? {
        table.indices.contains(index) ? table[index] : nil
    }

    private static func newer(_ reason: String) -> EventDecodingError {
        EventDecodingError(reason: reason, isNewerFormat: true)
    }

    /// Reads a binary event front to back; running past its end is damage.
    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var offset: Int

        var isAtEnd: Bool { offset >= bytes.count }

        mutating func byte() throws -> UInt8 {
            guard offset < bytes.count else { throw cutShort() }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func varint() throws -> UInt64 {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                let byte = try self.byte()
                guard shift < 64, shift < 63 || byte <= 1 else { throw EventDecodingError(reason: "event has a number out of range at byte \(offset - 1)") }
                value |= UInt64(byte & 0x7F) << shift
                if byte < 0x80 { return value }
                shift += 7
            }
        }

        /// A byte count, which must fit in what is left.
        mutating func count() throws -> Int {
            let count = try varint()
            guard count <= UInt64(bytes.count - offset) else { throw cutShort() }
            return Int(count)
        }

        mutating func take(_ count: Int) throws -> UnsafeRawBufferPointer {
            guard count <= bytes.count - offset else { throw cutShort() }
            defer { offset += count }
            return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)])
        }

        mutating func string() throws -> String {
            String(decoding: try take(count()), as: UTF8.self)
        }

        /// 16 bytes as a lower-case UUID.
        mutating func uuid() throws -> String {
            let raw = try take(16)
            let hex: StaticString = "0123456789abcdef"
            return String(unsafeUninitializedCapacity: 36) { buffer in
                var position = 0
                for (index, byte) in raw.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        buffer[position] = UInt8(ascii: "-")
                        position += 1
                    }
                    buffer[position] = hex.utf8Start[Int(byte >> 4)]
                    buffer[position + 1] = hex.utf8Start[Int(byte & 0xF)]
                    position += 2
                }
                return position
            }
        }

        private func cutShort() -> EventDecodingError {
            EventDecodingError(reason: "event is cut short (\(bytes.count) bytes)")
        }
    }
}

/// A stored event, or an entry of the views, that cannot be decoded: the store is damaged (or newer).
package struct EventDecodingError: Error, Sendable, CustomStringConvertible {
    public let reason: String
    /// The entry is one of the views' (replaying the log can rebuild it), not an event of the log.
    public let inViews: Bool
    /// The event is in a format newer than this evsync's, rather than damaged.
    public let isNewerFormat: Bool
    /// The event's position in the log (its key), when the reader knows it.
    public internal(set) var seq: UInt64?

    init(reason: String, inViews: Bool = false, isNewerFormat: Bool = false, seq: UInt64? = nil) {
        self.reason = reason
        self.inViews = inViews
        self.isNewerFormat = isNewerFormat
        self.seq = seq
    }

    public var description: String {
        if inViews { return "corrupt entry in the views: \(reason)" }
        return "corrupt event \(seq.map { "\($0) " } ?? "")in the log: \(reason)"
    }
}
