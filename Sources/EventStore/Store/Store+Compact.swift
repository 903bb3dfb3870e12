import Foundation
import Synchronization
import Storage

/// `compact(before:)`: moving old events out of the live log into a sealed archive segment, leaving
/// one `baseline` event per record that stands for them.
///
/// The steps, and why a crash at any instant leaves the store as before or as after:
/// 1. **Plan**, in a read snapshot: the records all of whose events are at or before the cut, that are
///    in step with the server, and that have no conflict. Everything else stays live: a pending local
///    change, the base it was made on and an open conflict still decide something.
/// 2. **Write the segment** from that snapshot (the events are immutable), flushed, then renamed into
///    `archive/`. Nothing in the store refers to it yet: a crash leaves the store as before, and an
///    unsealed file that a later compaction replaces.
/// 3. **Seal**, one short commit: the `compacted` event (the segment's hash, range and count), the
///    segment listed in `meta` (`ArchivedRanges`), and the compaction marked pending. From this
///    commit on the compaction has happened: every archived event is in the segment.
/// 4. **Move**, in commits of `moveChunk` records: for each planned record still as planned (another
///    process may have changed it since), append its baseline and delete its archived events from the
///    live log, its history entries and its view entry, written again as the baseline's. Until a record
///    is moved its events are in both places, and read from the live log, byte for byte the same. A
///    crash here is finished by the next `compact` (any `--before`): it resumes from the segment.
/// 5. **Shrink** the data file (`Store+Shrink.swift`).
extension Store {
    /// What `compact(before:)` did, or with `dryRun` would do.
    public struct CompactionReport: Sendable, Equatable, Codable {
        /// The last event the compaction considered.
        public var cut: UInt64
        /// The events moved to the archive.
        public var archivedEvents: UInt64
        /// The records left with a baseline in their place.
        public var records: UInt64
        /// Records with events before the cut that stay whole in the live log: changed since the cut,
        /// pending, or with a conflict.
        public var keptRecords: UInt64
        /// The segment written, in the store's `archive/` directory; nil when nothing was archived.
        public var segment: String?
        /// Its size.
        public var segmentBytes: UInt64
        /// Records planned that another process changed before they were moved: their events stay in the
        /// live log too (and are counted in `archivedEvents`, since the segment holds them).
        public var changedDuringCompaction: UInt64
        /// Nothing was written.
        public var dryRun: Bool
        /// A compaction interrupted earlier was finished first.
        public var resumed: Bool
    }

    /// How many records one commit of a compaction moves: each is a few dozen B-tree operations, so a
    /// commit holds the write lock for tens of milliseconds, and another process's `add` waits no longer.
    static let moveChunk = 500

    /// The directory of the store's archive segments.
    public var archiveDirectory: String { (directory as NSString).appendingPathComponent("archive") }

    /// Moves the events appended before `point` out of the live log into an archive segment (see the type's
    /// description for what stays and why), then gives the freed space back to the disk.
    /// - Parameters:
    ///   - point: an event number (the events before it move) or a time (the events stamped before it).
    ///   - dryRun: only say what would move.
    public func compact(before point: LogPoint, dryRun: Bool = false) throws(StoreError) -> CompactionReport {
        do {
            var resumed = false
            if !dryRun, let pending = try snapshot({ try meta(MetaKey.compactionPending, in: $0) }).flatMap(UInt64.init) {
                try finishCompaction(sealedBy: pending)
                resumed = true
            }
            let plan = try snapshot { transaction in
                let cut: UInt64 = switch point {
                case .seq(let seq): min(seq == 0 ? 0 : seq - 1, try log.lastSeq(in: transaction))
                case .time(let time): try seq(at: .time(time - 1), in: transaction)
                }
                return try CompactionPlan.make(cut: cut, store: self, in: transaction)
            }
            var report = CompactionReport(cut: plan.cut, archivedEvents: UInt64(plan.archived.count), records: UInt64(plan.records.count),
                                          keptRecords: UInt64(plan.keptRecords), segment: nil, segmentBytes: 0,
                                          changedDuringCompaction: 0, dryRun: dryRun, resumed: resumed)
            guard !dryRun, !plan.records.isEmpty else { return report }
            let storeID = try ensureStoreID()
            let (file, seal) = try writeSegment(plan, storeID: storeID)
            let info = ArchiveInfo(file: file, store: storeID, first: seal.first, last: seal.last, count: seal.count,
                                   sha256: seal.hex, bytes: seal.bytes,
                                   cut: plan.cut, records: UInt64(plan.records.count))
            let sealSeq = try writeLog { appender in
                let transaction = appender.transaction
                let event = try appender.append(Event(eventID: RecordID.generate(), at: clock(), entity: "", recordID: "", kind: .compacted,
                                                      origin: .local, author: author, archive: info))
                var archived = try log.archivedRanges(in: transaction)
                archived.add(info, seal: event.seq)
                try transaction.put(Array(ArchivedRanges.metaKey.utf8), archived.encoded(), in: meta)
                try setMeta(MetaKey.compactionPending, String(event.seq), in: transaction)
                try setMeta("layout", Self.layoutVersion, in: transaction)
                return event.seq
            }
            report.segment = file
            report.segmentBytes = seal.bytes
            report.changedDuringCompaction = try move(plan.records, sealedBy: sealSeq)
            _ = try writeLog { appender in try appender.transaction.delete(Array(MetaKey.compactionPending.utf8), in: meta) }
            return report
        } catch let error as StoreError {
            throw error
        } catch {
            throw wrap(error)
        }
    }

