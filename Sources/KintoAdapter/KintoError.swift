public import EventSync
import HTTPTransport

/// Why talking to a Kinto server failed: what kind of failure it is for
/// the sync (`syncCode`), a one-line message, and the HTTP status when the
/// server answered one.
public struct KintoError: RemoteError, Sendable {
    public let syncCode: SyncError.Code
    public let message: String
    /// The server's HTTP status, when the failure is an answer of the server's.
    public let status: Int?
    /// The answer was larger than evsync accepts (`HTTPClient.maximumResponseBytes`): a pull asks for less.
    let isTooLarge: Bool

    init(_ code: SyncError.Code, _ message: String, status: Int? = nil, isTooLarge: Bool = false) {
        self.syncCode = code
        self.message = message
        self.status = status
        self.isTooLarge = isTooLarge
    }

    public var description: String { message }

    /// A request the retrying client gave up on: the server's failing (exit 69), or one that would fail again.
    init(_ failure: HTTPFailure) {
        self.init(failure.kind == .permanent ? .server : .unavailable, failure.description, isTooLarge: failure.isTooLarge)
    }
}
