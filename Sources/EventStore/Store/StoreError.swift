/// An error from the store's public API, with the kind of failure a caller
/// (the CLI's exit code, an app's alert) needs to tell apart.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable {
        /// The input breaks a rule: bad JSON, a schema violation, an unknown field or entity, a bad id.
        case invalidData
        /// The store, a file or a record does not exist.
        case notFound
        /// The store is damaged or from a newer evsync.
        case corrupt
        /// Anything else (I/O, LMDB).
        case failure
    }

    public let code: Code
    public let message: String
    public var description: String { message }

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// Wraps errors from lower layers into the store's error type, keeping their messages.
    package static func wrap(_ error: any Error) -> StoreError {
        switch error {
        case let error as StoreError: error
        case let error as SchemaError: StoreError(.invalidData, error.description)
        case let error as JSONParseError: StoreError(.invalidData, error.description)
        case let error as EventDecodingError: StoreError(.corrupt, error.description)
        case let error as StorageError: StoreError(.failure, error.description)
        default: StoreError(.failure, "\(error)")
        }
    }
}
