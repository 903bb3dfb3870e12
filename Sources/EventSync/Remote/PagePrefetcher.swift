import Foundation

/// Fetches and parses the next page on a worker thread while the caller
/// writes the current one, so a pull costs about the network's time, not the
/// network's time plus the store's.
///
/// The worker owns the page source for its whole life; `run` does not return
/// before the worker has stopped, so the caller may use the same HTTP client
/// again afterwards. At most `depth` parsed pages wait in memory.
final class PagePrefetcher: @unchecked Sendable {
    // Mutable state is only touched under `condition`.
    private let condition = NSCondition()
    private var queue: [Result<[RemoteRecord], any Error>] = []
    private var finished = false
    private var cancelled = false
    private var workerDone = false
    private let depth: Int

    init(depth: Int = 2) {
        self.depth = depth
    }

    /// Runs `fetch` on a worker thread: it is called repeatedly and returns
    /// the next page and whether more follow, until it says there are no more,
    /// throws, or the consumer stops. `consume` runs on the calling thread for
    /// each page, in order, and returns false to stop early.
    func run(fetch: @escaping () throws -> (records: [RemoteRecord], more: Bool),
             consume: ([RemoteRecord]) throws -> Bool) throws {
        // The worker is the only user of `fetch`'s captures while it runs; see `waitForWorker`.
        let box = UncheckedSendable(fetch)
        let worker = Thread { [self] in
            defer { condition.withLock { workerDone = true; condition.broadcast() } }
            while true {
                let result = Result { try box.value() }
                let more = (try? result.get().more) ?? false
                let accepted: Bool = condition.withLock {
                    while queue.count >= depth, !cancelled { condition.wait() }
                    if cancelled { return false }
                    queue.append(result.map(\.records))
                    if !more { finished = true }
                    condition.broadcast()
                    return true
                }
                if !accepted || !more { return }
            }
        }
        worker.start()
        defer { stopAndWaitForWorker() }
        while let page = try next() {
            guard try consume(page) else { return }
        }
    }

    private func next() throws -> [RemoteRecord]? {
        let item: Result<[RemoteRecord], any Error>? = condition.withLock {
            while queue.isEmpty, !finished, !workerDone { condition.wait() }
            guard !queue.isEmpty else { return nil }
            let item = queue.removeFirst()
            condition.broadcast()
            return item
        }
        return try item?.get()
    }

    private func stopAndWaitForWorker() {
        condition.withLock {
            cancelled = true
            condition.broadcast()
            while !workerDone { condition.wait() }
        }
    }
}

/// Hands a non-Sendable value to exactly one other thread, by contract of the caller.
struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
