// `HTTPRemoteSettings` and `HTTPRemoteError` are DAVRemote's API: every `import DAVAdapter` sees them.
@_exported public import RemoteHTTP

/// DAV's failures are every HTTP adapter's error (docs/decisions/one-error-and-one-settings-for-every-http-remote.md).
@available(*, deprecated, renamed: "HTTPRemoteError", message: "the three HTTP adapters share HTTPRemoteError")
public typealias DAVError = HTTPRemoteError

extension HTTPRemoteError {
    /// An answer of the server's about one item that the next request would not share: a 4xx other than a refusal of
    /// the credentials (401) or a request to slow down (429), which concern every request; or `concernsOneItem`.
    var refusesOnlyThisItem: Bool {
        if concernsOneItem { return true }
        guard let status else { return false }
        return (400..<500).contains(status) && status != 401 && status != 429
    }
}