    /// The layout of a store that has been compacted: its log has gaps, `baseline` and `compacted` events,
    /// which an evsync before compaction would misread; it refuses the store as written by a newer evsync.
    /// A compaction now marks the store `layoutVersion` (6), which that evsync refuses as well.
    static let compactedLayout = "5"

    /// This store's id, which its archive segments carry so that one of another store is named as such; made once.
    func ensureStoreID() throws -> String {
        if let id = try snapshot({ try meta(MetaKey.storeID, in: $0) }) { return id }
        return try environment.write { transaction in
            if let id = try meta(MetaKey.storeID, in: transaction) { return id }
            let id = RecordID.generate()
            try setMeta(MetaKey.storeID, id, in: transaction)
            return id
        }
    }

    /// Writes the planned events to a new segment in `archive/`, flushed and renamed into place; returns its name and seal.
    private func writeSegment(_ plan: CompactionPlan, storeID: String) throws -> (String, ArchiveSeal) {
        let fileManager = FileManager.default
        try fileManager.createDirectory(atPath: archiveDirectory, withIntermediateDirectories: true,
                                        attributes: [.posixPermissions: 0o700])
        let temporary = (archiveDirectory as NSString).appendingPathComponent(".writing-\(RecordID.generate())")
        defer { try? fileManager.removeItem(atPath: temporary) }
        var writer = try ArchiveSegmentWriter(path: temporary, storeID: storeID)
        try environment.read { transaction in
            let cursor = try transaction.cursor(log.events)
            for seq in plan.archived {
                guard let entry = try cursor.seek(exactly: Keys.sequence(seq)) else {
                    throw StoreError(.corrupt, "event \(seq) went missing while it was being archived")
                }
                try writer.append(seq: seq, event: entry.value)
            }
        }
        let seal = try writer.finish()
        let name = "events-\(seal.first)-\(seal.last).evarchive"
        let path = (archiveDirectory as NSString).appendingPathComponent(name)
        guard rename(temporary, path) == 0 else {
            throw StoreError(.failure, "could not move the archive segment into \(archiveDirectory): \(String(cString: strerror(errno)))")
        }
        try Self.flush(directory: archiveDirectory)
        // And `archive/` itself, which the first compaction made: a segment renamed into a directory whose own name
        // never reached the disk is lost with it after a power cut, while the log says its events are there
        // (found by CrashStateTests).
        try Self.flush(directory: directory)
        return (name, seal)
    }

    /// Step 4: moves each planned record that is still as planned; returns how many were not.
    private func move(_ records: [CompactionPlan.Record], sealedBy seal: UInt64) throws -> UInt64 {
        var changed: UInt64 = 0
        var start = 0
        while start < records.count {
            let chunk = records[start..<min(start + Self.moveChunk, records.count)]
            // Each commit flushed, after the write lock is released: that flush is also when another process's
            // write gets the lock. Unflushed, these commits followed one another so closely that an add waited
            // 940 ms (Tools/bench case 14).
            changed += try writeLog { appender in
                var changed: UInt64 = 0
                var moved: [UInt64] = []
                for record in chunk {
                    if try move(record, sealedBy: seal, appender: &appender) { moved += record.seqs } else { changed += 1 }
                }
                let transaction = appender.transaction
                try transaction.delete(sorted: moved.sorted().lazy.map(Keys.sequence), in: log.events)
                let before = try meta(MetaKey.movedEvents, in: transaction).flatMap(UInt64.init) ?? 0
                try setMeta(MetaKey.movedEvents, String(before + UInt64(moved.count)), in: transaction)
                return changed
            }
            start += Self.moveChunk
        }
        return changed
    }

