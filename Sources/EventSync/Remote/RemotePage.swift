/// One page of remote changes.
///
/// The records lie back to back in one buffer, each with its fields in
/// canonical JSON (`JSONWriter`'s form, the form the log stores): a pull
/// stores a record new to the store without ever building its fields, and
/// one buffer per page, rather than arrays per record, passes from the
/// thread that fetches to the one that writes.
public struct RemotePage: Sendable {
    struct Entry: Sendable {
        let id: Range<Int>
        /// The server's version (Kinto's `last_modified`).
        let version: Int64
        /// The fields, encoded; nil for a tombstone.
        let fields: Range<Int>?
    }

    private(set) var bytes: [UInt8] = []
    private(set) var entries: [Entry] = []
    /// How many records the server announced in all, when it did.
    public var total: Int?

    public init(records: [RemoteRecord], total: Int? = nil) {
        self.total = total
        for record in records {
            append { writer in
                if let fields = record.fields { writer.write(object: fields) }
                return (record.id, record.version, record.fields == nil)
            }
        }
    }

    init() {}

    /// Appends the record that `read` identifies, having written its fields (nothing for a tombstone).
    /// - Returns: false, having appended nothing, when `read` returns nil.
    @discardableResult
    mutating func append(_ read: (inout JSONWriter) throws -> (id: String, version: Int64, isTombstone: Bool)?) rethrows -> Bool {
        let start = bytes.count
        guard let (id, version, isTombstone) = try JSONWriter.append(to: &bytes, read) else {
            bytes.removeSubrange(start...)
            return false
        }
        let fields = isTombstone ? nil : start..<bytes.count
        if isTombstone { bytes.removeSubrange(start...) }
        let idStart = bytes.count
        bytes.append(contentsOf: id.utf8)
        entries.append(Entry(id: idStart..<bytes.count, version: version, fields: fields))
        return true
    }

    func id(of entry: Entry) -> String {
        String(decoding: bytes[entry.id], as: UTF8.self)
    }

    /// The record, its fields decoded.
    func record(_ entry: Entry) throws -> RemoteRecord {
        let fields = try entry.fields.map { range in
            try bytes.withUnsafeBytes { try ViewDatabases.decodeRow(UnsafeRawBufferPointer(rebasing: $0[range])) }
        }
        return RemoteRecord(id: id(of: entry), version: entry.version, fields: fields)
    }
}
