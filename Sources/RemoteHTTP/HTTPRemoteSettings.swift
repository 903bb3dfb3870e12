public import EventSync
public import HTTPTransport

/// What a program sets on a remote that speaks HTTP, whichever its protocol: one value that every adapter
/// (`KintoRemote`, `ParseRemote`, `DAVRemote`) takes as its `settings`, rather than four properties each.
///
/// ```swift
/// var settings = HTTPRemoteSettings()
/// settings.retry.attempts = 3
/// settings.onActivity = { print($0) }
/// remote.settings = settings
/// ```
public struct HTTPRemoteSettings {
    /// How long a transfer may stall and how large an answer may be (the documented numbers unless set).
    public var transferLimits = TransferLimits()
    /// How often and how long to wait before a failed request is sent again.
    public var retry = RetryPolicy()
    /// Told of each request and each retry, for a user watching (`sync -v`, a terminal).
    public var onActivity: ((RemoteActivity) -> Void)?
    /// Asked before each retry and while waiting for one: true gives up at once (Ctrl-C), with the failure at hand.
    public var shouldStop: () -> Bool = { false }

    public init(transferLimits: TransferLimits = TransferLimits(), retry: RetryPolicy = RetryPolicy(),
                onActivity: ((RemoteActivity) -> Void)? = nil, shouldStop: @escaping () -> Bool = { false }) {
        (self.transferLimits, self.retry, self.onActivity, self.shouldStop) = (transferLimits, retry, onActivity, shouldStop)
    }
}

extension RetryingClient {
    /// Takes the settings an adapter was given: the one place they reach the retry loop and the HTTP client.
    package func apply(_ settings: HTTPRemoteSettings) {
        client.limits = settings.transferLimits
        retry = settings.retry
        shouldStop = settings.shouldStop
        onActivity = settings.onActivity.map { show in { show($0.map(request: RemoteActivity.request, retrying: RemoteActivity.retrying)) } }
    }
}
