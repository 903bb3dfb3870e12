public import EventSync

/// Why a sealed sync stopped, or why one record could not be opened (then it is skipped, not thrown).
public struct SealingError: RemoteError, Sendable, Equatable {
    public enum Code: Sendable, Equatable {
        /// The passphrase does not open this remote's keys.
        case wrongPassphrase
        /// The keyring on the server cannot be read (not evsync's format, damaged, or asking for too much memory).
        case damagedKeyring
        /// This store synced sealed with this remote before, and the remote now holds no keyring: nothing is sent.
        case keyringMissing
        /// The remote's protocol cannot carry sealed records (CalDAV, CardDAV).
        case notSupported
        /// libsodium could not start or could not get memory.
        case unavailable
        /// One record could not be opened or was refused: it is skipped with this reason.
        case record
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    /// A wrong passphrase is refused before anything is read into the store or sent (docs/encryption.md).
    public var wroteNothing: Bool { code == .wrongPassphrase }

    public var syncCode: SyncError.Code {
        switch code {
        case .wrongPassphrase: .unauthorized
        case .notSupported: .invalidRemote
        default: .server
        }
    }
}
