import EventStore
import EventSync
import HTTPTransport
import RemoteHTTP

/// What Parse Server says in an error answer (`{code, error}`), and how evsync words it.
enum ParseAnswer {
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
    static func failure(code: Int, message: String, doing what: String) -> HTTPRemoteError {
        switch code {
        case Code.invalidSessionToken:
            HTTPRemoteError(.unauthorized, "the server refused the session token while \(what) (Parse error 209: \(message))", code: code)
        case Code.operationForbidden:
            HTTPRemoteError(.unauthorized, "the server forbids \(what) (Parse error 119: \(message)); create the class on the server, "
                + "or let clients create classes", code: code)
        default:
            HTTPRemoteError(.server, "the server failed \(what): Parse error \(code): \(message)", code: code)
        }
    }

    /// A request the retrying client gave up on, with Parse's code from its last answer; a batch that may have been
    /// applied says so (`mayHaveApplied`), for the push to read again.
    static func failure(_ failure: HTTPFailure) -> HTTPRemoteError {
        HTTPRemoteError(failure, code: failure.response.flatMap { read($0).code })
    }

    /// Whether an error answer is Parse Server's `{"code"?, "error"}` (Kinto's has an `errno` and a `message` too).
    static func isParse(_ response: HTTPResponse) -> Bool {
        guard let body = (try? JSONParser.parse(response.body))?.objectValue else { return false }
        return body["error"] != nil && body["errno"] == nil && body["message"] == nil
    }

    /// Parse's `{code, error}` in an answer, when it has them.
    static func read(_ response: HTTPResponse) -> (code: Int?, message: String?) {
        let body = (try? JSONParser.parse(response.body))?.objectValue
        return (body?["code"]?.int64Value.map(Int.init), body?["error"]?.stringValue)
    }
}
