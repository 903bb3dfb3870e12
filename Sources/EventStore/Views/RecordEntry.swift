/// How a record's projection is stored in the `records` view: its row and its
/// shadow under one key, because a sync writes both for nearly every record
/// it touches, and one entry costs one tree search and one key's bytes, not two.
///
/// The value is the server's version (8 bytes, big-endian; all ones: never
/// heard), a layout byte, then the fields the layout says. A version that is
/// not an integer (see `RemoteVersion`) is all ones but the last bit in the 8
/// bytes, and its token (2 bytes of length, big-endian, then UTF-8) follows
/// the layout byte, before the fields; every entry written before versions
/// became opaque has an integer version, so layout 2 reads them unchanged.
///
/// | layout | row | shadow | then |
/// |---|---|---|---|
/// | `-` | nil | nil | nothing (a version alone: the server deleted it) |
/// | `R` | yes | nil | the row's JSON |
/// | `=` | yes | equal to the row | the row's JSON: a record in step with the server, by far the most common |
/// | `S` | nil | yes | the shadow's JSON |
/// | `D` | yes | differs | the row's length (4 bytes, big-endian), the row's JSON, the shadow's JSON |
/// | `r` | yes | nil | as `R`, the row being the `set`s of events, folded: their `seq`s as varints (LEB128), oldest first |
/// | `e` | yes | equal to the row | as `=`, likewise by reference |
///
/// A record with neither row, shadow nor version has no entry.
///
/// `r` and `e` (store layout 4) keep a row that is what a creation set,
/// then the updates after it set (none of them unsetting a field, at most
/// `maxReferences` events), as references to those events: the fields are
/// in the log already, and a copy made the views as large as the log. That
/// is every record of an import or a pull, and each edit pulled from a
/// server. Reading such a row costs a lookup in the log per event. Entries
/// written before keep their layout and are read as they are.
enum RecordEntry {
    static let headerSize = 9
    private static let neverHeard = UInt64.max
    private static let tokenFollows = UInt64.max - 1

    private enum Layout {
        static let none = UInt8(ascii: "-")
        static let rowOnly = UInt8(ascii: "R")
        static let inStep = UInt8(ascii: "=")
        static let shadowOnly = UInt8(ascii: "S")
        static let different = UInt8(ascii: "D")
        static let rowOnlyByReference = UInt8(ascii: "r")
        static let inStepByReference = UInt8(ascii: "e")
    }

    /// Reads the fields event `seq` sets: what a row stored by reference is made of.
    typealias SetReader = (_ seq: UInt64) throws -> JSONObject

    /// The most events a row is stored as: each costs a lookup when the row is read.
    static let maxReferences = 8

    /// The entry of `projection`; nil when it needs none.
    /// - Parameter encodedRow: the row, already encoded, when the caller has it.
    /// - Parameter rowIsSetsOf: the events whose `set`s, folded, are the row exactly, if any: the row is then stored by reference.
    static func encode(_ projection: RecordProjection, encodedRow: [UInt8]? = nil, rowIsSetsOf seqs: [UInt64] = []) -> [UInt8]? {
        let layout: UInt8
        switch (projection.row, projection.shadow) {
        case (nil, nil):
            guard projection.version != nil else { return nil }
            layout = Layout.none
        case (_?, nil): layout = Layout.rowOnly
        case (nil, _?): layout = Layout.shadowOnly
        case let (fields?, shadow?): layout = fields == shadow ? Layout.inStep : Layout.different
        }
        if !seqs.isEmpty, layout == Layout.rowOnly || layout == Layout.inStep {
            var writer = BinaryWriter()
            appendHeader(version: projection.version, layout: layout == Layout.rowOnly ? Layout.rowOnlyByReference : Layout.inStepByReference,
                         to: &writer)
            for seq in seqs { writer.varint(seq) }
            return writer.bytes
        }
        let row = projection.row.map { encodedRow ?? JSONWriter.encodeObject($0) }
        var writer = BinaryWriter(reservingCapacity: headerSize + 4 + (row?.count ?? 0))
        appendHeader(version: projection.version, layout: layout, to: &writer)
        switch layout {
        case Layout.shadowOnly:
            writer.append(projection.shadow.map(JSONWriter.encodeObject) ?? [])
        case Layout.different:
            writer.u32(UInt32(row?.count ?? 0))
            writer.append(row ?? [])
            writer.append(projection.shadow.map(JSONWriter.encodeObject) ?? [])
        default:
            writer.append(row ?? [])
        }
        return writer.bytes
    }

