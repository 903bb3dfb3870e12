import Foundation
import Synchronization

/// Runs async work from a command, which is synchronous, and waits for it:
/// this thread blocks (it is the main thread, not one of the concurrency
/// pool's), the work runs in a task on the pool. Returns or throws as the work does.
func runBlocking(_ body: @escaping @Sendable () async throws -> Void) throws {
    let outcome = Mutex<Result<Void, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        let result = await Result { try await body() }
        outcome.withLock { $0 = result }
        done.signal()
    }
    done.wait()
    try outcome.withLock { $0 }?.get()
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
