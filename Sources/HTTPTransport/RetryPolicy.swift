import Foundation

/// When and how long to wait before trying a request again.
///
/// Network errors, 5xx and 429 are retried with exponential backoff and
/// full jitter; a `Retry-After` from the server is a lower bound on the wait,
/// with a random share of it on top. Kinto on PostgreSQL at SERIALIZABLE
/// answers every request that lost a race `503` with the same `Retry-After`:
/// clients that all waited exactly that long would come back together and
/// collide again, so each waits between 1× and 1.5× of it.
///
/// The default budget, 8 attempts (about a minute of waiting at most), lets 20
/// clients writing into one collection through such a server all finish: each
/// round of collisions lets one of them through, and the growing, spread-out
/// waits thin the rest (with 5 attempts and no spread, 7–10 of 20 gave up).
public struct RetryPolicy: Sendable {
    /// Attempts in all, the first included.
    public var attempts: Int
    /// The first backoff, in seconds; it doubles each time.
    public var baseDelay: Double
    /// No backoff is longer than this many seconds (a `Retry-After` is capped there too, before its spread).
    public var maximumDelay: Double

    public init(attempts: Int = 8, baseDelay: Double = 0.5, maximumDelay: Double = 30) {
        self.attempts = max(1, attempts)
        self.baseDelay = baseDelay
        self.maximumDelay = maximumDelay
    }

    /// Seconds to wait before attempt `attempt + 1` (attempt counts from 1).
    package func delay(after attempt: Int, retryAfter: Double?, random: (ClosedRange<Double>) -> Double = { .random(in: $0) }) -> Double {
        let exponential = min(maximumDelay, baseDelay * pow(2, Double(attempt - 1)))
        let backoff = exponential * random(0.5...1.0)
        guard let retryAfter, retryAfter > 0 else { return backoff }
        let asked = min(maximumDelay, retryAfter)
        return max(backoff, asked * random(1.0...1.5))
    }

    /// Waits `seconds` in short slices, so that `shouldStop` (a Ctrl-C) ends the wait at once.
    /// - Returns: false when it was stopped.
    package static func wait(_ seconds: Double, unless shouldStop: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !shouldStop(), deadline > Date() { Thread.sleep(forTimeInterval: min(deadline.timeIntervalSinceNow, 0.05)) }
        return !shouldStop()
    }

    package static func isRetryable(status: Int) -> Bool {
        status == 429 || status >= 500
    }
}
