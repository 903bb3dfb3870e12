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
///
/// A record with neither row, shadow nor version has no entry.
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
    }

    /// The entry of `projection`; nil when it needs none.
    /// - Parameter encodedRow: the row, already encoded, when the caller has it.
    static func encode(_ projection: RecordProjection, encodedRow: [UInt8]? = nil) -> [UInt8]? {
        let row = projection.row.map { encodedRow ?? JSONWriter.encodeObject($0) }
        let layout: UInt8
        switch (projection.row, projection.shadow) {
        case (nil, nil):
            guard projection.version != nil else { return nil }
            layout = Layout.none
        case (_?, nil): layout = Layout.rowOnly
        case (nil, _?): layout = Layout.shadowOnly
        case let (fields?, shadow?): layout = fields == shadow ? Layout.inStep : Layout.different
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(headerSize + 4 + (row?.count ?? 0))
        appendHeader(version: projection.version, layout: layout, to: &bytes)
        switch layout {
        case Layout.shadowOnly:
            bytes += projection.shadow.map(JSONWriter.encodeObject) ?? []
        case Layout.different:
            withUnsafeBytes(of: UInt32(row?.count ?? 0).bigEndian) { bytes.append(contentsOf: $0) }
            bytes += row ?? []
            bytes += projection.shadow.map(JSONWriter.encodeObject) ?? []
        default:
            bytes += row ?? []
        }
        return bytes
    }

    /// Starts the entry of a record created here and never pushed: its row's JSON follows.
    static func startPendingCreation(in bytes: inout [UInt8]) {
        appendHeader(version: nil, layout: Layout.rowOnly, to: &bytes)
    }

    /// Starts the entry of a record in step with the server: its fields' JSON, row and shadow at once, follows.
    static func startInStep(version: RemoteVersion, in bytes: inout [UInt8]) {
        appendHeader(version: version, layout: Layout.inStep, to: &bytes)
    }

    private static func appendHeader(version: RemoteVersion?, layout: UInt8, to bytes: inout [UInt8]) {
        func append(_ number: UInt64) { withUnsafeBytes(of: number.bigEndian) { bytes.append(contentsOf: $0) } }
        switch version?.storage {
        case nil:
            append(neverHeard)
            bytes.append(layout)
        case .integer(let number):
            append(UInt64(number))
            bytes.append(layout)
        case .token(let token):
            append(tokenFollows)
            bytes.append(layout)
            let utf8 = Array(token.utf8.prefix(Int(UInt16.max)))
            withUnsafeBytes(of: UInt16(utf8.count).bigEndian) { bytes.append(contentsOf: $0) }
            bytes += utf8
        }
    }

    static func decode(_ bytes: UnsafeRawBufferPointer) throws -> RecordProjection {
        let (version, layout, payload) = try parts(of: bytes)
        var projection = RecordProjection(version: version)
        switch layout {
        case Layout.none:
            break
        case Layout.rowOnly:
            projection.row = try decodeFields(payload)
        case Layout.inStep:
            projection.row = try decodeFields(payload)
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

    /// The row's JSON, without decoding anything; nil if the record has no row here.
    static func row(in bytes: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
        let (_, layout, payload) = try parts(of: bytes)
        switch layout {
        case Layout.rowOnly, Layout.inStep: return payload
        case Layout.different: return try split(payload).row
        default: return nil
        }
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
        guard bytes.count >= headerSize else { throw EventDecodingError(reason: "a view entry is truncated", inViews: true) }
        let raw = Keys.sequence(from: bytes)
        let layout = bytes[8]
        switch layout {
        case Layout.none, Layout.rowOnly, Layout.inStep, Layout.shadowOnly, Layout.different: break
        default: throw EventDecodingError(reason: "a view entry has an unknown layout", inViews: true)
        }
        switch raw {
        case neverHeard:
            return (nil, layout, UnsafeRawBufferPointer(rebasing: bytes[headerSize...]))
        case tokenFollows:
            guard bytes.count >= headerSize + 2 else { throw EventDecodingError(reason: "a view entry is truncated", inViews: true) }
            let length = Int(bytes[headerSize]) << 8 | Int(bytes[headerSize + 1])
            let start = headerSize + 2
            guard bytes.count >= start + length else { throw EventDecodingError(reason: "a view entry is truncated", inViews: true) }
            let token = String(decoding: bytes[start..<(start + length)], as: UTF8.self)
            return (RemoteVersion(token), layout, UnsafeRawBufferPointer(rebasing: bytes[(start + length)...]))
        default:
            guard raw <= UInt64(Int64.max) else { throw EventDecodingError(reason: "a view entry has a bad version", inViews: true) }
            return (RemoteVersion(Int64(raw)), layout, UnsafeRawBufferPointer(rebasing: bytes[headerSize...]))
        }
    }

    private static func split(_ payload: UnsafeRawBufferPointer) throws -> (row: UnsafeRawBufferPointer, shadow: UnsafeRawBufferPointer) {
        guard payload.count >= 4 else { throw EventDecodingError(reason: "a view entry is truncated", inViews: true) }
        let rowCount = payload.prefix(4).reduce(0) { $0 << 8 | Int($1) }
        guard payload.count >= 4 + rowCount else { throw EventDecodingError(reason: "a view entry is truncated", inViews: true) }
        return (UnsafeRawBufferPointer(rebasing: payload[4..<(4 + rowCount)]),
                UnsafeRawBufferPointer(rebasing: payload[(4 + rowCount)...]))
    }
}
