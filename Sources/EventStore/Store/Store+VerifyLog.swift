import Foundation
import Storage

/// What `Store.verifyLog()` found.
public struct LogVerification: Sendable, Equatable {
    /// The first damaged event: where it is and what is wrong with it.
    public struct Damage: Sendable, Equatable {
        /// The event's position in the log (for a gap, the first one missing).
        public let seq: UInt64
        /// What is wrong: a checksum that does not match, bytes that do not decode, a seq out of place.
        public let problem: String
        /// The event is of a format newer than this evsync reads, rather than damaged.
        public let isNewerFormat: Bool
    }

    /// The events read and found sound, from the first on: every event of the log when there is no damage.
    public let eventsChecked: UInt64
    /// Of those, the events written before events had a checksum (format 1):
    /// they decode and are in their place, but a changed byte in them could go unseen.
    public let withoutChecksum: UInt64
    /// The first damaged event, if any.
    public let damage: Damage?
    /// Each archive segment the log's compactions sealed, checked against its seal, oldest first.
    public var archives: [ArchiveVerification] = []

    /// Whether the log and every archive segment are sound.
    public var isSound: Bool { damage == nil && archives.allSatisfy { $0.problem == nil } }
}

/// What `Store.verifyLog()` found of one archive segment.
public struct ArchiveVerification: Sendable, Equatable, Codable {
    /// The segment's file name in the store's `archive/` directory (or the path given to `verifyArchive`).
    public let file: String
    /// The events it holds, when it could be read whole.
    public let events: UInt64
    /// Why it does not prove its part of the log: missing, not a segment, cut short, altered, reordered,
    /// another store's, another segment than the one sealed, or events of its range in neither place.
    public let problem: String?
}

extension Store {
    /// Reads every event of the log and checks it: its checksum, that it
    /// decodes, and that the events are numbered from 1 without a gap, each
    /// stored under its own seq. Stops at the first damaged event. Then checks each
    /// archive segment against the seal its compaction recorded, and that every event
    /// of its range is in the segment or still in the live log, so that the whole history
    /// from event 1 is accounted for.
    ///
    /// Reads in one read snapshot: takes no write lock and changes nothing.
    ///
    /// ```swift
    /// if let damage = try store.verifyLog().damage { print("event \(damage.seq): \(damage.problem)") }
    /// ```
    /// - Throws: `.corrupt` when LMDB itself finds the file damaged (a bad page), before any event can be named.
    public func verifyLog() throws(StoreError) -> LogVerification {
        try snapshot { transaction in
            let cursor = try transaction.cursor(log.events)
            var entry = try cursor.first()
            var checked: UInt64 = 0
            var withoutChecksum: UInt64 = 0
            var encodedSet: [UInt8]?
            var expectation = try log.expectation(from: 1, in: transaction)
            let archived = expectation.archived
            var liveInArchivedRanges = Set<UInt64>()
            while let current = entry {
                let expected = expectation.next(current.key)
                if archived.contains(expected) { liveInArchivedRanges.insert(expected) }
                do {
                    _ = try EventLog.decode(key: current.key, value: current.value, expecting: expected, encodedSet: &encodedSet)
                } catch let error as EventDecodingError {
                    let damage = LogVerification.Damage(seq: error.seq ?? expected, problem: error.reason,
                                                        isNewerFormat: error.isNewerFormat)
                    return LogVerification(eventsChecked: checked, withoutChecksum: withoutChecksum, damage: damage)
                }
                if !EventCoding.hasChecksum(current.value) { withoutChecksum += 1 }
                checked += 1
                if checked % 4096 == 0 { environment.releaseMappedPages(beyond: Self.mappedPageBudget) }
                entry = try cursor.next()
            }
            var verification = LogVerification(eventsChecked: checked, withoutChecksum: withoutChecksum, damage: nil)
            let storeID = try meta(MetaKey.storeID, in: transaction)
            verification.archives = verifyArchives(archived, store: storeID, live: liveInArchivedRanges)
            return verification
        }
    }

    /// Checks a segment on its own (one moved to other media, say): that it is whole and matches its own seal.
    /// `problem` names what is wrong; nothing says which store's log it belongs in but its store id.
    public static func verifyArchive(at path: String) -> ArchiveVerification {
        do {
            let seqs = try ArchiveSegment(path: path).verify()
            return ArchiveVerification(file: path, events: UInt64(seqs.count), problem: nil)
        } catch {
            return ArchiveVerification(file: path, events: 0, problem: error.description)
        }
    }

    /// Checks every segment against its seal, then that each event of a segment's range is in it, in the
    /// live log or in a later segment (a record a first compaction kept whole, a second one may move).
    private func verifyArchives(_ archived: ArchivedRanges, store: String?, live: Set<UInt64>) -> [ArchiveVerification] {
        var held: [[UInt64]?] = []
        var verifications = archived.sealed.map { sealed in
            let file = sealed.archive.file
            let path = (archiveDirectory as NSString).appendingPathComponent(file)
            do {
                guard let seal = ArchiveSeal(sealed.archive) else { throw ArchiveSegmentError.mismatch(path) }
                let seqs = try ArchiveSegment(path: path).verify(against: seal, store: store ?? sealed.archive.store)
                held.append(seqs)
                return ArchiveVerification(file: file, events: UInt64(seqs.count), problem: nil)
            } catch {
                held.append(nil)
                return ArchiveVerification(file: file, events: 0, problem: "\(error)")
            }
        }
        // Judged once every segment was read: the events of one that was not would be blamed on another's range.
        guard !held.contains(where: { $0 == nil }) else { return verifications }
        let accounted = live.union(held.lazy.compactMap { $0 }.joined())
        for (index, sealed) in archived.sealed.enumerated() {
            if let lost = (sealed.archive.first...sealed.archive.last).first(where: { !accounted.contains($0) }) {
                let path = (archiveDirectory as NSString).appendingPathComponent(sealed.archive.file)
                verifications[index] = ArchiveVerification(file: sealed.archive.file, events: verifications[index].events,
                                                           problem: "event \(lost) is neither in the live log nor in the archive segment \(path)")
            }
        }
        return verifications
    }
}
