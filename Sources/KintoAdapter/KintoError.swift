public import RemoteHTTP

/// Kinto's failures are every HTTP adapter's error, which keeps the HTTP status (docs/decisions/one-error-and-one-settings-for-every-http-remote.md).
@available(*, deprecated, renamed: "HTTPRemoteError", message: "the three HTTP adapters share HTTPRemoteError")
public typealias KintoError = HTTPRemoteError
