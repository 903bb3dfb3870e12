import Dispatch
import Synchronization

/// The writes awaited through `Store.write`'s async overload, committed together.
///
/// Writes submitted while a commit is under way wait for it, then all go in
/// the next: each in a transaction nested in one parent, which is committed
/// and flushed once. So concurrent writers share the flush (about a millisecond
/// or more on real disks), and each is still all or nothing, since a nested
/// transaction that fails is discarded alone. The work runs on `queue`, a
/// thread of Dispatch's, never on the cooperative pool.
final class GroupCommit: Sendable {
    /// One write.
    struct Job: Sendable {
        /// Runs the write in a transaction (nested, or the whole one); false if it failed, when its
        /// transaction must be discarded. It keeps its own result.
        let run: @Sendable (Transaction) -> Bool
        /// Called once, after the commit: with nil when the write is durable (or failed on its own),
        /// or with the error that kept the transaction from being committed.
        let finish: @Sendable ((any Error)?) -> Void
        /// Whether the commit must be on disk before `finish` (`Store.Durability.full`).
        let durable: Bool
    }

    let queue = DispatchQueue(label: "evsync.store.writer", qos: .userInitiated)
    private let pending = Mutex<[Job]>([])

    /// Queues `job`; `environment` commits it with whatever else is queued by then.
    func submit(_ job: Job, to environment: Environment) {
        let first = pending.withLock { jobs in
            jobs.append(job)
            return jobs.count == 1
        }
        // One drain per batch: later jobs join the batch the drain will take.
        if first { queue.async { environment.commitPending() } }
    }

    /// How many writes wait for the next commit (for tests).
    var queuedCount: Int { pending.withLock { $0.count } }

    /// Takes every queued job.
    fileprivate func take() -> [Job] {
        pending.withLock { jobs in
            defer { jobs = [] }
            return jobs
        }
    }
}

/// Thrown inside a write transaction to abort it for a job that failed on its own.
private struct JobFailed: Error {}

extension Environment {
    /// Commits every queued write in one transaction (one each where nested transactions are not
    /// available: with `MDB_WRITEMAP`), then tells each how it went.
    fileprivate func commitPending() {
        let jobs = groupCommit.take()
        if writesInPlace {
            for job in jobs {
                do {
                    try write(durable: job.durable) { transaction in if !job.run(transaction) { throw JobFailed() } }
                    job.finish(nil)
                } catch is JobFailed {
                    job.finish(nil)
                } catch {
                    job.finish(error)
                }
            }
            return
        }
        guard !jobs.isEmpty else { return }
        do {
            // Flushed if any of the writes asks for it (Stores on one file may differ).
            try write(durable: jobs.contains { $0.durable }) { parent in
                for job in jobs {
                    let nested = try Transaction(environment: handle, readOnly: false, parent: parent)
                    if job.run(nested) { try nested.commit() } else { nested.discard() }
                }
            }
        } catch {
            for job in jobs { job.finish(error) }
            return
        }
        for job in jobs { job.finish(nil) }
    }
}
