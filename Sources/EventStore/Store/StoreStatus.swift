import Foundation
import Storage

/// What `evsync status` reports.
public struct StoreStatus: Sendable, Equatable {
    /// Events in the log.
    public var events: UInt64
    /// Live records per entity name, for every entity the schemas know or the log mentions.
    public var records: [String: Int]
    /// Records whose local state the server has not acknowledged.
    public var pendingRecords: Int
    /// Local events not yet acknowledged by a server.
    public var unacknowledgedEvents: Int
    /// Server records syncs have skipped, unable to store them (each a `skipped` event).
    public var skippedRecords = 0
    /// Events in the live log: `events` less what compactions moved to archive segments.
    public var liveEvents: UInt64 = 0
    /// The bytes the live log's events take in the data file (the pages of its tree; the views take more).
    public var liveBytes: UInt64 = 0
    /// Events in archive segments, the segments, and their size (of those present).
    public var archivedEvents: UInt64 = 0
    public var archiveSegments = 0
    public var archiveBytes: UInt64 = 0
}

extension Store {
    public func status() throws(StoreError) -> StoreStatus {
        try status(countingPending: true)
    }

    /// `countingPending: false` leaves `pendingRecords` and `unacknowledgedEvents` at 0, for a caller that takes
    /// them from `syncState()` (the CLI's `status`): the outbox is then walked once, not twice.
    package func status(countingPending: Bool) throws(StoreError) -> StoreStatus {
        try snapshot { transaction in
            var status = StoreStatus(events: try log.lastSeq(in: transaction), records: [:], pendingRecords: 0, unacknowledgedEvents: 0)
            status.skippedRecords = try skippedCount(in: transaction)
            status.liveEvents = UInt64(try transaction.entries(of: log.events))
            status.liveBytes = UInt64(try transaction.bytes(of: log.events))
            for sealed in try log.archivedRanges(in: transaction).sealed {
                status.archiveSegments += 1
                status.archivedEvents += sealed.archive.count
                let path = (archiveDirectory as NSString).appendingPathComponent(sealed.archive.file)
                if FileManager.default.fileExists(atPath: path) { status.archiveBytes += sealed.archive.bytes }
            }
            for schema in schemas.entities { status.records[schema.name] = 0 }
            // Records are sorted by entity: count each run of one prefix, naming the entity once per run.
            let names = entityNames()
            let records = try transaction.cursor(log.views.records)
            var entry = try records.first()
            var prefix: [UInt8] = []
            var name = ""
            while let current = entry {
                if prefix.isEmpty || !current.key.starts(with: prefix) {
                    guard let (entity, _) = Keys.split(current.key) else { break }
                    (prefix, name) = (Keys.entityPrefix(entity), names[entity] ?? entity)
                }
                if try RecordEntry.hasRow(current.value) { status.records[name, default: 0] += 1 }
                entry = try records.next()
            }
            guard countingPending else { return status }
            try forEachOutboxRecord(in: transaction) { record in
                status.pendingRecords += 1
                status.unacknowledgedEvents += record.unacknowledged
            }
            return status
        }
    }
}
