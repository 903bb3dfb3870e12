import Foundation
import Storage

/// Reads archived events back for the readers of the past (`history`, `diff`, `--as-of`, `blame`): opens each
/// segment once, when first needed, and notes the ones that are needed but missing.
///
/// The rule every reader follows: a `baseline` stands, in a record's fold, at its compaction's cut (the
/// record had no event between the cut and the baseline, or it would not have been moved). A reader that
/// needs the record only at points at or after the cut folds the baseline and needs no archive; one that
/// needs an earlier point expands the baseline into the events it covers, read from the segment.
final class ArchiveReader {
    let directory: String
    let archived: ArchivedRanges
    private var opened: [UInt64: ArchiveSegment] = [:]
    /// The segment files needed and not found, in the order they were needed.
    private(set) var missing: [String] = []

    init(directory: String, archived: ArchivedRanges) {
        self.directory = directory
        self.archived = archived
    }

    /// The cut of the compaction that made `baseline`: where it stands in its record's fold.
    func position(of event: Event) -> UInt64 {
        guard let baseline = event.baseline else { return event.seq }
        return archived.segment(sealedBy: baseline.compaction)?.archive.cut ?? event.seq
    }

    /// `events` with each baseline whose compaction's cut is after `point` replaced by the events it covers
    /// (themselves expanded by the same rule), oldest first. A baseline whose segment is missing stays, and
    /// its file is noted in `missing`.
    func expand(_ events: [Event], before point: UInt64) throws -> [Event] {
        guard events.contains(where: { $0.baseline != nil && position(of: $0) > point }) else { return events }
        var result: [Event] = []
        for event in events {
            guard let baseline = event.baseline, position(of: event) > point else {
                result.append(event)
                continue
            }
            guard let covered = try self.events(baseline.covers, sealedBy: baseline.compaction) else {
                result.append(event)
                continue
            }
            result += try expand(covered, before: point)
        }
        return result
    }

    /// Every event of the segment sealed by `seal`, in log order, until `body` returns false; nil, noting the
    /// file, when it is missing.
    func forEach(sealedBy seal: UInt64, _ body: (Event) throws -> Bool) throws -> Bool {
        guard let segment = try segment(sealedBy: seal) else { return false }
        var failure: (any Error)?
        try segment.forEach { seq, bytes in
            do {
                return try body(try decode(seq: seq, bytes: bytes, in: segment))
            } catch {
                failure = error
                return false
            }
        }
        if let failure { throw failure }
        return true
    }

    /// The events `seqs` of the segment sealed by `seal`, in order; nil when the segment is missing.
    func events(_ seqs: [UInt64], sealedBy seal: UInt64) throws -> [Event]? {
        guard let segment = try segment(sealedBy: seal) else { return nil }
        let found: [UInt64: [UInt8]]
        do { found = try segment.events(seqs) } catch { throw corrupt(segment, "\(error)") }
        return try seqs.map { seq in
            guard let bytes = found[seq] else { throw corrupt(segment, "it does not hold event \(seq), which its seal says it does") }
            return try decode(seq: seq, bytes: bytes[...], in: segment)
        }
    }

    /// The path of the segment sealed by `seal`.
    func path(sealedBy seal: UInt64) -> String? {
        archived.segment(sealedBy: seal).map { (directory as NSString).appendingPathComponent($0.archive.file) }
    }

    /// The segment sealed by `seal`, opened and checked against that seal (`ArchiveSegment.check`) before any use.
    private func segment(sealedBy seal: UInt64) throws -> ArchiveSegment? {
        if let segment = opened[seal] { return segment }
        guard let sealed = archived.segment(sealedBy: seal), let path = path(sealedBy: seal) else { return nil }
        do throws(ArchiveSegmentError) {
            let segment = try ArchiveSegment(path: path)
            guard let expected = ArchiveSeal(sealed.archive) else { throw ArchiveSegmentError.mismatch(path) }
            try segment.check(store: sealed.archive.store, against: expected)
            opened[seal] = segment
            return segment
        } catch .missing {
            if !missing.contains(path) { missing.append(path) }
            return nil
        } catch {
            // A damaged segment is the log's own bytes: only a copy of the segment (a backup holds `archive/`) brings it back.
            throw StoreError(.corrupt, "\(error)", remedy: .restoreFromBackup, cause: error)
        }
    }

    private func decode(seq: UInt64, bytes: ArraySlice<UInt8>, in segment: ArchiveSegment) throws -> Event {
        var encodedSet: [UInt8]?
        do {
            return try Keys.sequence(seq).withUnsafeBytes { key in
                try bytes.withUnsafeBytes { value in try EventLog.decode(key: key, value: value, expecting: seq, encodedSet: &encodedSet) }
            }
        } catch {
            throw corrupt(segment, "event \(seq) in it does not decode: \(error)")
        }
    }

    private func corrupt(_ segment: ArchiveSegment, _ why: String) -> StoreError {
        StoreError(.corrupt, "the archive segment \(segment.path) is damaged: \(why)")
    }
}

extension Store {
    /// A reader of this store's archive segments, for one snapshot.
    func archiveReader(in transaction: Transaction) throws -> ArchiveReader {
        ArchiveReader(directory: archiveDirectory, archived: try log.archivedRanges(in: transaction))
    }

    /// Throws naming the first segment a reading of the past needed and did not find.
    static func requireArchives(_ reader: ArchiveReader, for what: String) throws {
        guard let file = reader.missing.first else { return }
        throw StoreError(.notFound, "\(what) needs the archive segment \(file), which is missing: put it back (the live log holds only the state at the compaction)")
    }
}
