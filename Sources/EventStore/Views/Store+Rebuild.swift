import Foundation
import Storage

/// A way the stored views differ from a fresh replay of the log.
public struct ViewDifference: Sendable, Equatable, CustomStringConvertible {
    /// Which view: `records`, `outbox` or `history`.
    public let view: String
    /// The entry's key, readable (`entity/id`).
    public let key: String
    /// `missing` (replay has it, the view not), `unexpected` (the reverse) or `different`.
    public let problem: String

    public var description: String { "\(view) \(key): \(problem)" }
}

extension Store {
    /// Replays the whole log into fresh views and swaps them in: one write
    /// transaction empties and refills them, so readers see either the old
    /// views or the new ones. Returns the number of events replayed.
    /// Views this store replayed as it opened (`init(repairingViews:)`, or a
    /// store of an old layout upgraded) are not replayed again while the log has
    /// not grown since: they are what the replay would make.
    @discardableResult
    public func rebuildViews() throws(StoreError) -> UInt64 {
        do {
            return try environment.write { transaction in
                if let replayedAtOpening, try log.lastSeq(in: transaction) == replayedAtOpening { return replayedAtOpening }
                try markLayout(in: transaction)
                // The indexes kept are those the schemas declare now: adding or dropping one takes a rebuild.
                if log.views.indexes.database != nil {
                    try Self.setIndexes(IndexDefinition.declared(by: schemas), of: log, in: transaction)
                }
                for database in log.views.all { try transaction.empty(database) }
                return try Self.replay(log, into: log.views, environment: environment, in: transaction)
            }
        } catch {
            throw wrap(error)
        }
    }

    /// Rebuilds the views aside, compares them with the stored ones and
    /// returns every difference (none when the views are sound), up to `limit`.
    ///
    /// Takes no write lock on the store, so writers carry on meanwhile: the
    /// log and the views are read in one read snapshot, and the log is
    /// replayed into a scratch environment in a temporary directory, removed
    /// afterwards. Nothing in the store is changed or added.
    public func verifyViews(limit: Int = 100) throws(StoreError) -> [ViewDifference] {
        try verifyViews(limit: limit, afterReplay: { _ in })
    }

