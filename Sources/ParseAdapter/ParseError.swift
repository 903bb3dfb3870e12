public import EventSync
import EventStore
import HTTPTransport

/// Why talking to a Parse Server failed: what kind of failure it is for the
/// sync (`syncCode`), a one-line message, and Parse's error code (`{code, error}`)
/// or the HTTP status when the server gave one.
public struct ParseError: RemoteError, Sendable {
    public let syncCode: SyncError.Code
    public let message: String
    /// Parse's error code (101 object not found, 119 forbidden, 137 duplicate, 209 invalid session…).
    public let code: Int?
    /// A write request failed after it may have reached the server: what it did must be read, not assumed.
    let mayHaveApplied: Bool
    /// The answer was larger than evsync accepts (`HTTPClient.maximumResponseBytes`): a pull asks for less.
    private(set) var isTooLarge = false

    init(_ syncCode: SyncError.Code, _ message: String, code: Int? = nil, mayHaveApplied: Bool = false) {
        self.syncCode = syncCode
        self.message = message
        self.code = code
        self.mayHaveApplied = mayHaveApplied
    }

    public var description: String { message }

    /// Parse's error codes that matter to a sync (parse-server's `Parse.Error`).
    enum Code {
        static let objectNotFound = 101
        static let invalidKeyName = 105
        static let operationForbidden = 119
        static let requestLimitExceeded = 155
        static let duplicateValue = 137
        static let invalidSessionToken = 209
    }

    /// The sync failure a Parse error code means when it is not one write's alone.
    static func failure(code: Int, message: String, doing what: String) -> ParseError {
        switch code {
        case Code.invalidSessionToken:
            ParseError(.unauthorized, "the server refused the session token while \(what) (Parse error 209: \(message))", code: code)
        case Code.operationForbidden:
            ParseError(.unauthorized, "the server forbids \(what) (Parse error 119: \(message)); create the class on the server, "
                + "or let clients create classes", code: code)
        default:
            ParseError(.server, "the server failed \(what): Parse error \(code): \(message)", code: code)
        }
    }

    /// A request the retrying client gave up on; a batch that may have been applied says so, for the push to read again.
    init(_ failure: HTTPFailure) {
        let code = failure.response.flatMap { Self.answer(in: $0).code }
        switch failure.kind {
        case .permanent:
            self.init(.server, failure.description)
            isTooLarge = failure.isTooLarge
        case .mayHaveApplied: self.init(.unavailable, failure.description, code: code, mayHaveApplied: true)
        case .nothingThere, .gaveUp, .interrupted: self.init(.unavailable, failure.description, code: code)
        }
    }

    /// Parse's `{code, error}` in an answer, when it has them.
    /// Whether an error answer is Parse Server's `{"code"?, "error"}` (Kinto's has an `errno` and a `message` too).
    static func isParseAnswer(_ response: HTTPResponse) -> Bool {
        guard let body = (try? JSONParser.parse(response.body))?.objectValue else { return false }
        return body["error"] != nil && body["errno"] == nil && body["message"] == nil
    }

    static func answer(in response: HTTPResponse) -> (code: Int?, message: String?) {
        let body = (try? JSONParser.parse(response.body))?.objectValue
        return (body?["code"]?.int64Value.map(Int.init), body?["error"]?.stringValue)
    }
}
