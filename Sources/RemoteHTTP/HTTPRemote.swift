public import EventSync
public import HTTPTransport

/// A `SyncRemote` that speaks HTTP through the retrying client: its settings are one value (`HTTPRemoteSettings`),
/// and it fails with one error type (`HTTPRemoteError`), whichever its protocol.
public protocol HTTPRemote: SyncRemote {
    var settings: HTTPRemoteSettings { get set }
}

// The four properties each adapter had before `settings`, kept for programs written against them.
extension HTTPRemote {
    @available(*, deprecated, message: "use settings.transferLimits")
    public var transferLimits: TransferLimits {
        get { settings.transferLimits }
        set { settings.transferLimits = newValue }
    }

    @available(*, deprecated, message: "use settings.retry")
    public var retry: RetryPolicy {
        get { settings.retry }
        set { settings.retry = newValue }
    }

    @available(*, deprecated, message: "use settings.onActivity")
    public var onActivity: ((RemoteActivity) -> Void)? {
        get { settings.onActivity }
        set { settings.onActivity = newValue }
    }

    @available(*, deprecated, message: "use settings.shouldStop")
    public var shouldStop: () -> Bool {
        get { settings.shouldStop }
        set { settings.shouldStop = newValue }
    }
}
