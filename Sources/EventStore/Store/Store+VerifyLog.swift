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
}

extension Store {
    /// Reads every event of the log and checks it: its checksum, that it
    /// decodes, and that the events are numbered from 1 without a gap, each
    /// stored under its own seq. Stops at the first damaged event.
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
            while let current = entry {
                do {
                    _ = try EventLog.decode(key: current.key, value: current.value, expecting: checked + 1, encodedSet: &encodedSet)
                } catch let error as EventDecodingError {
                    let damage = LogVerification.Damage(seq: error.seq ?? checked + 1, problem: error.reason,
                                                        isNewerFormat: error.isNewerFormat)
                    return LogVerification(eventsChecked: checked, withoutChecksum: withoutChecksum, damage: damage)
                }
                if !EventCoding.hasChecksum(current.value) { withoutChecksum += 1 }
                checked += 1
                if checked % 4096 == 0 { environment.releaseMappedPages(beyond: Self.mappedPageBudget) }
                entry = try cursor.next()
            }
            return LogVerification(eventsChecked: checked, withoutChecksum: withoutChecksum, damage: nil)
        }
    }
}
