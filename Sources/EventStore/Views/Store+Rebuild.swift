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
    @discardableResult
    public func rebuildViews() throws(StoreError) -> UInt64 {
        do {
            return try environment.write { transaction in
                for database in log.views.all { try transaction.empty(database) }
                return try Self.replay(log.events, into: log.views, environment: environment, in: transaction)
            }
        } catch {
            throw wrap(error)
        }
    }

    /// Rebuilds the views aside, compares them with the stored ones and
    /// returns every difference (none when the views are sound). Nothing is
    /// changed: the scratch views live in a transaction that is aborted.
    public func verifyViews(limit: Int = 100) throws(StoreError) -> [ViewDifference] {
        let aborted = StoreError(.failure, "verification is done")
        var differences: [ViewDifference] = []
        do {
            try environment.write { transaction in
                let scratch = try ViewDatabases.open(prefix: "verify.", in: environment, transaction: transaction, create: true)
                for database in scratch.all { try transaction.empty(database) }
                try Self.replay(log.events, into: scratch, environment: environment, in: transaction)
                for (stored, fresh) in zip(log.views.all, scratch.all) {
                    try compare(stored, fresh, in: transaction, limit: limit, into: &differences)
                }
                // Throwing aborts the transaction, and the scratch views with it.
                throw aborted
            }
        } catch let error as StoreError where error.message == aborted.message {
            return differences
        } catch {
            throw wrap(error)
        }
        return differences
    }

    /// Folds every event of the log into `views`, which must be empty; returns the number of events.
    @discardableResult
    static func replay(_ events: Database, into views: ViewDatabases, environment: Environment, in transaction: Transaction) throws -> UInt64 {
        var count: UInt64 = 0
        // Chunks of the log are folded in record order (stable, so each
        // record's events keep log order): a sweep over the view trees
        // instead of a random walk.
        let cursor = try transaction.cursor(events)
        var entry = try cursor.first()
        var chunk: [(event: Event, encodedSet: [UInt8]?)] = []
        while entry != nil || !chunk.isEmpty {
            if let current = entry, chunk.count < Self.importChunk {
                var encodedSet: [UInt8]?
                let event = try EventCoding.decode(current.value, encodedSet: &encodedSet)
                chunk.append((event, encodedSet))
                count += 1
                entry = try cursor.next()
                continue
            }
            try views.apply(sortedByRecord: chunk, in: transaction)
            chunk.removeAll(keepingCapacity: true)
            environment.releaseMappedPages()
        }
        return count
    }

    /// Walks both databases in key order (and value order for duplicates) and records mismatches.
    private func compare(_ stored: Database, _ fresh: Database, in transaction: Transaction, limit: Int,
                         into differences: inout [ViewDifference]) throws {
        let storedCursor = try transaction.cursor(stored)
        let freshCursor = try transaction.cursor(fresh)
        var left = try storedCursor.first()
        var right = try freshCursor.first()
        func readable(_ key: UnsafeRawBufferPointer) -> String {
            guard let (first, second) = Keys.split(key) else { return String(decoding: key, as: UTF8.self) }
            return stored.name == "history" ? "\(second)/\(first)" : "\(first)/\(second)"
        }
        func note(_ key: UnsafeRawBufferPointer, _ problem: String) {
            if differences.count < limit { differences.append(ViewDifference(view: stored.name, key: readable(key), problem: problem)) }
        }
        while left != nil || right != nil {
            switch (left, right) {
            case let (l?, r?):
                let order = Self.compareBytes(l.key, r.key)
                if order == 0 {
                    if !l.value.elementsEqual(r.value) { note(l.key, "different") }
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
