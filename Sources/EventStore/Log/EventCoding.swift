import Storage
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
/// line in `write` (`append(event.reason, tag: .reason, to: &writer)`) and one
/// case in `decode` (EventCoding+Decoding.swift); a kind, origin or policy is one
/// entry at the end of its table.
package enum EventCoding {
    /// The format events are written in.
    public static let formatVersion = 2

    /// The codes of kinds, origins and policies are their positions in these tables: append only.
    static let kinds: [Event.Kind] = [.created, .updated, .deleted, .acknowledged, .conflict, .skipped, .rejected, .baseline, .compacted, .left]
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
        /// A `Baseline`: varint `compaction`; varint count, then the `covers` as varint deltas; varint
        /// count, then summaries (varint seq, zigzag varint at, kind << 2 | origin, string author, varint
        /// version kind (0 none, 1 integer, 2 token) and the version); varint count, then each field's
        /// name (string) and its setter's index; varint `lastExchange` index + 1 (0: none); varint `lastEvent` index.
        case baseline = 10
        /// varint byte count, then an `ArchiveInfo` as JSON.
        case archive = 11
        /// A `Baseline` as `baseline` writes it, but smaller (what evsync writes since): after the covers, varint
        /// count then the authors (strings), each once; a summary's author is its varint index among them; a
        /// field is its varint position + 1 in the event's `set` sorted by name (0: its name follows, a string).
        /// Of a record pulled from Kinto, whose authors are the bucket's URL, a baseline took 584 bytes in the
        /// first form and takes more than 80 fewer in this one (`EventCodingTests`).
        case sharedBaseline = 12
    }

    // Internal, not private: EventCoding+Decoding.swift reads them.
    static let flagEventUUID: UInt8 = 1
    static let flagRecordUUID: UInt8 = 2
    static let headerCount = 5

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
        BinaryWriter.appending(to: &bytes) { write(event, encodedSet: encodedSet, to: &$0) }
    }

    private static func write(_ event: Event, encodedSet: UnsafeRawBufferPointer?, to writer: inout BinaryWriter) -> Range<Int>? {
        let start = writer.count
        let flags = appendHead(seq: event.seq, at: event.at, kind: event.kind, origin: event.origin, to: &writer)
        if appendUUID(event.eventID, to: &writer) { writer[flags] |= flagEventUUID } else { writer.string(event.eventID) }
        writer.string(event.entity)
        var recordID = event.recordID
        recordID.withUTF8 { appendID(UnsafeRawBufferPointer($0), flags: flags, to: &writer) }
        writer.string(event.author)
        var set: Range<Int>?
        if let encodedSet {
            writer.varint(UInt64(encodedSet.count))
            set = writer.count..<writer.count + encodedSet.count
            writer.append(encodedSet)
        } else if !event.set.isEmpty {
            set = writer.counted { JSONWriter.append(to: &$0) { $0.write(object: event.set) } }
        } else {
            writer.byte(0)
        }
        if !event.unset.isEmpty {
            writer.byte(Tag.unset.rawValue)
            writer.varint(UInt64(event.unset.count))
            for field in event.unset { writer.string(field) }
        }
        switch event.version?.storage {
        case .integer(let number)?: writer.byte(Tag.versionInteger.rawValue); writer.varint(UInt64(number))
        case .token(let token)?: append(token, tag: .versionToken, to: &writer)
        case nil: break
        }
        append(event.server, tag: .server, to: &writer)
        append(event.local, tag: .local, to: &writer)
        append(event.resolved, tag: .resolved, to: &writer)
        if let policy = event.policy { writer.byte(Tag.policy.rawValue); writer.byte(code(of: policy, in: policies)) }
        append(event.reason, tag: .reason, to: &writer)
        if let resolves = event.resolves { writer.byte(Tag.resolves.rawValue); writer.varint(resolves) }
        if let baseline = event.baseline {
            writer.byte(Tag.sharedBaseline.rawValue)
            append(baseline, fields: event.set.keys.sorted(), to: &writer)
        }
        if let archive = event.archive {
            writer.byte(Tag.archive.rawValue)
            writer.counted { $0 += (try? JSONValueEncoder.encode(archive)).map(JSONWriter.encode) ?? [] }
        }
        sealChecksum(ofEventAt: start, in: &writer)
        return set
    }

    /// Writes what `write` writes for a local creation with a new event id,
    /// from bytes: `recordID` (UTF-8) and `set`, the fields' canonical JSON
    /// (`JSONWriter`), not empty. What `import` writes for each plain line
    /// (`ImportedLines`), without building an `Event`.
    static func writeLocalCreation(seq: UInt64, at: Int64, entity: String, recordID: UnsafeRawBufferPointer,
                                   author: String, set: UnsafeRawBufferPointer, to bytes: inout [UInt8]) {
        BinaryWriter.appending(to: &bytes) { writer in
            let start = writer.count
            let flags = appendHead(seq: seq, at: at, kind: .created, origin: .local, to: &writer)
            let (high, low) = UUIDv4.nextBits()
            writer.u64(high)
            writer.u64(low)
            writer[flags] |= flagEventUUID
            writer.string(entity)
            appendID(recordID, flags: flags, to: &writer)
            writer.string(author)
            writer.counted(set)
            sealChecksum(ofEventAt: start, in: &writer)
        }
    }

    /// Writes the fields every event of format 2 starts with, up to its flags, the checksum left as zeros;
    /// returns where the flags byte is.
    private static func appendHead(seq: UInt64, at: Int64, kind: Event.Kind, origin: Event.Origin,
                                   to writer: inout BinaryWriter) -> Int {
        writer.byte(UInt8(formatVersion))
        writer.u32(0)
        writer.varint(seq)
        writer.zigzag(at)
        writer.byte(code(of: kind, in: kinds) << 2 | code(of: origin, in: origins))
        writer.byte(0)
        return writer.count - 1
    }

    /// Writes the record id: its 16 bytes if it is a lower-case UUID (setting its flag), else as a string.
    private static func appendID(_ id: UnsafeRawBufferPointer, flags: Int, to writer: inout BinaryWriter) {
        if appendUUID(id, to: &writer) {
            writer[flags] |= flagRecordUUID
        } else {
            writer.counted(id)
        }
    }

    /// Fills in the checksum of the event that starts at `start` and ends with `bytes`.
    private static func sealChecksum(ofEventAt start: Int, in writer: inout BinaryWriter) {
        let crc = writer.bytes.withUnsafeBytes { checksum(of: UnsafeRawBufferPointer(rebasing: $0[start...])) }
        writer.setU32(crc, at: start + 1, .littleEndian)
    }

    // MARK: Writing

    private static func code<T: Equatable>(of value: T, in table: [T]) -> UInt8 {
        guard let index = table.firstIndex(of: value) else { preconditionFailure("\(value) has no code in the event format") }
        return UInt8(index)
    }

    /// - Parameter fields: the event's fields, sorted: a setter's field is written as its position among them.
    private static func append(_ baseline: Baseline, fields: [String], to writer: inout BinaryWriter) {
        writer.varint(baseline.compaction)
        writer.varint(UInt64(baseline.covers.count))
        var previous: UInt64 = 0
        for seq in baseline.covers {
            writer.varint(seq &- previous)
            previous = seq
        }
        // Each event once, however many fields it set; each author once, however many events it wrote.
        var summaries: [EventSummary] = []
        var index: [UInt64: Int] = [:]
        func number(_ summary: EventSummary) -> Int {
            if let known = index[summary.seq] { return known }
            index[summary.seq] = summaries.count
            summaries.append(summary)
            return summaries.count - 1
        }
        let setters = baseline.setters.sorted { $0.key < $1.key }.map { ($0.key, number($0.value)) }
        let lastExchange = baseline.lastExchange.map(number)
        let lastEvent = number(baseline.lastEvent)
        var authors: [String] = []
        for summary in summaries where !authors.contains(summary.author) { authors.append(summary.author) }
        writer.varint(UInt64(authors.count))
        for author in authors { writer.string(author) }
        writer.varint(UInt64(summaries.count))
        for summary in summaries {
            writer.varint(summary.seq)
            writer.zigzag(summary.at)
            writer.byte(code(of: summary.kind, in: kinds) << 2 | code(of: summary.origin, in: origins))
            writer.varint(UInt64(authors.firstIndex(of: summary.author) ?? 0))
            switch summary.version?.storage {
            case nil: writer.byte(0)
            case .integer(let number)?: writer.byte(1); writer.varint(UInt64(number))
            case .token(let token)?: writer.byte(2); writer.string(token)
            }
        }
        writer.varint(UInt64(setters.count))
        for (field, setter) in setters {
            if let position = fields.firstIndex(of: field) {
                writer.varint(UInt64(position) + 1)
            } else {
                writer.byte(0)
                writer.string(field)
            }
            writer.varint(UInt64(setter))
        }
        writer.varint(lastExchange.map { UInt64($0) + 1 } ?? 0)
        writer.varint(UInt64(lastEvent))
    }

    /// An optional string field: its tag and the string, if it has one.
    private static func append(_ string: String?, tag: Tag, to writer: inout BinaryWriter) {
        guard let string else { return }
        writer.byte(tag.rawValue)
        writer.string(string)
    }

    private static func append(_ state: RecordState?, tag: Tag, to writer: inout BinaryWriter) {
        guard let state else { return }
        writer.byte(tag.rawValue)
        writer.counted { bytes in
            JSONWriter.append(to: &bytes) {
                if let fields = state.fields { $0.write(object: fields) } else { $0.raw("null") }
            }
        }
    }

    /// Appends the 16 bytes of `text` if it is a lower-case UUID (`8-4-4-4-12` hex digits); else appends nothing.
    private static func appendUUID(_ text: String, to writer: inout BinaryWriter) -> Bool {
        var text = text
        return text.withUTF8 { appendUUID(UnsafeRawBufferPointer($0), to: &writer) }
    }

    private static func appendUUID(_ utf8: UnsafeRawBufferPointer, to writer: inout BinaryWriter) -> Bool {
        guard utf8.count == 36 else { return false }
        let start = writer.count
        var index = 0
        while index < 36 {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard utf8[index] == UInt8(ascii: "-") else { break }
                index += 1
                continue
            }
            guard let high = hexDigit(utf8[index]), let low = hexDigit(utf8[index + 1]) else { break }
            writer.byte(high << 4 | low)
            index += 2
        }
        guard index == 36 else {
            writer.bytes.removeSubrange(start...)
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

    // MARK: Checksum (written here, checked in EventCoding+Decoding.swift)

    /// The checksum of a binary event: its format byte, then everything after the checksum.
    static func checksum(of bytes: UnsafeRawBufferPointer) -> UInt32 {
        let format = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[..<1]))
        return CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[headerCount...]), continuing: format)
    }
}
