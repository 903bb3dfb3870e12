// `Credentials` and `RetryPolicy` are part of KintoRemote's API; they moved to
// HTTPTransport to be shared with ParseAdapter, and stay visible to every
// `import KintoAdapter` as before. `HTTPRemoteSettings` and `HTTPRemoteError`
// (RemoteHTTP) are every HTTP adapter's API.
@_exported public import HTTPTransport
@_exported public import RemoteHTTP
