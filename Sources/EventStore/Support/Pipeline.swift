import Foundation

/// Runs a producer on a worker thread while the calling thread consumes what
/// it produces, in order: the two halves of a job that would otherwise take
/// turns on one core (a pull fetches and parses page N+1 while page N is
/// written; an import parses and validates the next chunk while one is
/// written).
///
/// At most `depth` produced items wait in memory, and, with a `budget`, a producer whose items
/// weigh more than it waits until the consumer is done with them before producing more
/// (a pull's pages of hundreds of MiB are then fetched one at a time). `run` does not return
/// before the worker has stopped, so the caller may use what the producer
/// captured again afterwards.
package final class Pipeline<Item: Sendable>: @unchecked Sendable {
    // Mutable state is only touched under `condition`.
    private let condition = NSCondition()
    private var queue: [Result<Item, any Error>] = []
    private var finished = false
    private var cancelled = false
    private var workerDone = false
    /// The weight of the items emitted and not yet consumed (the one being consumed included).
    private var inFlight = 0
    private let depth: Int
    private let budget: Int
    private let weight: (Item) -> Int

    /// - Parameters:
    ///   - budget: the most weight (bytes) emitted and not yet consumed before `emit` waits for the consumer.
    ///   - weight: an item's weight.
    package init(depth: Int = 2, budget: Int = .max, weight: @escaping (Item) -> Int = { _ in 0 }) {
        self.depth = depth
        self.budget = budget
        self.weight = weight
    }

    /// Runs `produce` once on a worker thread; it hands each item to `emit`,
    /// which waits while `depth` items are queued and returns false once the
    /// consumer has stopped (the producer should then return). If `produce`
    /// throws, the consumer gets the error after the items emitted before it.
    /// `consume` runs on the calling thread for each item, in order, and
    /// returns false to stop early.
    package func run(produce: @escaping (_ emit: (Item) -> Bool) throws -> Void, consume: (Item) throws -> Bool) throws {
        // The worker is the only user of `produce`'s captures while it runs; see `stopAndWaitForWorker`.
        let box = UncheckedSendable(produce)
        let worker = Thread { [self] in
            defer { condition.withLock { finished = true; workerDone = true; condition.broadcast() } }
            do {
                try box.value { item in enqueue(.success(item)) }
            } catch {
                _ = enqueue(.failure(error))
            }
        }
        worker.start()
        defer { stopAndWaitForWorker() }
        while let item = try next() {
            let weight = weight(item)
            defer { condition.withLock { inFlight -= weight; condition.broadcast() } }
            guard try consume(item) else { return }
        }
    }

    private func enqueue(_ result: Result<Item, any Error>) -> Bool {
        let weight = (try? result.get()).map(weight) ?? 0
        return condition.withLock {
            while queue.count >= depth, !cancelled { condition.wait() }
            if cancelled { return false }
            queue.append(result)
            inFlight += weight
            condition.broadcast()
            // Over the budget, what the producer would make next waits until the consumer is done with enough.
            while inFlight > budget, !cancelled { condition.wait() }
            return !cancelled
        }
    }

    private func next() throws -> Item? {
        let item: Result<Item, any Error>? = condition.withLock {
            while queue.isEmpty, !finished { condition.wait() }
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
