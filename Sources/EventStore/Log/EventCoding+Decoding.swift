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
        do {
            return try decodeBody(bytes, encodedSet: &encodedSet)
        } catch let error as BinaryReadError {
            throw damage(error, in: bytes)
        }
    }

    private static func decodeBody(_ bytes: UnsafeRawBufferPointer, encodedSet: inout [UInt8]?) throws -> Event {
        var reader = try checkedBody(of: bytes)
        let seq = try reader.varint("seq")
        guard seq > 0 else { throw EventDecodingError(reason: "event has no seq") }
        let at = try reader.zigzag("time")
        let kindAndOrigin = try reader.byte("kind and origin")
        guard let kind = entry(Int(kindAndOrigin >> 2), of: kinds), let origin = entry(Int(kindAndOrigin & 3), of: origins) else {
            throw newer("event has a kind or origin this evsync does not know (code \(kindAndOrigin))")
        }
        let flags = try readFlags(&reader)
        let eventID = flags & flagEventUUID != 0 ? try uuid(&reader, "event id") : try reader.string("event id")
        let entity = try reader.string("entity")
        let recordID = flags & flagRecordUUID != 0 ? try uuid(&reader, "record id") : try reader.string("record id")
        let author = try reader.string("author")
        var set: JSONObject = [:]
        let setBytes = try reader.counted("set")
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
            let tagByte = try reader.byte("tag")
            guard let tag = Tag(rawValue: tagByte) else { throw newer("event has a field this evsync does not know (tag \(tagByte))") }
            switch tag {
            case .unset:
                event.unset = try (0..<reader.count("unset")).map { _ in try reader.string("unset field") }
            case .versionInteger:
                let number = try reader.varint("version")
                guard number <= UInt64(Int64.max) else { throw EventDecodingError(reason: "its version is out of range") }
                event.version = RemoteVersion(Int64(number))
            case .versionToken:
                event.version = RemoteVersion(try reader.string("version"))
            case .server: event.server = try state(&reader, "server")
            case .local: event.local = try state(&reader, "local")
            case .resolved: event.resolved = try state(&reader, "resolved")
            case .policy:
                let code = try reader.byte("policy")
                guard let policy = entry(Int(code), of: policies) else { throw newer("event has a policy this evsync does not know (code \(code))") }
                event.policy = policy
            case .reason:
                event.reason = try reader.string("reason")
            case .resolves:
                event.resolves = try reader.varint("resolves")
            case .baseline:
                event.baseline = try baseline(&reader, shared: false, fields: [])
            case .sharedBaseline:
                event.baseline = try baseline(&reader, shared: true, fields: event.set.keys.sorted())
            case .archive:
                do {
                    event.archive = try JSONValueDecoder().decode(ArchiveInfo.self, from: json(reader.counted("archive"), "archive"))
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
        do {
            var reader = try checkedBody(of: bytes)
            _ = try reader.varint("seq")
            _ = try reader.varint("time")
            _ = try reader.byte("kind and origin")
            if try readFlags(&reader) & flagEventUUID != 0 { _ = try reader.take(16, "event id") } else { _ = try reader.counted("event id") }
            return try reader.counted("entity").elementsEqual(name)
        } catch let error as BinaryReadError {
            throw damage(error, in: bytes)
        }
    }

    /// A stored event's kind, read without decoding the event (of format 2,
    /// only the members before it): what a scan for one kind reads of the rest.
    static func kind(of bytes: UnsafeRawBufferPointer) throws -> Event.Kind {
        if bytes.first == UInt8(ascii: "{") { return try decode(bytes).kind }
        let kindAndOrigin: UInt8
        do {
            var reader = try checkedBody(of: bytes)
            _ = try reader.varint("seq")
            _ = try reader.varint("time")
            kindAndOrigin = try reader.byte("kind and origin")
        } catch let error as BinaryReadError {
            throw damage(error, in: bytes)
        }
        guard let kind = entry(Int(kindAndOrigin >> 2), of: kinds), entry(Int(kindAndOrigin & 3), of: origins) != nil else {
            throw newer("event has a kind or origin this evsync does not know (code \(kindAndOrigin))")
        }
        return kind
    }

    /// A stored event's time, read without decoding the event (of format 2, only the members before it):
    /// what stamping the next event and finding a point in time read.
    static func at(of bytes: UnsafeRawBufferPointer) throws -> Int64 {
        if bytes.first == UInt8(ascii: "{") { return try decode(bytes).at }
        do {
            var reader = try checkedBody(of: bytes)
            _ = try reader.varint("seq")
            return try reader.zigzag("time")
        } catch let error as BinaryReadError {
            throw damage(error, in: bytes)
        }
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
        do {
            var reader = try checkedBody(of: bytes)
            _ = try reader.varint("seq")
            _ = try reader.varint("time")
            _ = try reader.byte("kind and origin")
            let flags = try readFlags(&reader)
            _ = try reader.take(flags & flagEventUUID != 0 ? 16 : reader.count("event id"), "event id")
            _ = try reader.counted("entity")
            _ = try reader.take(flags & flagRecordUUID != 0 ? 16 : reader.count("record id"), "record id")
            _ = try reader.counted("author")
            return try reader.counted("set")
        } catch let error as BinaryReadError {
            throw damage(error, in: bytes)
        }
    }

    /// Whether a stored event carries a checksum (every event but those of format 1).
    static func hasChecksum(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.first != UInt8(ascii: "{")
    }

    // MARK: Reading

    /// A reader past the header of a binary event whose checksum holds and whose format this evsync reads.
    private static func checkedBody(of bytes: UnsafeRawBufferPointer) throws -> BinaryReader {
        guard bytes.count > headerCount else { throw EventDecodingError(reason: "event is cut short (\(bytes.count) bytes)") }
        var reader = BinaryReader(bytes)
        let format = try reader.byte("format")
        guard try reader.u32("checksum", .littleEndian) == checksum(of: bytes) else {
            throw EventDecodingError(reason: "its checksum does not match its bytes")
        }
        guard format == UInt8(formatVersion) else {
            throw newer("event format \(format) is newer than this evsync understands (\(formatVersion))")
        }
        return reader
    }

    /// The damage a read past the end, or a number out of range, shows.
    private static func damage(_ error: BinaryReadError, in bytes: UnsafeRawBufferPointer) -> EventDecodingError {
        switch error.problem {
        case .cutShort: EventDecodingError(reason: "event is cut short (\(bytes.count) bytes): \(error)")
        case .outOfRange: EventDecodingError(reason: "event has a number out of range at byte \(error.offset) (\(error.what))")
        }
    }

    /// 16 bytes as a lower-case UUID: two big-endian halves, as `EventCoding` writes `UUIDv4.nextBits()`.
    private static func uuid(_ reader: inout BinaryReader, _ what: String) throws -> String {
        UUIDv4.text(high: try reader.u64(what), low: try reader.u64(what))
    }

    private static func readFlags(_ reader: inout BinaryReader) throws -> UInt8 {
        let flags = try reader.byte("flags")
        guard flags & ~(flagEventUUID | flagRecordUUID) == 0 else { throw newer("event has flags this evsync does not know (\(flags))") }
        return flags
    }

    /// A `baseline` (`shared`: a `sharedBaseline`, whose setters name the event's `fields` by position).
    private static func baseline(_ reader: inout BinaryReader, shared: Bool, fields: [String]) throws -> Baseline {
        let compaction = try reader.varint("baseline's compaction")
        var covers: [UInt64] = []
        var seq: UInt64 = 0
        for _ in 0..<(try reader.count("baseline's covers")) {
            let (sum, overflow) = seq.addingReportingOverflow(try reader.varint("baseline's covered seq"))
            guard !overflow else { throw EventDecodingError(reason: "its baseline covers an event out of range") }
            seq = sum
            covers.append(seq)
        }
        let authors = shared ? try (0..<reader.count("baseline's authors")).map { _ in try reader.string("baseline's author") } : []
        func author() throws -> String {
            guard shared else { return try reader.string("baseline's author") }
            let index = try reader.varint("baseline's author")
            guard index < UInt64(authors.count) else { throw EventDecodingError(reason: "its baseline names an author it does not hold") }
            return authors[Int(index)]
        }
        var summaries: [EventSummary] = []
        for _ in 0..<(try reader.count("baseline's events")) {
            let seq = try reader.varint("baseline's event seq")
            let at = try reader.zigzag("baseline's event time")
            let kindAndOrigin = try reader.byte("baseline's event kind and origin")
            guard let kind = entry(Int(kindAndOrigin >> 2), of: kinds), let origin = entry(Int(kindAndOrigin & 3), of: origins) else {
                throw newer("its baseline has a kind or origin this evsync does not know (code \(kindAndOrigin))")
            }
            var summary = EventSummary(Event(seq: seq, eventID: "", at: at, entity: "", recordID: "", kind: kind, origin: origin,
                                             author: try author()))
            switch try reader.byte("baseline's version kind") {
            case 0: break
            case 1:
                let number = try reader.varint("baseline's version")
                guard number <= UInt64(Int64.max) else { throw EventDecodingError(reason: "its baseline has a version out of range") }
                summary.version = RemoteVersion(Int64(number))
            case 2: summary.version = RemoteVersion(try reader.string("baseline's version"))
            case let code: throw newer("its baseline has a version of a kind this evsync does not know (\(code))")
            }
            summaries.append(summary)
        }
        func summary(_ index: UInt64) throws -> EventSummary {
            guard index < UInt64(summaries.count) else { throw EventDecodingError(reason: "its baseline names an event it does not hold") }
            return summaries[Int(index)]
        }
        var setters: [String: EventSummary] = [:]
        for _ in 0..<(try reader.count("baseline's setters")) {
            let field: String
            if shared, case let position = try reader.varint("baseline's field"), position > 0 {
                guard position <= UInt64(fields.count) else { throw EventDecodingError(reason: "its baseline names a field it does not hold") }
                field = fields[Int(position - 1)]
            } else {
                field = try reader.string("baseline's field")
            }
            setters[field] = try summary(reader.varint("baseline's setter"))
        }
        let lastExchange = try reader.varint("baseline's last exchange")
        return Baseline(compaction: compaction, covers: covers, setters: setters,
                        lastExchange: lastExchange == 0 ? nil : try summary(lastExchange - 1), lastEvent: try summary(reader.varint("baseline's last event")))
    }

    private static func state(_ reader: inout BinaryReader, _ name: String) throws -> RecordState {
        switch try json(reader.counted(name), name) {
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
}
