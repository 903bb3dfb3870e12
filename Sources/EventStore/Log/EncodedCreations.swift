/// Local creations numbered and encoded ahead of their append, so that the
/// costly part (parsing, validating, encoding) can run on another thread
/// than the write transaction: what `import` hands the log in bulk.
///
/// Their bytes lie back to back in one buffer. As separate arrays they were
/// millions of small allocations made on one thread and freed on the other,
/// which made the two contend for malloc's locks.
struct EncodedCreations: Sendable {
    struct Entry: Sendable {
        /// The input line it came from, for error messages.
        let line: Int
        /// The `seq` its event was encoded with: the log must give it exactly that.
        let seq: UInt64
        /// `Keys.record`: the record's key in the views.
        let key: Range<Int>
        /// `Keys.history`: its key in the history index.
        let historyKey: Range<Int>
        /// The stored event (`EventCoding`).
        let event: Range<Int>
        /// Its `RecordEntry`: a pending creation whose row is the event's `set`.
        let entry: Range<Int>
    }

    private(set) var bytes: [UInt8] = []
    private(set) var entries: [Entry] = []

    init(reservingBytes capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    var count: Int { entries.count }

    /// Adds `event`, a local creation already given its `seq`.
    mutating func append(_ event: Event, line: Int) {
        let key = append(Keys.record(entity: event.entity, id: event.recordID))
        let historyKey = append(Keys.history(entity: event.entity, id: event.recordID))
        let start = bytes.count
        EventCoding.write(event, to: &bytes)
        let stored = start..<bytes.count
        let entryStart = bytes.count
        RecordEntry.appendPendingCreation(seq: event.seq, to: &bytes)
        entries.append(Entry(line: line, seq: event.seq, key: key, historyKey: historyKey, event: stored,
                             entry: entryStart..<bytes.count))
    }

    /// Adds a local creation from its bytes: `recordID`, valid (`RecordID.isValid`),
    /// and `set`, the canonical JSON of its fields (see `EventCoding.writeLocalCreation`).
    mutating func appendLocalCreation(seq: UInt64, at: Int64, entity: String, recordID: UnsafeRawBufferPointer,
                                      author: String, set: UnsafeRawBufferPointer, line: Int) {
        let keys = Keys.appendRecordAndHistory(entity: entity, localID: recordID, to: &bytes)
        let start = bytes.count
        EventCoding.writeLocalCreation(seq: seq, at: at, entity: entity, recordID: recordID, author: author, set: set,
                                       to: &bytes)
        let entryStart = bytes.count
        RecordEntry.appendPendingCreation(seq: seq, to: &bytes)
        entries.append(Entry(line: line, seq: seq, key: keys.record, historyKey: keys.history, event: start..<entryStart,
                             entry: entryStart..<bytes.count))
    }

    private mutating func append(_ part: [UInt8]) -> Range<Int> {
        let start = bytes.count
        bytes.append(contentsOf: part)
        return start..<bytes.count
    }

    func recordID(of entry: Entry) -> String {
        let key = bytes[entry.key]
        let id = key.firstIndex(of: 0).map { key[($0 + 1)...] } ?? key
        return String(decoding: id, as: UTF8.self)
    }
}
