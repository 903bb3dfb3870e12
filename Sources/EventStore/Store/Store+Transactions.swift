import Dispatch
import Synchronization
import Storage

extension Store {
    /// Runs `body` in one write transaction: any number of changes, one commit, one flush, all or nothing.
    ///
    /// ```swift
    /// let id = try store.write { transaction in
    ///     let id = try transaction.add("Holiday", fields: ["name": "Bevrijdingsdag", "date": "2027-05-05"]).recordID
    ///     try transaction.edit("Birthday", id: annsID, set: ["phone": "+31 20 123 4567"])
    ///     return id
    /// }
    /// ```
    ///
    /// Returns what `body` returns, once the changes are durable. If `body` throws, nothing is written
    /// and its error comes back as it was. Blocks the calling thread while it waits for the write lock
    /// (another writer, in this process or another) and for the flush: from async code, `await` the
    /// async overload instead. Calling `write` (or a one-change method such as `add`) inside `body`
    /// throws `.failure`: use the transaction at hand.
    ///
    /// A change to an entity the last sync learned this account may only read (`access(of:)`) is refused with
    /// `.readOnly`, since the server would refuse it: `overridingReadOnly` makes it all the same, kept here and
    /// held at the next sync until access is granted (`SyncEngine.sync(resendRefused:)`).
    /// - Throws: `body`'s error, or a `StoreError` (`.readOnly`, `.full`, …).
    @discardableResult
    public func write<T>(overridingReadOnly: Bool = false, _ body: (StoreTransaction) throws -> T) throws -> T {
        do {
            return try environment.groupWrite(durable: durability == .full) { transaction in
                try runWrite(body, overridingReadOnly: overridingReadOnly, in: transaction)
            }
        } catch let error as StoreError {
            throw error
        } catch let error as StorageError {
            throw wrap(error)
        }
    }

    /// Runs `body` on one consistent snapshot: every read in it sees the store as of one commit,
    /// whatever writers do meanwhile. Never waits for writers.
    public func read<T>(_ body: (StoreSnapshot) throws -> T) throws -> T {
        do {
            return try environment.read { transaction in
                let snapshot = StoreSnapshot(store: self, transaction: transaction)
                defer { snapshot.close() }
                return try body(snapshot)
            }
        } catch let error as StorageError {
            throw wrap(error)
        }
    }

    /// `write`, without blocking the caller: `body` runs on the store's writer thread, never on the
    /// cooperative pool, and the call resumes once the changes are durable.
    ///
    /// Writes awaited at the same time share commits (group commit): each runs in a transaction nested
    /// in one that is committed and flushed once for all of them, so 16 tasks adding at once wait for
    /// one flush, not sixteen. Each is still all or nothing on its own: one that throws leaves no trace,
    /// and the others commit. A write is acknowledged only after the flush that makes it durable.
    /// Cancelling the awaiting task does not cancel a write already submitted. `overridingReadOnly` as the blocking `write`'s.
    @discardableResult
    public func write<T: Sendable>(overridingReadOnly: Bool = false,
                                   _ body: @escaping @Sendable (StoreTransaction) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let outcome = Mutex<Result<T, any Error>?>(nil)
            environment.groupCommit.submit(GroupCommit.Job(
                run: { transaction in
                    let result = Result { try self.runWrite(body, overridingReadOnly: overridingReadOnly, in: transaction) }
                    outcome.withLock { $0 = result }
                    if case .success = result { return true }
                    return false
                },
                finish: { commitError in
                    switch (outcome.withLock { $0 }, commitError) {
                    case (.failure(let error)?, _): continuation.resume(throwing: (error as? StorageError).map(self.wrap) ?? error)
                    case (_, let error?): continuation.resume(throwing: self.wrap(error))
                    case (.success(let value)?, nil): continuation.resume(returning: value)
                    case (nil, nil): continuation.resume(throwing: StoreError(.failure, "a write was never run"))
                    }
                }, durable: durability == .full), to: environment)
        }
    }

    /// `read`, off the calling actor (a read never waits for a writer, but a large one takes time). Not on
    /// the writer's queue: a read must not wait behind the writes queued there.
    public func read<T: Sendable>(_ body: @escaping @Sendable (StoreSnapshot) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(with: Result { try self.read(body) })
            }
        }
    }

    /// `body` with a `StoreTransaction` on `transaction`, closed when it returns.
    private func runWrite<T>(_ body: (StoreTransaction) throws -> T, overridingReadOnly: Bool, in transaction: Transaction) throws -> T {
        try appending(in: transaction) { appender in
            let changes = StoreTransaction(store: self, transaction: transaction, appender: appender, overridingReadOnly: overridingReadOnly)
            defer { changes.close() }
            let result = try body(changes)
            appender = changes.appender
            return result
        }
    }
}
