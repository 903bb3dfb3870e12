public import EventSync
import HTTPTransport

/// Why talking to a CalDAV or CardDAV server failed: what kind of failure it is for the sync, in one line.
public struct DAVError: RemoteError, Sendable {
    public let syncCode: SyncError.Code
    public let message: String
    /// The server's HTTP status, when the failure is an answer of the server's.
    public let status: Int?

    init(_ code: SyncError.Code, _ message: String, status: Int? = nil) {
        self.syncCode = code
        self.message = message
        self.status = status
    }

    init(_ failure: HTTPFailure) {
        self.init(failure.kind == .permanent ? .server : .unavailable, failure.description, status: failure.response?.status)
    }

    public var description: String { message }
}
