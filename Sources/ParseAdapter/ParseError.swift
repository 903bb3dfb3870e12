// `HTTPRemoteSettings` and `HTTPRemoteError` are ParseRemote's API: every `import ParseAdapter` sees them.
@_exported public import RemoteHTTP

/// Parse's failures are every HTTP adapter's error (docs/decisions/one-error-and-one-settings-for-every-http-remote.md).
@available(*, deprecated, renamed: "HTTPRemoteError", message: "the three HTTP adapters share HTTPRemoteError; Parse's error code is its `code`")
public typealias ParseError = HTTPRemoteError
