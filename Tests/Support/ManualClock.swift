import Synchronization

/// A clock that stands still until a test moves it: events get exactly the
/// times the test means, and no test waits for the real clock to tick.
///
/// ```swift
/// let clock = ManualClock(at: 1_767_225_600_000)
/// let store = try Store(directory: path, create: true, clock: clock.now)
/// clock.advance(by: 1_000)
/// ```
public final class ManualClock: Sendable {
    private let milliseconds: Mutex<Int64>

    /// - Parameter start: milliseconds since 1970 (UTC).
    public init(at start: Int64) {
        milliseconds = Mutex(start)
    }

    /// The time now, for `Store(clock:)`.
    @Sendable public func now() -> Int64 {
        milliseconds.withLock { $0 }
    }

    public func advance(by step: Int64) {
        milliseconds.withLock { $0 += step }
    }
}