    /// Appends the entry of a record created here by event `seq` and never pushed: its row is that event's `set`.
    static func appendPendingCreation(seq: UInt64, to bytes: inout [UInt8]) {
        BinaryWriter.appending(to: &bytes) { writer in
            appendHeader(version: nil, layout: Layout.rowOnlyByReference, to: &writer)
            writer.varint(seq)
        }
    }

    /// Appends the entry of a record created by event `seq` as the server holds it: row and shadow are that event's `set`.
    static func appendInStep(version: RemoteVersion, seq: UInt64, to bytes: inout [UInt8]) {
        BinaryWriter.appending(to: &bytes) { writer in
            appendHeader(version: version, layout: Layout.inStepByReference, to: &writer)
            writer.varint(seq)
        }
    }

    private static func appendHeader(version: RemoteVersion?, layout: UInt8, to writer: inout BinaryWriter) {
        switch version?.storage {
        case nil:
            writer.u64(neverHeard)
            writer.byte(layout)
        case .integer(let number):
            writer.u64(UInt64(number))
            writer.byte(layout)
        case .token(let token):
            writer.u64(tokenFollows)
            writer.byte(layout)
            let utf8 = Array(token.utf8.prefix(Int(UInt16.max)))
            writer.u16(UInt16(utf8.count))
            writer.append(utf8)
        }
    }

    static func decode(_ bytes: UnsafeRawBufferPointer, sets: SetReader) throws -> RecordProjection {
        let (version, layout, payload) = try parts(of: bytes)
        var projection = RecordProjection(version: version)
        switch layout {
        case Layout.none:
            break
        case Layout.rowOnly:
            projection.row = try decodeFields(payload)
        case Layout.rowOnlyByReference:
            projection.row = try fold(references(in: payload), sets)
        case Layout.inStep:
            projection.row = try decodeFields(payload)
            projection.shadow = projection.row
        case Layout.inStepByReference:
            projection.row = try fold(references(in: payload), sets)
            projection.shadow = projection.row
        case Layout.shadowOnly:
            projection.shadow = try decodeFields(payload)
        default:
            let (row, shadow) = try split(payload)
            projection.row = try decodeFields(row)
            projection.shadow = try decodeFields(shadow)
        }
        return projection
    }

    /// The row's fields; nil if the record has no row here.
    static func row(in bytes: UnsafeRawBufferPointer, sets: SetReader) throws -> JSONObject? {
        switch try storedRow(in: bytes) {
        case .fields(let json)?: return try decodeFields(json)
        case .setsOf(let seqs)?: return try fold(seqs, sets)
        case nil: return nil
        }
    }

    /// Where a row's fields are stored.
    enum StoredRow {
        /// In the entry: their JSON.
        case fields(UnsafeRawBufferPointer)
        /// In the log: the `set`s of these events, folded, oldest first.
        case setsOf([UInt64])
    }

    /// Where the row's fields are, decoding none of them; nil if the record has no row here.
    static func storedRow(in bytes: UnsafeRawBufferPointer) throws -> StoredRow? {
        let (_, layout, payload) = try parts(of: bytes)
        switch layout {
        case Layout.rowOnly, Layout.inStep: return .fields(payload)
        case Layout.rowOnlyByReference, Layout.inStepByReference: return .setsOf(try references(in: payload))
        case Layout.different: return .fields(try split(payload).row)
        default: return nil
        }
    }

