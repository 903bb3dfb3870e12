public import EventSync
package import HTTPTransport

/// Why talking to a server over HTTP failed, for every adapter alike (Kinto, Parse, CalDAV/CardDAV): what kind of
/// failure it is for the sync (`syncCode`), a one-line message in the protocol's words, the HTTP status when the
/// server answered one, and the protocol's own error code when its answer had one (Parse's `code`).
///
/// How a failure is worded is each adapter's (its `send`); what it carries is the same everywhere, so that a
/// program reads the status of a Kinto failure as it reads a DAV one.
public struct HTTPRemoteError: RemoteError, Sendable {
    public let syncCode: SyncError.Code
    public let message: String
    /// The server's HTTP status, when the failure is an answer of the server's.
    public let status: Int?
    /// The protocol's error code in the answer, where it has them (Parse's 101 object not found, 209 invalid
    /// session…); nil for a protocol that has none, or an answer without one.
    public let code: Int?
    /// The answer was larger than evsync accepts (the HTTP client's response cap, DAV's XML bound): a pull asks for less.
    package let isTooLarge: Bool
    /// An answer that is no readable XML (DAV): a smaller request (fewer items) may pass.
    package let isUnreadable: Bool
    /// A refusal of one item's, not the server's (a DAV href outside the collection): the others go on.
    package let concernsOneItem: Bool
    /// A write request failed after it may have reached the server: what it did must be read, not assumed.
    package let mayHaveApplied: Bool
    /// The server no longer lets this account read the entity's place (`RemoteError.deniesAccess`).
    public let deniesAccess: Bool

    package init(_ syncCode: SyncError.Code, _ message: String, status: Int? = nil, code: Int? = nil, isTooLarge: Bool = false,
                 isUnreadable: Bool = false, concernsOneItem: Bool = false, mayHaveApplied: Bool = false, deniesAccess: Bool = false) {
        (self.syncCode, self.message, self.status, self.code) = (syncCode, message, status, code)
        (self.isTooLarge, self.isUnreadable, self.concernsOneItem, self.mayHaveApplied) = (isTooLarge, isUnreadable, concernsOneItem, mayHaveApplied)
        self.deniesAccess = deniesAccess
    }

    /// A request the retrying client gave up on: one that would fail again is the server's failure (exit 69 either
    /// way), any other is the server unavailable; the last answer's status, and `code` read from it by the adapter.
    package init(_ failure: HTTPFailure, code: Int? = nil) {
        self.init(failure.kind == .permanent ? .server : .unavailable, failure.description, status: failure.response?.status, code: code,
                  isTooLarge: failure.isTooLarge, mayHaveApplied: failure.kind == .mayHaveApplied)
    }

    public var description: String { message }
}
