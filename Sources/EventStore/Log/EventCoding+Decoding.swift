/// Reading the stored form of events (the format is described on `EventCoding`).
extension EventCoding {
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
            case .baseline:
                event.baseline = try baseline(&reader, shared: false, fields: [])
            case .sharedBaseline:
                event.baseline = try baseline(&reader, shared: true, fields: event.set.keys.sorted())
            case .archive:
                do {
                    event.archive = try JSONValueDecoder().decode(ArchiveInfo.self, from: json(reader.take(reader.count()), "archive"))
                } catch let error as EventDecodingError {
                    throw error
                } catch {
                    throw EventDecodingError(reason: "its archive is not one evsync wrote")
                }
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

    /// A stored event's time, read without decoding the event (of format 2, only the members before it):
    /// what stamping the next event and finding a point in time read.
    static func at(of bytes: UnsafeRawBufferPointer) throws -> Int64 {
        if bytes.first == UInt8(ascii: "{") { return try decode(bytes).at }
        var reader = try checkedBody(of: bytes)
        _ = try reader.varint()
        let zigzag = try reader.varint()
        return Int64(bitPattern: zigzag >> 1) ^ -Int64(bitPattern: zigzag & 1)
    }

    /// The fields a stored event sets (empty when it sets none), decoded from
    /// its `set` alone: what a view row stored by reference (`RecordEntry`) reads.
    static func setFields(of bytes: UnsafeRawBufferPointer) throws -> JSONObject {
        guard let setBytes = try encodedSet(of: bytes) else { return try decode(bytes).set }
        guard !setBytes.isEmpty else { return [:] }
        guard case .object(let fields) = try json(setBytes, "set") else { throw EventDecodingError(reason: "its set is not an object") }
        return fields
    }

    /// The JSON of what a stored event sets, as stored (empty when it sets none), its checksum checked;
    /// nil for an event of format 1, whose `set` is not stored apart.
    static func encodedSet(of bytes: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
        if bytes.first == UInt8(ascii: "{") { return nil }
        var reader = try checkedBody(of: bytes)
        _ = try reader.varint()
        _ = try reader.varint()
        _ = try reader.byte()
        let flags = try readFlags(&reader)
        _ = try reader.take(flags & flagEventUUID != 0 ? 16 : reader.count())
        _ = try reader.take(reader.count())
        _ = try reader.take(flags & flagRecordUUID != 0 ? 16 : reader.count())
        _ = try reader.take(reader.count())
        return try reader.take(reader.count())
    }

    /// Whether a stored event carries a checksum (every event but those of format 1).
    static func hasChecksum(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.first != UInt8(ascii: "{")
    }

    // MARK: Reading

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

    /// A `baseline` (`shared`: a `sharedBaseline`, whose setters name the event's `fields` by position).
    private static func baseline(_ reader: inout Reader, shared: Bool, fields: [String]) throws -> Baseline {
        let compaction = try reader.varint()
        var covers: [UInt64] = []
        var seq: UInt64 = 0
        for _ in 0..<(try reader.count()) {
            let (sum, overflow) = seq.addingReportingOverflow(try reader.varint())
            guard !overflow else { throw EventDecodingError(reason: "its baseline covers an event out of range") }
            seq = sum
            covers.append(seq)
        }
        let authors = shared ? try (0..<reader.count()).map { _ in try reader.string() } : []
        func author() throws -> String {
            guard shared else { return try reader.string() }
            let index = try reader.varint()
            guard index < UInt64(authors.count) else { throw EventDecodingError(reason: "its baseline names an author it does not hold") }
            return authors[Int(index)]
        }
        var summaries: [EventSummary] = []
        for _ in 0..<(try reader.count()) {
            let seq = try reader.varint()
            let zigzag = try reader.varint()
            let at = Int64(bitPattern: zigzag >> 1) ^ -Int64(bitPattern: zigzag & 1)
            let kindAndOrigin = try reader.byte()
            guard let kind = entry(Int(kindAndOrigin >> 2), of: kinds), let origin = entry(Int(kindAndOrigin & 3), of: origins) else {
                throw newer("its baseline has a kind or origin this evsync does not know (code \(kindAndOrigin))")
            }
            var summary = EventSummary(Event(seq: seq, eventID: "", at: at, entity: "", recordID: "", kind: kind, origin: origin,
                                             author: try author()))
            switch try reader.byte() {
            case 0: break
            case 1:
                let number = try reader.varint()
                guard number <= UInt64(Int64.max) else { throw EventDecodingError(reason: "its baseline has a version out of range") }
                summary.version = RemoteVersion(Int64(number))
            case 2: summary.version = RemoteVersion(try reader.string())
            case let code: throw newer("its baseline has a version of a kind this evsync does not know (\(code))")
            }
            summaries.append(summary)
        }
        func summary(_ index: UInt64) throws -> EventSummary {
            guard index < UInt64(summaries.count) else { throw EventDecodingError(reason: "its baseline names an event it does not hold") }
            return summaries[Int(index)]
        }
        var setters: [String: EventSummary] = [:]
        for _ in 0..<(try reader.count()) {
            let field: String
            if shared, case let position = try reader.varint(), position > 0 {
                guard position <= UInt64(fields.count) else { throw EventDecodingError(reason: "its baseline names a field it does not hold") }
                field = fields[Int(position - 1)]
            } else {
                field = try reader.string()
            }
            setters[field] = try summary(reader.varint())
        }
        let lastExchange = try reader.varint()
        return Baseline(compaction: compaction, covers: covers, setters: setters,
                        lastExchange: lastExchange == 0 ? nil : try summary(lastExchange - 1), lastEvent: try summary(reader.varint()))
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
            let raw = try take(16)   // two big-endian halves, as `EventCoding` writes `UUIDv4.nextBits()`
            return UUIDv4.text(high: UInt64(bigEndian: raw.loadUnaligned(as: UInt64.self)),
                               low: UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
        }

        private func cutShort() -> EventDecodingError {
            EventDecodingError(reason: "event is cut short (\(bytes.count) bytes)")
        }
    }
}
