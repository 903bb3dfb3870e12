public import EventStore
public import EventSync
import Foundation
import Synchronization

/// Wraps a remote to act between the phases of one sync: `beforePush` runs
/// when the engine first asks for the batch size (after the pull, before the
/// first batch), `failAfterPush` makes every push fail after the server has
/// applied it (a sync that dies before logging the acknowledgements).
/// `onPage` runs before each pulled page (numbered from 1 in the sync) is
/// handed to the engine, `afterPush` after each batch (likewise) is applied.
public final class HookedRemote: SyncRemote {
    public let inner: any SyncRemote
    private var beforePush: (@Sendable () throws -> Void)?
    private let failAfterPush: Bool
    private let onPage: (@Sendable (Int) -> Void)?
    private let afterPush: (@Sendable (Int) -> Void)?
    private var pages = 0
    private var batches = 0

    public init(_ inner: any SyncRemote, beforePush: (@Sendable () throws -> Void)? = nil, failAfterPush: Bool = false,
         onPage: (@Sendable (Int) -> Void)? = nil, afterPush: (@Sendable (Int) -> Void)? = nil) {
        self.inner = inner
        self.beforePush = beforePush
        self.failAfterPush = failAfterPush
        self.onPage = onPage
        self.afterPush = afterPush
    }

    public var address: String { inner.address }

    public func batchLimit() throws -> Int {
        if let hook = beforePush {
            beforePush = nil
            do { try hook() } catch { throw SyncError(.failure, "test hook failed: \(error)") }
        }
        return try inner.batchLimit()
    }

    public func prepare(_ entities: [(schema: EntitySchema, since: RemoteCursor?)]) throws {
        try inner.prepare(entities)
    }

    // Kinto's order of versions: a pull reading the server's history relies on it to pass over
    // the versions the log already has newer than (Kinto's own pushes among them).
    public func isVersion(_ version: RemoteVersion, olderThan other: RemoteVersion) -> Bool {
        inner.isVersion(version, olderThan: other)
    }

    public var knowsAuthors: Bool? { inner.knowsAuthors }

    public func pullFloor(of cursor: RemoteCursor) -> RemoteVersion? { inner.pullFloor(of: cursor) }

    public func changes(of entity: EntitySchema, since: RemoteCursor?, onPage: (RemotePage) throws -> Bool) throws {
        try inner.changes(of: entity, since: since) { page in
            pages += 1
            self.onPage?(pages)
            return try onPage(page)
        }
    }

    public func push(_ operations: [RemoteOperation], of entity: EntitySchema) throws -> [RemoteOutcome] {
        let outcomes = try inner.push(operations, of: entity)
        if failAfterPush { throw SyncError(.unavailable, "simulated crash after the server applied the batch") }
        batches += 1
        afterPush?(batches)
        return outcomes
    }
}

/// Cancels a sync's task from a remote hook, on the engine's sync thread:
/// `set` hands it the task, and `cancel` waits for that (the sync may reach
/// the hook before `Task { … }` has returned the handle).
public final class TaskCanceller: Sendable {
    private let task = Mutex<Task<SyncReport, any Error>?>(nil)
    private let ready = DispatchSemaphore(value: 0)

    public init() {}

    public func set(_ task: Task<SyncReport, any Error>) {
        self.task.withLock { $0 = task }
        ready.signal()
    }

    public func cancel() {
        ready.wait()
        ready.signal()
        task.withLock { $0 }?.cancel()
    }
}

/// Runs blocking work on a thread of its own and waits for it without blocking.
///
/// `SyncEngine.sync()` runs the blocking sync on `DispatchQueue.global()`.
/// With many syncs at once on a 2-core Linux machine (and test hooks that
/// block those threads while `curl` runs), that pool's few threads are all
/// blocked and it grows slowly: the suite's syncs ran one at a time, about a
/// second apart. A thread per sync keeps the tests' syncs independent.
public func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            continuation.resume(with: Result { try body() })
        }
        thread.stackSize = 4 << 20
        thread.start()
    }
}

/// Runs async work to completion from synchronous code that is not on the
/// concurrency pool (the engine's sync thread, in a remote hook).
public func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let outcome = BlockingOutcome<T>()
    let done = DispatchSemaphore(value: 0)
    Task {
        do {
            let value = try await body()
            outcome.value.withLock { $0 = .success(value) }
        } catch {
            outcome.value.withLock { $0 = .failure(error) }
        }
        done.signal()
    }
    done.wait()
    return try outcome.value.withLock { $0! }.get()
}

private final class BlockingOutcome<T: Sendable>: Sendable {
    let value = Mutex<Result<T, any Error>?>(nil)
}