    /// Moves one record, in the commit of `appender`, but for the removal of its events, which the caller does
    /// for all of the commit's records at once; false, having written nothing, if it changed since it was planned.
    private func move(_ record: CompactionPlan.Record, sealedBy seal: UInt64, appender: inout EventLog.Appender) throws -> Bool {
        let transaction = appender.transaction
        let history = try transaction.cursor(log.views.history)
        guard try history.seek(exactly: record.historyKey) != nil, let last = try history.lastDuplicate(),
              Keys.sequence(from: last.value) == record.seqs.last else { return false }
        try transaction.delete(record.historyKey, in: log.views.history)
        let recordKey = Keys.record(entity: record.entity, id: record.id)
        try transaction.delete(recordKey, in: log.views.records)
        try transaction.delete(recordKey, in: log.views.outbox)
        let projection = record.projection
        let baseline = Baseline(compaction: seal, covers: record.seqs, setters: record.setters, lastExchange: record.lastExchange,
                                lastEvent: record.lastEvent)
        try appender.append(Event(eventID: RecordID.generate(), at: clock(), entity: record.entity, recordID: record.id, kind: .baseline,
                                  origin: .local, author: author, set: projection.row ?? [:], version: projection.version,
                                  local: projection.row == nil ? .absent : nil, baseline: baseline),
                            current: RecordProjection())
        return true
    }

    /// Finishes a compaction that sealed its segment but was interrupted while moving records: plans again
    /// at its cut, keeping to the records the segment holds whole that have no baseline of it yet.
    private func finishCompaction(sealedBy seal: UInt64) throws {
        let sealed = try snapshot { try log.archivedRanges(in: $0).segment(sealedBy: seal) }
        if let sealed {
            let path = (archiveDirectory as NSString).appendingPathComponent(sealed.archive.file)
            guard FileManager.default.fileExists(atPath: path) else {
                throw StoreError(.notFound, "an interrupted compaction cannot finish: its archive segment \(path) is missing")
            }
            var inSegment = Set<UInt64>()
            do { inSegment = Set(try ArchiveSegment(path: path).verify(against: ArchiveSeal(sealed.archive))) } catch {
                throw StoreError(.corrupt, "an interrupted compaction cannot finish: \(error)", cause: error)
            }
            let plan = try snapshot { try CompactionPlan.make(cut: sealed.archive.cut, store: self, in: $0) }
            _ = try move(plan.records.filter { $0.seqs.allSatisfy(inSegment.contains) }, sealedBy: seal)
        }
        _ = try writeLog { appender in try appender.transaction.delete(Array(MetaKey.compactionPending.utf8), in: meta) }
    }
}

/// Which records a compaction moves, and what each baseline says (step 1 of `Store.compact`).
struct CompactionPlan: Sendable {
    struct Record: Sendable {
        let historyKey: [UInt8]
        let entity: String
        let id: String
        /// Its events, oldest first: all at or before the cut.
        let seqs: [UInt64]
        let projection: RecordProjection
        let setters: [String: EventSummary]
        let lastExchange: EventSummary?
        let lastEvent: EventSummary
    }

    let cut: UInt64
    var records: [Record] = []
    /// Every event to archive, in log order.
    var archived: [UInt64] = []
    var keptRecords = 0

    /// Walks the `history` index, one record at a time, and folds each candidate's events: the second half of
    /// the index on a thread of its own, in a snapshot of the same commit. The fold is most of a compaction's
    /// work, and a machine has more cores than one.
    static func make(cut: UInt64, store: Store, in transaction: Transaction) throws -> CompactionPlan {
        var plan = try halves(cut: cut, store: store, in: transaction)
        plan.archived.sort()
        // Moved in the order they were created, records changed together share the pages their events are on:
        // in key order, each commit of `moveChunk` records rewrote a page per event.
        plan.records.sort { $0.seqs[0] < $1.seqs[0] }
        return plan
    }

