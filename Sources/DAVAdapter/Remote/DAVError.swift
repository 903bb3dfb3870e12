public import EventSync
import HTTPTransport

/// Why talking to a CalDAV or CardDAV server failed: what kind of failure it is for the sync, in one line.
public struct DAVError: RemoteError, Sendable {
    public let syncCode: SyncError.Code
    public let message: String
    /// The server's HTTP status, when the failure is an answer of the server's.
    public let status: Int?
    /// An answer over a size bound (the XML reader's, the HTTP client's): a smaller request may pass.
    let isTooLarge: Bool
    /// An answer that is no readable XML: a smaller request (fewer items) may pass.
    let isUnreadable: Bool
    /// A refusal of one item's, not the server's (an href outside the collection): the others go on.
    let concernsOneItem: Bool

    init(_ code: SyncError.Code, _ message: String, status: Int? = nil, isTooLarge: Bool = false, isUnreadable: Bool = false,
         concernsOneItem: Bool = false) {
        self.syncCode = code
        self.message = message
        self.status = status
        self.isTooLarge = isTooLarge
        self.isUnreadable = isUnreadable
        self.concernsOneItem = concernsOneItem
    }

    init(_ failure: HTTPFailure) {
        self.init(failure.kind == .permanent ? .server : .unavailable, failure.description, status: failure.response?.status,
                  isTooLarge: failure.isTooLarge)
    }

    /// An answer of the server's about one item that the next request would not share: a 4xx other than a refusal of
    /// the credentials (401) or a request to slow down (429), which concern every request; or `concernsOneItem`.
    var refusesOnlyThisItem: Bool {
        if concernsOneItem { return true }
        guard let status else { return false }
        return (400..<500).contains(status) && status != 401 && status != 429
    }

    public var description: String { message }
}
