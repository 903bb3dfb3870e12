/// One page of remote changes, as a remote hands it to a pull, and the
/// batch of pages the store ingests in one transaction.
///
/// The records lie back to back in one buffer, each with its fields in
/// canonical JSON (`JSONWriter`'s form, the form the log stores): a pull
/// stores a record new to the store without ever building its fields, and
/// one buffer per page, rather than arrays per record, passes from the
/// thread that fetches to the one that writes.
public struct RemotePage: Sendable {
    package struct Entry: Sendable {
        package let id: Range<Int>
        /// The server's version of the record.
        package let version: RemoteVersion
        /// The fields, encoded; nil for a tombstone.
        package let fields: Range<Int>?
        /// Who made this version on the server, when the server says (Kinto's history plugin).
        package var author: String? = nil
        /// `RemoteRecord.localFields` (one shared set for a page's records, empty for most remotes).
        package var localFields: Set<String> = []
    }

    package private(set) var bytes: [UInt8] = []
    package private(set) var entries: [Entry] = []
    /// Records of the page the store cannot hold, in page order.
    public var skipped: [SkippedRecord] = []
    /// Records the server no longer holds without a deletion the remote trusts (a sealed remote: one no device with
    /// the key sealed), with the version the log last knew and why: taken as records a server lost, never as
    /// deletions: kept, named in `goneFromServer`, and `sync --missing` decides.
    public var lost: [SkippedRecord] = []
    /// Records changed on the server since the pull's start that no longer match the store's scope of the entity
    /// (`Store.setScope`): each this store holds leaves it with a `left` event, never a deletion, written with the page.
    public var outOfScope: [String] = []
    /// Set on the first page of a pull the remote started again from the
    /// beginning, having found the server's data older than the cursor it was
    /// given (a server restored from a backup): the sync says so.
    public var isReread = false
    /// Set on the first page of a pull that found the entity's place on the server
    /// gone and had to create it again (a wiped or re-created server), though an
    /// earlier pull had read it: whatever the log holds as there, the server lost.
    public var isRecreated = false
    /// Set, with the reason, on a page after which the remote saw a sign that
    /// the server lost or dropped changes a pull cannot bring (a deletion whose
    /// tombstone was purged): the sync then checks the entity against a
    /// listing of the server's records (`verify --remote`).
    public var needsVerification: String?
    /// On the last page of a pull that brought changes, when the remote
    /// counted them: how many live records the server holds. The sync
    /// compares it with the log's count, and verifies the entity when they differ.
    public var liveRecords: Int?
    /// How many records the server announced in all, when it did.
    public var total: Int?
    /// Where the next pull starts once this page is stored: the remote's
    /// cursor after its last record. Stored with the page, in one transaction.
    public var cursor: RemoteCursor?
    /// The remote's own state after this page (DAV: which hrefs hold which records), kept in the remote's part of the
    /// store's meta (`SyncRemote.metaNamespace`) and written with the page, in one transaction; nil leaves it as it is.
    public var state: String?
    /// Set on the last page of an answer that is one of a chain (a sync-collection listing the server cuts with
    /// 507, RFC 6578 §3.6): the sync writes what it holds at once, with the cursor, rather than when its batch is
    /// full, so that a pull stopped in a long chain keeps every answer it had and goes on from there.
    public var isCheckpoint = false

    public init(records: [RemoteRecord], skipped: [SkippedRecord] = [], cursor: RemoteCursor?, total: Int? = nil) {
        self.total = total
        self.cursor = cursor
        self.skipped = skipped
        var id: [UInt8] = []
        for record in records {
            append(idBuffer: &id) { writer, id in
                id.append(contentsOf: record.id.utf8)
                if let fields = record.fields { writer.write(object: fields) }
                return (record.version, record.fields == nil)
            }
            entries[entries.count - 1].author = record.author
            entries[entries.count - 1].localFields = record.localFields
        }
    }

    package init() {}

    /// Room for `count` bytes of records, as many as the answer they are read from holds: the buffer is then
    /// not grown (and copied) by doubling while a large page is read.
    package mutating func reserveCapacity(_ count: Int) {
        bytes.reserveCapacity(count)
    }

