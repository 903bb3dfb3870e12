import CLMDB
import Dispatch
import Synchronization

/// Writes from many threads and tasks, committed and flushed together (group commit).
///
/// A write is queued as a `Job`. If no commit is being led, the writer leads: it takes every queued job and
/// runs each in a transaction nested in one parent (one job alone runs in the parent itself), commits the
/// parent, hands the lead on to whoever queued meanwhile, and only then flushes. So the next group commits
/// while this one's flush runs, and writers queued during a commit share the next one's flush. Each job is
/// still all or nothing on its own: a nested transaction that fails is discarded alone, and only a failed
/// commit or flush fails the whole group. A job is told it succeeded only after the flush that makes it
/// durable (when it asked for durability).
///
/// A synchronous writer (`Environment.groupWrite`) that finds nobody leading leads one group on its own thread;
/// the lead is then handed to the writer queue, `queue`, a thread of Dispatch's (never the cooperative pool),
/// which is also where an awaited write (`Store.write`'s async overload) is led.
package final class GroupCommit: Sendable {
    /// One write.
    package struct Job: Sendable {
        /// Runs the write in a transaction (nested, or the whole one); false if it failed, when its
        /// transaction must be discarded. It keeps its own result.
        package let run: @Sendable (Transaction) -> Bool
        /// Called once, after the commit: with nil when the write is durable (or failed on its own),
        /// or with the error that kept the transaction from being committed or flushed.
        package let finish: @Sendable ((any Error)?) -> Void
        /// Whether the commit must be on disk before `finish` (`Store.Durability.full`).
        package let durable: Bool

        package init(run: @escaping @Sendable (Transaction) -> Bool, finish: @escaping @Sendable ((any Error)?) -> Void, durable: Bool) {
            (self.run, self.finish, self.durable) = (run, finish, durable)
        }
    }

    /// Where awaited writes are led. Concurrent: one leader at a time takes jobs (`State.leading`), but the next
    /// leader commits while the one before it flushes, as a synchronous leader's successor does.
    let queue = DispatchQueue(label: "evsync.store.writer", qos: .userInitiated, attributes: .concurrent)

    private struct State {
        var jobs: [Job] = []
        /// Whether a writer leads: takes the queued jobs, or will.
        var leading = false
    }

    private let state = Mutex(State())

    /// Queues `job`; returns whether the caller is to lead, since nobody does.
    fileprivate func enqueue(_ job: Job) -> Bool {
        state.withLock { state in
            state.jobs.append(job)
            guard !state.leading else { return false }
            state.leading = true
            return true
        }
    }

    /// Queues `job` and returns at once; `environment`'s writer queue leads if nobody does.
    package func submit(_ job: Job, to environment: Environment) {
        if enqueue(job) { queue.async { environment.leadGroup() } }
    }

    /// How many writes wait for the next commit (for tests).
    package var queuedCount: Int { state.withLock { $0.jobs.count } }

    /// Takes every queued job; none, and the lead is given up, when nothing is queued.
    fileprivate func take() -> [Job] {
        state.withLock { state in
            if state.jobs.isEmpty { state.leading = false }
            defer { state.jobs = [] }
            return state.jobs
        }
    }

    /// After a group's commit: the lead goes to `queue` if jobs were queued meanwhile, else it is given up.
    fileprivate func handOff(in environment: Environment) {
        let more = state.withLock { state in
            if state.jobs.isEmpty { state.leading = false }
            return !state.jobs.isEmpty
        }
        if more { queue.async { environment.leadGroup() } }
    }
}

/// Thrown inside a write transaction to abort it for a job that failed on its own.
private struct JobFailed: Error {}

/// A synchronous write's closure and outcome, handed to whichever thread leads its group. The writer's
/// thread waits on `done` from `enqueue` until `finish`, so the closure and the result are never used by
/// two threads at once, and the semaphore orders the leader's writes before the writer's reads.
private final class SynchronousWrite<T>: @unchecked Sendable {
    /// Let go before the writer is woken: the writer's closure must not outlive its call (`withoutActuallyEscaping`).
    var body: ((Transaction) throws -> T)?
    var outcome: Result<T, any Error>?
    var commitError: (any Error)?
    let done = DispatchSemaphore(value: 0)

    init(_ body: @escaping (Transaction) throws -> T) { self.body = body }
}

extension Environment {
    /// `write(durable:)`, committed with whatever other writes are queued at the time: the call returns once its
    /// own change is committed (and durable, if asked), and throws what its own `body` threw, or the commit's error.
    ///
    /// `body` may run on another writer's thread, while this one waits.
    package func groupWrite<T>(durable: Bool, _ body: (Transaction) throws -> T) throws -> T {
        if isWritingOnThisThread {
            throw StorageError.misuse("a store write was started inside another on the same thread: use the transaction at hand")
        }
        return try withoutActuallyEscaping(body) { body in
            let write = SynchronousWrite(body)
            let job = GroupCommit.Job(run: { transaction in
                guard let body = write.body else { return false }
                write.outcome = Result { try body(transaction) }
                if case .success = write.outcome { return true }
                return false
            }, finish: { error in
                write.commitError = error
                write.body = nil
                write.done.signal()
            }, durable: durable)
            if groupCommit.enqueue(job) { leadGroup() }
            write.done.wait()
            if let error = write.commitError { throw error }
            guard let outcome = write.outcome else { throw StorageError.misuse("a write was never run") }
            return try outcome.get()
        }
    }

    /// Commits the queued jobs as one group (one by one with `MDB_WRITEMAP`, where LMDB nests no transactions),
    /// hands the lead on, flushes, and tells each job how it went.
    fileprivate func leadGroup() {
        let jobs = groupCommit.take()
        guard !jobs.isEmpty else { return }
        var failures = [(any Error)?](repeating: nil, count: jobs.count)
        func commitEach() {
            for (index, job) in jobs.enumerated() {
                do {
                    try commit { transaction in if !job.run(transaction) { throw JobFailed() } }
                } catch is JobFailed {
                } catch {
                    failures[index] = error
                }
            }
        }
        if writesInPlace || jobs.count == 1 {
            commitEach()
        } else {
            do {
                try commit { parent in
                    for job in jobs {
                        let nested = try Transaction(environment: handle, readOnly: false, parent: parent)
                        if job.run(nested) { try nested.commit() } else { nested.discard() }
                    }
                }
            } catch {
                failures = failures.map { _ in error }
            }
        }
        groupCommit.handOff(in: self)
        if jobs.indices.contains(where: { failures[$0] == nil && jobs[$0].durable }) {
            do {
                try flush()
            } catch {
                failures = failures.map { $0 ?? error }
            }
        }
        if failures.contains(where: { $0 == nil }) { commits.notify() }
        for (job, failure) in zip(jobs, failures) { job.finish(failure) }
    }
}
