import EventStore
import EventSync
import Sealing

/// A failure the CLI reports as one line on stderr and an exit code.
struct CLIError: Error {
    /// The documented exit codes (from sysexits.h), as `--help` and the man page list them.
    enum Code: Int32, CaseIterable {
        case failure = 1
        case usage = 64
        case dataError = 65
        case noInput = 66
        case unavailable = 69
        /// The store cannot be written: read-only, its device full, or its map full (EX_CANTCREAT).
        case cannotWrite = 73
        /// The store is damaged, or was written by a newer evsync (EX_IOERR).
        case damaged = 74
        case tempFail = 75
        case noPermission = 77
        case wrongPassphrase = 78
        /// Ctrl-C stopped a sync before it was done (128 + SIGINT, as shells report it).
        case interrupted = 130

        /// A few words for `--help`.
        var summary: String {
            switch self {
            case .failure: "anything else"
            case .usage: "bad usage"
            case .dataError: "bad data"
            case .noInput: "missing file, store or record"
            case .unavailable: "server unavailable"
            case .cannotWrite: "store cannot be written (read-only, disk or map full)"
            case .damaged: "store damaged"
            case .tempFail: "sync already in progress"
            case .noPermission: "credentials refused"
            case .wrongPassphrase: "passphrase refused"
            case .interrupted: "sync interrupted"
            }
        }

        /// What it means, for the man page.
        var meaning: String {
            switch self {
            case .failure: "anything else, including rebuild-views --verify finding a difference, and verify --remote finding differences it did not repair"
            case .usage: "bad usage"
            case .dataError: "bad data: invalid JSON, a schema violation, an unknown field or entity, a bad or existing id"
            case .noInput: "a missing file, store or record"
            case .unavailable: "the server cannot be reached or keeps failing"
            case .cannotWrite: "the store cannot be written: read-only, its device full, or its map full"
            case .damaged: "the store is damaged, or was written by a newer evsync"
            case .tempFail: "a sync is already in progress"
            case .noPermission: "the server refused the credentials"
            case .wrongPassphrase: "the passphrase does not open an encrypted remote's keys (nothing was written)"
            case .interrupted: "a sync was interrupted (Ctrl-C) before it was done; what it committed stays, and the next sync finishes the job"
            }
        }
    }

    let code: Code
    let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    init(_ error: any Error) {
        switch error {
        case let error as CLIError:
            self = error
        case let error as StoreError:
            self.init(Self.code(for: error.code), error.forPeople)
        case let error as SchemaError:
            self.init(.dataError, error.description)
        case let error as SyncError:
            // A sync that failed because the store cannot be written or is damaged exits as the store's commands do.
            if let cause = error.cause as? StoreError, [.cannotWrite, .damaged].contains(Self.code(for: cause.code)) {
                self.init(Self.code(for: cause.code), cause.forPeople)
            } else if let cause = error.cause as? SealingError, cause.code == .wrongPassphrase {
                self.init(.wrongPassphrase, cause.message)
            } else {
                self.init(Self.code(for: error.code), error.message)
            }
        case let error as SealingError where error.code == .wrongPassphrase:
            self.init(.wrongPassphrase, error.message)
        case let error as any RemoteError:
            self.init(Self.code(for: error.syncCode), error.description)
        default:
            self.init(.failure, "\(error)")
        }
    }

    private static func code(for code: StoreError.Code) -> Code {
        switch code {
        case .invalidData: .dataError
        case .notFound: .noInput
        case .readOnly, .diskFull, .mapFull: .cannotWrite
        case .corrupt: .damaged
        case .failure: .failure
        }
    }

    private static func code(for code: SyncError.Code) -> Code {
        switch code {
        case .busy: .tempFail
        case .unavailable, .server: .unavailable
        case .unauthorized: .noPermission
        case .invalidRemote: .usage
        case .invalidData: .dataError
        case .failure: .failure
        }
    }
}

extension StoreError {
    /// The message with what to run about it, in the CLI's commands.
    var forPeople: String {
        switch remedy {
        case nil: message
        case .rebuildViews?: message + ": run evsync rebuild-views to replay them from the log"
        case .restoreFromBackup?: message + ": " + Self.restoreAdvice
        case .useNewerVersion?: message + ": use that evsync or a newer one"
        }
    }

    /// What a damaged log calls for, in every message that says so: `evsync help backup` says how to restore.
    static let restoreAdvice = "rebuild-views cannot help; restore it from a backup (see evsync help backup)"
}
