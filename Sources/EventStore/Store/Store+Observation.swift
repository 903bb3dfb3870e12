import Foundation

extension Store {
    /// The newest event's `seq`, each time the log grows, whoever appends
    /// (this process or another). Starts with the current value.
    ///
    /// Built on polling a read snapshot, which never blocks writers: LMDB
    /// has no cross-process notification, and a read of the last key costs
    /// microseconds.
    public func logChanges(every interval: Duration = .milliseconds(200)) -> AsyncThrowingStream<UInt64, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                var last: UInt64?
                do {
                    while !Task.isCancelled {
                        let seq = try lastSeq()
                        if seq != last {
                            last = seq
                            continuation.yield(seq)
                        }
                        try await Task.sleep(for: interval)
                    }
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

    /// The records of an entity, now and again after every change to the log:
    /// the view a table shows, kept current.
    public func observeRecords(_ entity: String, every interval: Duration = .milliseconds(200)) -> AsyncThrowingStream<[Record], any Error> {
        let changes = logChanges(every: interval)
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    var previous: [Record]?
                    for try await _ in changes {
                        let records = try records(entity)
                        if records != previous {
                            previous = records
                            continuation.yield(records)
                        }
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
