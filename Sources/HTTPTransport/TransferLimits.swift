/// How long a transfer may stall and how large an answer may be. The documented numbers unless the program sets
/// others: the library reads nothing from its surroundings, and only the CLI's debug builds let tests shrink them
/// (`EVSYNC_SLOW_TIME`, `EVSYNC_MAX_RESPONSE`) so that a trickling or oversized server is caught in seconds.
public struct TransferLimits: Sendable, Equatable {
    /// Seconds a transfer may stay below 1 KiB a second before it is abandoned.
    public var slowTime = 30
    /// The largest response body accepted, in bytes: a larger one is refused (a pull then asks for less).
    public var maximumResponseBytes = 256 << 20

    public init() {}
}