    /// Appends the record that `readRecord` reads: it writes the fields (nothing
    /// for a tombstone), puts the id's bytes in its second argument (empty on
    /// entry; `idBuffer`, kept from call to call) and returns the version.
    /// - Returns: false, having appended nothing, when `readRecord` returns nil
    ///   (and nothing either when it throws).
    @discardableResult
    package mutating func append(idBuffer: inout [UInt8],
                         _ readRecord: (inout JSONWriter, inout [UInt8]) throws -> (version: RemoteVersion, isTombstone: Bool)?) rethrows -> Bool {
        let start = bytes.count
        idBuffer.removeAll(keepingCapacity: true)
        let read: (version: RemoteVersion, isTombstone: Bool)?
        do {
            read = try JSONWriter.append(to: &bytes, { try readRecord(&$0, &idBuffer) })
        } catch {
            bytes.removeSubrange(start...)  // what was written of the record before the error
            throw error
        }
        guard let (version, isTombstone) = read else {
            bytes.removeSubrange(start...)
            return false
        }
        let fields = isTombstone ? nil : start..<bytes.count
        if isTombstone { bytes.removeSubrange(start...) }
        let idStart = bytes.count
        bytes.append(contentsOf: idBuffer)
        entries.append(Entry(id: idStart..<bytes.count, version: version, fields: fields))
        return true
    }

    /// Appends the records of `other`, after these, and takes its cursor.
    package mutating func append(contentsOf other: RemotePage) {
        cursor = other.cursor ?? cursor
        state = other.state ?? state
        skipped += other.skipped
        outOfScope += other.outOfScope
        isReread = isReread || other.isReread
        needsVerification = other.needsVerification ?? needsVerification
        liveRecords = other.liveRecords ?? liveRecords
        // Into an empty batch, the page's buffer itself (shared, not copied: a page may be hundreds of MiB).
        if bytes.isEmpty, entries.isEmpty {
            (bytes, entries) = (other.bytes, other.entries)
            return
        }
        let offset = bytes.count
        bytes.append(contentsOf: other.bytes)
        entries.reserveCapacity(entries.count + other.entries.count)
        for entry in other.entries {
            let shift = { (range: Range<Int>) in range.lowerBound + offset..<range.upperBound + offset }
            entries.append(Entry(id: shift(entry.id), version: entry.version, fields: entry.fields.map(shift), author: entry.author,
                                 localFields: entry.localFields))
        }
    }

    /// The page without the records `shouldRemove` picks, given each one's id and version.
    package func removing(where shouldRemove: (String, RemoteVersion) -> Bool) -> RemotePage {
        // Every mark of the page kept (`isRecreated` was lost when each was copied by name).
        var kept = self
        kept.bytes = []
        kept.entries = []
        for entry in entries where !shouldRemove(id(of: entry), entry.version) {
            let start = kept.bytes.count
            if let fields = entry.fields { kept.bytes.append(contentsOf: bytes[fields]) }
            let fields = entry.fields == nil ? nil : start..<kept.bytes.count
            let idStart = kept.bytes.count
            kept.bytes.append(contentsOf: bytes[entry.id])
            kept.entries.append(Entry(id: idStart..<kept.bytes.count, version: entry.version, fields: fields, author: entry.author,
                                      localFields: entry.localFields))
        }
        return kept
    }

    package func id(of entry: Entry) -> String {
        String(decoding: bytes[entry.id], as: UTF8.self)
    }

    /// The record, its fields decoded.
    package func record(_ entry: Entry) throws -> RemoteRecord {
        let fields = try entry.fields.map { range in
            // The remote wrote these bytes (in `append`): any error is its, not the store's.
            try bytes.withUnsafeBytes { bytes throws -> JSONObject in
                guard case .object(let fields) = try JSONParser.parse(UnsafeRawBufferPointer(rebasing: bytes[range])) else {
                    throw JSONParseError(offset: 0, reason: "a record's fields are not a JSON object")
                }
                return fields
            }
        }
        return RemoteRecord(id: id(of: entry), version: entry.version, fields: fields, author: entry.author, localFields: entry.localFields)
    }
}
