import EventStore

/// Why a sync failed.
public struct SyncError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable {
        /// Another sync of this store is running.
        case busy
        /// The server cannot be reached, or keeps failing (network errors, 5xx, 429), after retries.
        case unavailable
        /// The server refused the credentials.
        case unauthorized
        /// The server answered something evsync cannot use.
        case server
        /// No remote, or one that is not a usable URL.
        case invalidRemote
        /// An entity the remote cannot hold (a reserved field name, a name it cannot use).
        case invalidData
        /// Anything else (the local store).
        case failure
    }

    public let code: Code
    public let message: String
    /// What the sync had done before it failed: every page and batch counted here is committed.
    public var partialReport: SyncReport?
    /// The error behind this one: the remote's own (with its HTTP status) or the store's (with its LMDB code).
    public var cause: (any Error & Sendable)?
    public var description: String { message }

    public init(_ code: Code, _ message: String, cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    /// Any error met during a sync, as a `SyncError` that keeps it as its cause.
    static func from(_ error: any Error) -> SyncError {
        switch error {
        case let error as SyncError: error
        case let error as StoreError: SyncError(.failure, error.message, cause: error)
        case let error as any RemoteError & Sendable: SyncError(error.syncCode, error.description, cause: error)
        default: SyncError(.failure, StoreError.wrap(error).message)
        }
    }
}
