/// The archive segments compactions sealed, as `meta` lists them (`archives`: a JSON array of
/// `{seal, archive}`, the `compacted` event's seq and what it sealed), written by the commit that
/// appends the seal. Readers of the log use it to tell a gap a compaction left from a lost event:
/// between a segment's first and last event, the live log keeps only what still decides something.
struct ArchivedRanges: Sendable {
    static let metaKey = "archives"

    struct Sealed: Sendable, Equatable, Codable {
        /// The `compacted` event's seq.
        var seal: UInt64
        var archive: ArchiveInfo
    }

    private(set) var sealed: [Sealed] = []

    init() {}

    init(decoding bytes: [UInt8]) {
        // Written by evsync in the same commit as the seal; unreadable only if damaged, which `log verify` names.
        sealed = (try? JSONParser.parse(bytes)).flatMap { try? JSONValueDecoder().decode([Sealed].self, from: $0) } ?? []
    }

    func encoded() -> [UInt8] {
        (try? JSONValueEncoder.encode(sealed)).map(JSONWriter.encode) ?? []
    }

    mutating func add(_ archive: ArchiveInfo, seal: UInt64) {
        sealed.append(Sealed(seal: seal, archive: archive))
    }

    var isEmpty: Bool { sealed.isEmpty }

    /// Whether `seq` lies within a sealed segment's range (it may still be live: see above).
    func contains(_ seq: UInt64) -> Bool {
        sealed.contains { $0.archive.first <= seq && seq <= $0.archive.last }
    }

    /// The segment sealed by event `seal`.
    func segment(sealedBy seal: UInt64) -> Sealed? {
        sealed.first { $0.seal == seal }
    }

    /// The segments whose events a point at `through` or before needs: those whose cut is at or after it.
    func segments(neededBefore through: UInt64) -> [Sealed] {
        sealed.filter { through < $0.archive.cut }
    }

    /// The seq expected after `next` when the log goes on at `seq`: `seq` when every event between was archived.
    func expected(_ next: UInt64, goingOnAt seq: UInt64) -> UInt64 {
        guard seq > next, !sealed.isEmpty else { return next }
        var position = next
        while position < seq {
            guard let range = sealed.first(where: { $0.archive.first <= position && position <= $0.archive.last }) else { return next }
            position = range.archive.last + 1
        }
        return seq
    }

    /// The seq expected before `seq` when walking back, or nil when that one may have been archived.
    func before(_ seq: UInt64) -> UInt64? {
        contains(seq - 1) ? nil : seq - 1
    }
}

/// The seq each next event of the log should have, as `EventLog.decode` checks it.
struct LogExpectation {
    private(set) var next: UInt64
    let archived: ArchivedRanges

    init(next: UInt64, archived: ArchivedRanges) {
        self.next = next
        self.archived = archived
    }

    /// The seq the event under `key` should have, allowing for archived gaps; advances past it.
    mutating func next(_ key: UnsafeRawBufferPointer) -> UInt64 {
        let expected = key.count == 8 ? archived.expected(next, goingOnAt: Keys.sequence(from: key)) : next
        next = expected + 1
        return expected
    }
}