    /// Whether the record has a row here, decoding nothing.
    static func hasRow(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
        switch try parts(of: bytes).1 {
        case Layout.rowOnly, Layout.inStep, Layout.different, Layout.rowOnlyByReference, Layout.inStepByReference: true
        default: false
        }
    }

    /// The server's version of the record when the log knows it live there (it has a shadow), reading
    /// only the entry's header: no field is decoded and no referenced event is read.
    static func serverVersion(_ bytes: UnsafeRawBufferPointer) throws -> RemoteVersion? {
        let (version, layout, _) = try parts(of: bytes)
        switch layout {
        case Layout.inStep, Layout.shadowOnly, Layout.different, Layout.inStepByReference: return version
        default: return nil
        }
    }

    /// The events whose `set`s the row is, when the row is stored by reference.
    static func rowReferences(in bytes: UnsafeRawBufferPointer) throws -> [UInt64]? {
        let (_, layout, payload) = try parts(of: bytes)
        switch layout {
        case Layout.rowOnlyByReference, Layout.inStepByReference: return try references(in: payload)
        default: return nil
        }
    }

    /// The fields the events set, later ones over earlier ones, as folding them does.
    private static func fold(_ seqs: [UInt64], _ sets: SetReader) throws -> JSONObject {
        var row = try sets(seqs[0])
        for seq in seqs.dropFirst() { row.merge(try sets(seq)) { _, later in later } }
        return row
    }

    /// At least one varint, to the end.
    private static func references(in payload: UnsafeRawBufferPointer) throws -> [UInt64] {
        var reader = BinaryReader(payload)
        var seqs: [UInt64] = []
        do {
            while !reader.isAtEnd { seqs.append(try reader.varint("event reference")) }
        } catch {
            throw EventDecodingError(reason: "a view entry's event references are damaged (\(error))", inViews: true)
        }
        guard !seqs.isEmpty else { throw EventDecodingError(reason: "a view entry's event references are damaged", inViews: true) }
        return seqs
    }

    static func decodeFields(_ bytes: UnsafeRawBufferPointer) throws -> JSONObject {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            throw EventDecodingError(reason: "a view entry's fields are not valid JSON (at byte \(error.offset): \(error.reason))", inViews: true)
        }
        guard case .object(let fields) = value else {
            throw EventDecodingError(reason: "a view entry's fields are not a JSON object", inViews: true)
        }
        return fields
    }

    private static func parts(of bytes: UnsafeRawBufferPointer) throws -> (RemoteVersion?, UInt8, UnsafeRawBufferPointer) {
        var reader = BinaryReader(bytes)
        do {
            let raw = try reader.u64("version")
            let layout = try reader.byte("layout")
            switch layout {
            case Layout.none, Layout.rowOnly, Layout.inStep, Layout.shadowOnly, Layout.different,
                 Layout.rowOnlyByReference, Layout.inStepByReference: break
            default: throw EventDecodingError(reason: "a view entry has an unknown layout", inViews: true)
            }
            switch raw {
            case neverHeard:
                return (nil, layout, reader.rest())
            case tokenFollows:
                let token = String(decoding: try reader.take(Int(try reader.u16("version token's length")), "version token"), as: UTF8.self)
                return (RemoteVersion(token), layout, reader.rest())
            default:
                guard raw <= UInt64(Int64.max) else { throw EventDecodingError(reason: "a view entry has a bad version", inViews: true) }
                return (RemoteVersion(Int64(raw)), layout, reader.rest())
            }
        } catch let error as BinaryReadError {
            throw truncated(error)
        }
    }

    private static func split(_ payload: UnsafeRawBufferPointer) throws -> (row: UnsafeRawBufferPointer, shadow: UnsafeRawBufferPointer) {
        var reader = BinaryReader(payload)
        do throws(BinaryReadError) {
            let row = try reader.take(Int(try reader.u32("row's length")), "row")
            return (row, reader.rest())
        } catch {
            throw truncated(error)
        }
    }

    private static func truncated(_ error: BinaryReadError) -> EventDecodingError {
        EventDecodingError(reason: "a view entry is truncated (\(error))", inViews: true)
    }
}
