import Foundation
import Storage

extension Store {
    /// The newest event's `seq`, each time the log grows, whoever appends
    /// (this process or another). Starts with the current value. A consumer
    /// slower than the log gets the newest value, not every one in between.
    ///
    /// Woken by commits, not by a timer (`CommitSignal`): at once by a commit
    /// in this process, and by one in another process through inotify on the
    /// store's directory, within milliseconds. An idle store wakes no one.
    /// Ends with `.notFound` when the store is removed or replaced.
    /// - Parameter interval: how often to look where inotify cannot be had (its limits, a file system without it).
    public func logChanges(every interval: Duration = .milliseconds(200)) -> AsyncThrowingStream<UInt64, any Error> {
        Self.taskStream(bufferingPolicy: .bufferingNewest(1)) { [self] continuation in
            let commits = environment.commits
            commits.startWatching()
            var last: UInt64?
            while !Task.isCancelled {
                // Read before the look: a commit after it bumps the generation, so no commit is missed.
                let generation = commits.generation
                try checkStillInPlace()
                let seq = try lastSeq()
                if seq != last {
                    last = seq
                    continuation.yield(seq)
                }
                await commits.wait(past: generation, orAfter: interval)
            }
        }
    }

    /// A stream whose elements `body` yields from a task of its own, which is cancelled when the consumer
    /// stops. The stream ends when `body` returns or is cancelled, or with the error `body` throws.
    static func taskStream<Element: Sendable>(
        bufferingPolicy: AsyncThrowingStream<Element, any Error>.Continuation.BufferingPolicy = .unbounded,
        _ body: @escaping @Sendable (AsyncThrowingStream<Element, any Error>.Continuation) async throws -> Void
    ) -> AsyncThrowingStream<Element, any Error> {
        AsyncThrowingStream(bufferingPolicy: bufferingPolicy) { continuation in
            let task = Task {
                do {
                    try await body(continuation)
                    continuation.finish()
                } catch is CancellationError {
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Throws `.notFound` if the store's data file was removed or replaced
    /// since it was opened: this store would otherwise go on reading the old file.
    func checkStillInPlace() throws(StoreError) {
        switch environment.dataFileState(in: directory) {
        case .inPlace: return
        case .removed: throw StoreError(.notFound, "the store at \(directory) was removed", directory: directory)
        case .replaced: throw StoreError(.notFound, "the store at \(directory) was replaced by another one: start again to read the new one",
                                         directory: directory)
        }
    }

    /// Every event after `seq`, oldest first, then each event as it is
    /// appended, by this process or another: the log, followed. The stream
    /// ends only when its consumer stops (or with an error reading the log).
    ///
    /// ```swift
    /// for try await event in store.observeEvents(after: try store.lastSeq()) {
    ///     print(event.seq, event.entity, event.kind)
    /// }
    /// ```
    ///
    /// Events are read as the consumer asks for them, a batch of at most
    /// 1,000 at a time, each in a read snapshot (so writers are never
    /// blocked); a consumer slower than the writers holds one batch in
    /// memory, however far behind it falls. Built on `logChanges`, which
    /// says when there is more to read.
    /// - Parameters:
    ///   - seq: the last event not to deliver (0 for the whole log).
    ///   - interval: how often `logChanges` polls once the consumer has caught up.
    public func observeEvents(after seq: UInt64, every interval: Duration = .milliseconds(200)) -> AsyncThrowingStream<Event, any Error> {
        let follower = LogFollower(store: self, after: seq, changes: logChanges(every: interval))
        return AsyncThrowingStream(unfolding: { try await follower.next() })
    }

    /// The records of an entity, now and again each time events of that
    /// entity are appended (by this process or another): the view a table
    /// shows, kept current. A change leaving the records as they were
    /// (an acknowledgement) yields nothing.
    ///
    /// When the log grows, the new events' entities are read first (the
    /// start of each event, not the whole of it); the table is read again
    /// only if one of them is this entity, so changes to other entities cost
    /// it next to nothing.
    /// - Throws: (through the stream) `.invalidData` for an unknown entity.
    public func observeRecords(_ entity: String, every interval: Duration = .milliseconds(200)) -> AsyncThrowingStream<[Record], any Error> {
        observeRecords(entity, every: interval, probe: nil)
    }

    /// The changes to an entity's records after event `seq`, as they happen
    /// (by this process or another): which records were inserted, updated and
    /// deleted, for a table to apply rather than reload.
    ///
    /// ```swift
    /// let (holidays, seq) = try store.recordsAndSeq("Holiday")
    /// for try await changes in store.observeChanges("Holiday", after: seq) {
    ///     apply(changes.inserted, changes.updated, changes.deleted)
    /// }
    /// ```
    ///
    /// Each wake-up costs what changed, not the size of the table: it decodes
    /// only the new events of this entity (others are passed over by their
    /// first bytes), and reads each changed record's row and its history up to
    /// the previous point. A change leaving the records as they were (an
    /// acknowledgement) yields nothing. A consumer slower than the writers gets
    /// the changes of every event since its last element, merged into one.
    /// - Throws: (through the stream) `.invalidData` for an unknown entity.
    public func observeChanges(_ entityName: String, after seq: UInt64,
                               every interval: Duration = .milliseconds(200)) -> AsyncThrowingStream<RecordChanges<Record>, any Error> {
        let changes = logChanges(every: interval)
        return Self.taskStream { [self] continuation in
            let schema = try self.entity(entityName)
            var seen = seq
            for try await newest in changes where newest > seen {
                let found = try snapshot { transaction in try self.changes(of: schema, after: seen, in: transaction) }
                seen = found.seq
                if !found.isEmpty { continuation.yield(found) }
            }
        }
    }

    /// `observeChanges` with the records as the app's own type.
    public func observeChanges<Value: EntityRecord>(_ type: Value.Type, after seq: UInt64,
                                                    every interval: Duration = .milliseconds(200)) -> AsyncThrowingStream<RecordChanges<Value>, any Error> {
        let records = observeChanges(Value.entityName, after: seq, every: interval)
        return Self.taskStream { [self] continuation in
            let coder = try self.coder(for: type)
            for try await changes in records {
                continuation.yield(RecordChanges(
                    inserted: try changes.inserted.map { record throws(StoreError) in try coder.decode(type, from: record) },
                    updated: try changes.updated.map { record throws(StoreError) in try coder.decode(type, from: record) },
                    deleted: changes.deleted, seq: changes.seq))
            }
        }
    }

    /// An entity's records, kept current: first every record (each also in `changes.inserted`), then after
    /// each commit that changed any of them (in this process or another) the records with what changed.
    ///
    /// ```swift
    /// for try await holidays in store.observe(Holiday.self) {
    ///     tableView.apply(holidays.changes)     // or reload from holidays.records
    /// }
    /// ```
    ///
    /// Each commit costs what it changed: only its events are read (see `observeChanges`), and the
    /// records are kept here and patched. Nothing is read, and no thread wakes, while the store is idle.
    public func observe<Value: EntityRecord>(_ type: Value.Type) -> AsyncThrowingStream<ObservedRecords<Value>, any Error> {
        Self.taskStream { [self] continuation in
            let (first, seq) = try await read { snapshot in (try snapshot.records(type), try snapshot.lastSeq()) }
            try await Self.follow(first, seq: seq, id: \.id, changes: { observeChanges(type, after: $0) }, into: continuation)
        }
    }

    /// `observe` with the records as `Record`s, by entity name (any case).
    /// - Throws: (through the stream) `.invalidData` for an unknown entity.
    public func observe(_ entityName: String) -> AsyncThrowingStream<ObservedRecords<Record>, any Error> {
        Self.taskStream { [self] continuation in
            let (first, seq) = try recordsAndSeq(entityName)
            try await Self.follow(first, seq: seq, id: \.id, changes: { observeChanges(entityName, after: $0) }, into: continuation)
        }
    }

    /// Yields `records`, then each change from `changes(seq)` applied to them.
    private static func follow<Value: Sendable>(
        _ records: [Value], seq: UInt64, id: (Value) -> String,
        changes: (UInt64) -> AsyncThrowingStream<RecordChanges<Value>, any Error>,
        into continuation: AsyncThrowingStream<ObservedRecords<Value>, any Error>.Continuation
    ) async throws {
        var observed = ObservedRecords(records: records, changes: RecordChanges(inserted: records, seq: seq))
        continuation.yield(observed)
        for try await change in changes(seq) {
            observed.apply(change, id: id)
            continuation.yield(observed)
        }
    }

    /// The records of an entity and the last event they include, from one snapshot:
    /// where `observeChanges` should start so that no change is missed or seen twice.
    public func recordsAndSeq(_ entityName: String) throws(StoreError) -> (records: [Record], seq: UInt64) {
        let schema = try entity(entityName)
        return try snapshot { transaction in (try records(of: schema, in: transaction), try log.lastSeq(in: transaction)) }
    }

    /// The changes to `entity`'s records between event `seq` and the end of the log in `transaction`.
    func changes(of schema: EntitySchema, after seq: UInt64, in transaction: Transaction) throws -> RecordChanges<Record> {
        let entity = schema.name
        var changes = RecordChanges<Record>(seq: try log.lastSeq(in: transaction))
        for id in try log.recordIDs(of: entity, after: seq, in: transaction) {
            var before = RecordProjection()
            for event in try log.history(of: id, in: transaction) where event.entity == entity && event.seq <= seq {
                before.apply(event)
            }
            let now = try log.views.projection(entity: entity, id: id, in: transaction).row
            switch (before.row, now) {
            case (nil, let row?): changes.inserted.append(schema.record(id: id, fields: row))
            case (let old?, let row?) where old != row: changes.updated.append(schema.record(id: id, fields: row))
            case (_?, nil): changes.deleted.append(id)
            default: break
            }
        }
        return changes
    }

    /// What one wake-up of `observeRecords` did: the log was read up to
    /// `seenThrough`, and the table was read again or not.
    struct ObservationStep: Sendable, Equatable {
        let seenThrough: UInt64
        let readTable: Bool
    }

    /// `observeRecords`, telling `probe` what each wake-up did (for tests).
    func observeRecords(_ entityName: String, every interval: Duration,
                        probe: (@Sendable (ObservationStep) -> Void)?) -> AsyncThrowingStream<[Record], any Error> {
        let changes = logChanges(every: interval)
        return Self.taskStream { [self] continuation in
            let schema = try self.entity(entityName)
            let entity = schema.name
            // The last event accounted for; nil until the table is first read.
            var seen: UInt64?
            var previous: [Record]?
            for try await newest in changes {
                if let seen, newest <= seen { continue }
                // One snapshot for both: the events looked at and the table read agree.
                let (records, through) = try snapshot { transaction -> ([Record]?, UInt64) in
                    let last = try log.lastSeq(in: transaction)
                    if let seen, try !log.hasEvent(of: entity, after: seen, in: transaction) { return (nil, last) }
                    return (try self.records(of: schema, in: transaction), last)
                }
                seen = through
                probe?(ObservationStep(seenThrough: through, readTable: records != nil))
                if let records, records != previous {
                    previous = records
                    continuation.yield(records)
                }
            }
        }
    }
}

/// The state of one `observeEvents` stream: the batch being handed out and
/// where the log was read up to.
///
/// `@unchecked`: `AsyncThrowingStream(unfolding:)` calls `next` for one
/// consumer, one call at a time, so the state is never touched by two at once.
private final class LogFollower: @unchecked Sendable {
    static let batchSize = 1_000

    private let store: Store
    private var changes: AsyncThrowingStream<UInt64, any Error>.Iterator
    /// The newest event read from the log.
    private var last: UInt64
    private var batch: [Event] = []
    private var position = 0

    init(store: Store, after seq: UInt64, changes: AsyncThrowingStream<UInt64, any Error>) {
        self.store = store
        self.last = seq
        self.changes = changes.makeAsyncIterator()
    }

    func next() async throws -> Event? {
        while true {
            if position < batch.count {
                position += 1
                return batch[position - 1]
            }
            batch = try store.events(after: last, limit: Self.batchSize)
            position = 0
            if let newest = batch.last {
                last = newest.seq
                continue
            }
            // Caught up: wait until the log grows past `last` (nil once the consumer is cancelled).
            repeat {
                guard let newest = try await changes.next() else { return nil }
                if newest > last { break }
            } while true
        }
    }
}