    /// The plan of each half of the `history` index, joined (in no order: `make` sorts it).
    private static func halves(cut: UInt64, store: Store, in transaction: Transaction) throws -> CompactionPlan {
        guard cut > 0, let middle = try middleKey(of: store.log.views.history, in: transaction) else {
            return try make(cut: cut, store: store, in: transaction, from: nil, until: nil)
        }
        let snapshot = transaction.id
        let secondHalf = Mutex<Result<CompactionPlan?, any Error>>(.success(nil))
        let done = DispatchSemaphore(value: 0)
        // Lent to the thread and taken back before it signals: a `Store` the thread still held as the compaction
        // returned kept the store open in this process a moment longer, and the shrink after it refused to run.
        let lent = Mutex<Store?>(store)
        Thread {
            let result = Result { () throws -> CompactionPlan? in
                guard let store = lent.withLock({ $0.take() }) else { return nil }
                return try store.environment.read { second in
                    // A commit came between the two snapshots: the first does it all.
                    second.id == snapshot ? try make(cut: cut, store: store, in: second, from: middle, until: nil) : nil
                }
            }
            secondHalf.withLock { $0 = result }
            done.signal()
        }.start()
        let firstHalf = Result { try make(cut: cut, store: store, in: transaction, from: nil, until: middle) }
        done.wait()
        var plan = try firstHalf.get()
        let second = try secondHalf.withLock { $0 }.get() ?? make(cut: cut, store: store, in: transaction, from: middle, until: nil)
        plan.records += second.records
        plan.archived += second.archived
        plan.keptRecords += second.keptRecords
        return plan
    }

    /// The first key at or past the middle of `index`'s entries; nil when there is no second half.
    private static func middleKey(of index: Database, in transaction: Transaction) throws -> [UInt8]? {
        let cursor = try transaction.cursor(index)
        var entry = try cursor.first()
        for _ in 0..<(try transaction.entries(of: index) / 2) { entry = try cursor.next() }
        guard let middle = entry.map({ Array($0.key) }) else { return nil }
        while let current = entry, current.key.elementsEqual(middle) { entry = try cursor.next() }
        return entry.map { Array($0.key) }
    }

    /// The plan for the records whose history keys are in `from..<until` (nil: from the first, to the last).
    private static func make(cut: UInt64, store: Store, in transaction: Transaction, from: [UInt8]?, until: [UInt8]?) throws -> CompactionPlan {
        var plan = CompactionPlan(cut: cut)
        guard cut > 0 else { return plan }
        let log = store.log
        let conflict = ViewDatabases.kindCodes[.conflict]
        let cursor = try transaction.cursor(log.views.history)
        var entry = try from.map { try cursor.seek(atLeast: $0) } ?? cursor.first()
        var key: [UInt8] = []
        var seqs: [UInt64] = []
        var candidate = true
        func finish() throws {
            defer { seqs.removeAll(keepingCapacity: true) }
            guard !seqs.isEmpty else { return }
            guard candidate, let record = try plannedRecord(key: key, seqs: seqs, log: log, in: transaction) else {
                if seqs.first.map({ $0 <= cut }) == true { plan.keptRecords += 1 }
                return
            }
            plan.records.append(record)
            plan.archived += seqs
        }
        while let current = entry, until.map({ current.key.lexicographicallyPrecedes($0) }) ?? true {
            if !current.key.elementsEqual(key) {
                try finish()
                key = Array(current.key)
                candidate = true
            }
            let seq = Keys.sequence(from: current.value)
            seqs.append(seq)
            if seq > cut || (current.value.count > 8 && current.value[8] == conflict) { candidate = false }
            entry = try cursor.next()
        }
        try finish()
        return plan
    }

    /// The record's plan, or nil when it must stay whole in the live log (pending, or its views disagree with its events).
    private static func plannedRecord(key: [UInt8], seqs: [UInt64], log: EventLog, in transaction: Transaction) throws -> Record? {
        var projection = RecordProjection()
        var setters: [String: EventSummary] = [:]
        var lastExchange: EventSummary?
        var lastEvent: EventSummary?
        var entity = "", id = ""
        for seq in seqs {
            guard let event = try log.event(seq: seq, in: transaction) else { return nil }
            (entity, id) = (event.entity, event.recordID)
            let before = projection.row
            projection.apply(event)
            for field in Store.changedFields(from: before, to: projection.row) {
                setters[field] = event.baseline?.setters[field] ?? EventSummary(event)
            }
            if let baseline = event.baseline {
                lastExchange = baseline.lastExchange
                lastEvent = baseline.lastEvent
            } else {
                if [.acknowledged, .conflict, .rejected].contains(event.kind) { lastExchange = EventSummary(event) }
                lastEvent = EventSummary(event)
            }
        }
        guard let lastEvent, !id.isEmpty, !projection.isPending,
              try log.views.projection(entity: entity, id: id, in: transaction) == projection else { return nil }
        // Only the fields the record still has: a field unset (or a record deleted) has no setter.
        setters = setters.filter { projection.row?[$0.key] != nil }
        return Record(historyKey: key, entity: entity, id: id, seqs: seqs, projection: projection, setters: setters,
                      lastExchange: lastExchange, lastEvent: lastEvent)
    }
}
