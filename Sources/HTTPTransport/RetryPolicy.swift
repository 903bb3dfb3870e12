import Foundation

/// When and how long to wait before trying a request again.
///
/// Network errors, 5xx and 429 are retried with exponential backoff and
/// full jitter; a `Retry-After` from the server is a lower bound on the wait.
public struct RetryPolicy: Sendable {
    /// Attempts in all, the first included.
    public var attempts: Int
    /// The first backoff, in seconds; it doubles each time.
    public var baseDelay: Double
    /// No single wait is longer than this many seconds.
    public var maximumDelay: Double

    public init(attempts: Int = 5, baseDelay: Double = 0.5, maximumDelay: Double = 30) {
        self.attempts = max(1, attempts)
        self.baseDelay = baseDelay
        self.maximumDelay = maximumDelay
    }

    /// Seconds to wait before attempt `attempt + 1` (attempt counts from 1).
    package func delay(after attempt: Int, retryAfter: Double?) -> Double {
        let exponential = min(maximumDelay, baseDelay * pow(2, Double(attempt - 1)))
        let jittered = exponential * Double.random(in: 0.5...1.0)
        return min(maximumDelay, max(jittered, retryAfter ?? 0))
    }

    package static func isRetryable(status: Int) -> Bool {
        status == 429 || status >= 500
    }
}