    /// `verifyViews`, calling `afterReplay` with the scratch directory once
    /// the scratch views are built, the store's snapshot still open (for tests).
    func verifyViews(limit: Int, afterReplay: (_ scratchDirectory: String) throws -> Void) throws(StoreError) -> [ViewDifference] {
        let scratchDirectory = FileManager.default.temporaryDirectory
            .appendingPathComponent("evsync-verify-\(UUID().uuidString)", isDirectory: true).path
        do {
            // The scratch views hold every record of the store: the owner's only, like the store.
            try FileManager.default.createDirectory(atPath: scratchDirectory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw StoreError(.failure, "cannot create a scratch directory to verify in: \(error.localizedDescription)")
        }
        defer { try? FileManager.default.removeItem(atPath: scratchDirectory) }
        do {
            return try differencesFromReplay(in: scratchDirectory, limit: limit, afterReplay: afterReplay)
        } catch {
            throw wrap(error)
        }
    }

    /// The heart of `verifyViews`, in a function of its own so that the
    /// scratch environment is closed when it returns, before its directory is removed.
    private func differencesFromReplay(in scratchDirectory: String, limit: Int,
                                       afterReplay: (_ scratchDirectory: String) throws -> Void) throws -> [ViewDifference] {
        let scratch = try Self.openEnvironment(scratchDirectory, mapSizes: Self.mapSizes).environment
        return try environment.read { stored in
            // The scratch views are only compared, never kept: their transaction is aborted, never flushed.
            try scratch.writeAndDiscard { transaction in
                // Rows stored by reference are read from the store's log.
                // The indexes the store keeps, kept the same way.
                let indexes = try log.views.indexes.database.map { _ in
                    RecordIndexes(database: try scratch.openDatabase(RecordIndexes.databaseName, flags: MDBFlags.create | RecordIndexes.flags,
                                                                    in: transaction),
                                  meta: nil, fixed: try log.views.indexes.definitions(in: stored).values.flatMap { $0 })
                } ?? RecordIndexes(database: nil, meta: nil)
                let fresh = try ViewDatabases.open(in: scratch, transaction: transaction, create: true, events: log.events, indexes: indexes)
                try Self.replay(log, from: stored, into: fresh, in: transaction, releasing: [environment, scratch])
                try afterReplay(scratchDirectory)
                var differences: [ViewDifference] = []
                // A `records` entry of an earlier layout holds what a fresh one holds by reference: same fields, other bytes.
                let sets = log.views.sets(in: stored)
                func sameRecord(_ storedEntry: UnsafeRawBufferPointer, _ freshEntry: UnsafeRawBufferPointer) -> Bool {
                    guard let stored = try? RecordEntry.decode(storedEntry, sets: sets),
                          let fresh = try? RecordEntry.decode(freshEntry, sets: sets) else { return false }
                    return stored == fresh
                }
                for (storedView, freshView) in zip(log.views.all, fresh.all) {
                    try compare(storedView, in: stored, with: freshView, in: transaction, limit: limit,
                                sameValue: storedView.name == "records" ? sameRecord : nil, into: &differences)
                }
                return differences
            }
        }
    }

    /// Folds every event of the log into `views`, which must be empty; returns the number of events.
    @discardableResult
    static func replay(_ log: EventLog, into views: ViewDatabases, environment: Environment, in transaction: Transaction) throws -> UInt64 {
        let count = try replay(log, from: transaction, into: views, in: transaction, releasing: [environment])
        try views.indexes.noteKept(through: try log.lastSeq(in: transaction), in: transaction)
        return count
    }

    /// Folds every event of the log, read in `source`, into `views`, written
    /// in `target` (the same transaction, or one of another environment);
    /// returns the number of events.
    /// - Parameter environments: whose mapped pages to release as the replay goes.
    @discardableResult
    static func replay(_ log: EventLog, from source: Transaction, into views: ViewDatabases, in target: Transaction,
                       releasing environments: [Environment]) throws -> UInt64 {
        let logTransaction = source === target ? nil : source
        var count: UInt64 = 0
        var expectation = try log.expectation(from: 1, in: source)
        // Chunks of the log are folded in record order (stable, so each
        // record's events keep log order): a sweep over the view trees
        // instead of a random walk.
        let cursor = try source.cursor(log.events)
        var entry = try cursor.first()
        var chunk: [(event: Event, encodedSet: [UInt8]?)] = []
        while entry != nil || !chunk.isEmpty {
            if let current = entry, chunk.count < Self.importChunk {
                var encodedSet: [UInt8]?
                let event = try EventLog.decode(key: current.key, value: current.value, expecting: expectation.next(current.key),
                                                encodedSet: &encodedSet)
                chunk.append((event, encodedSet))
                count += 1
                entry = try cursor.next()
                continue
            }
            try views.apply(sortedByRecord: chunk, in: target, log: logTransaction)
            chunk.removeAll(keepingCapacity: true)
            for environment in environments { environment.releaseMappedPages() }
        }
        return count
    }

    /// Walks both databases in key order (and value order for duplicates) and records mismatches.
    /// - Parameter sameValue: whether two values that differ in their bytes still say the same thing.
    private func compare(_ stored: Database, in storedTransaction: Transaction, with fresh: Database,
                         in freshTransaction: Transaction, limit: Int,
                         sameValue: ((UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool)?,
                         into differences: inout [ViewDifference]) throws {
        let storedCursor = try storedTransaction.cursor(stored)
        let freshCursor = try freshTransaction.cursor(fresh)
        var left = try storedCursor.first()
        var right = try freshCursor.first()
        func readable(_ key: UnsafeRawBufferPointer) -> String {
            guard let (first, second) = Keys.split(key) else { return String(decoding: key, as: UTF8.self) }
            return stored.name == "history" ? "\(second)/\(first)" : "\(first)/\(second)"
        }
        func note(_ key: UnsafeRawBufferPointer, _ problem: String) {
            if differences.count < limit { differences.append(ViewDifference(view: stored.name, key: readable(key), problem: problem)) }
        }
        // In a database of sorted duplicates, a key's values are compared as one list.
        let duplicates = try storedTransaction.hasSortedDuplicates(stored)
        func values(of key: [UInt8], from entry: inout Cursor.Entry?, _ cursor: Cursor) throws -> [[UInt8]] {
            var values: [[UInt8]] = []
            while let current = entry, current.key.elementsEqual(key) {
                values.append(Array(current.value))
                entry = try cursor.next()
            }
            return values
        }
        while left != nil || right != nil {
            switch (left, right) {
            case let (l?, r?):
                let order = Self.compareBytes(l.key, r.key)
                if order == 0, duplicates {
                    let key = Array(l.key)
                    let (storedValues, freshValues) = (try values(of: key, from: &left, storedCursor), try values(of: key, from: &right, freshCursor))
                    if storedValues != freshValues {
                        let problem = storedValues.count > freshValues.count ? "unexpected" : storedValues.count < freshValues.count ? "missing" : "different"
                        key.withUnsafeBytes { note($0, problem) }
                    }
                } else if order == 0 {
                    if !l.value.elementsEqual(r.value), try !(sameValue?(l.value, r.value) ?? false) { note(l.key, "different") }
                    left = try storedCursor.next()
                    right = try freshCursor.next()
                } else if order < 0 {
                    note(l.key, "unexpected")
                    left = try storedCursor.next()
                } else {
                    note(r.key, "missing")
                    right = try freshCursor.next()
                }
            case let (l?, nil):
                note(l.key, "unexpected")
                left = try storedCursor.next()
            case let (nil, r?):
                note(r.key, "missing")
                right = try freshCursor.next()
            case (nil, nil):
                break
            }
        }
    }

    private static func compareBytes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        for (x, y) in zip(a, b) where x != y { return x < y ? -1 : 1 }
        return a.count - b.count
    }
}
