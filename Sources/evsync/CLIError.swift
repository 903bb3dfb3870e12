import EventStore
import EventSync
import KintoAdapter

/// A failure the CLI reports as one line on stderr and an exit code.
struct CLIError: Error {
    /// The documented exit codes (from sysexits.h).
    enum Code: Int32 {
        case failure = 1
        case usage = 64
        case dataError = 65
        case noInput = 66
        case unavailable = 69
        case tempFail = 75
        case noPermission = 77
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
            let code: Code = switch error.code {
            case .invalidData: .dataError
            case .notFound: .noInput
            case .corrupt, .failure, .mapFull, .diskFull, .readOnly: .failure
            }
            self.init(code, error.message)
        case let error as SchemaError:
            self.init(.dataError, error.description)
        case let error as SyncError:
            self.init(Self.code(for: error.code), error.message)
        case let error as any RemoteError:
            self.init(Self.code(for: error.syncCode), error.description)
        default:
            self.init(.failure, "\(error)")
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
