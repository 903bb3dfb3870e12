package import Foundation

/// What a `RetryingClient` tells someone watching: each request and what came of it, each wait before a retry.
package enum HTTPActivity: Sendable, Equatable {
    /// `status` nil when no answer came (`failure` says why).
    case request(method: String, url: String, status: Int?, failure: String?)
    /// `failure` is tried again after `delay` seconds, as attempt `attempt` of `attempts`.
    case retrying(failure: String, delay: Double, attempt: Int, attempts: Int)

    /// The activity as a type with the same cases, from a module this one does not know (EventSync's `RemoteActivity`).
    package func map<T>(request: (String, String, Int?, String?) -> T, retrying: (String, Double, Int, Int) -> T) -> T {
        switch self {
        case let .request(method, url, status, failure): request(method, url, status, failure)
        case let .retrying(failure, delay, attempt, attempts): retrying(failure, delay, attempt, attempts)
        }
    }
}

/// An answer that an adapter finds failed, though its status does not say so, and that is safe to send again
/// (a Kinto batch rolled back, Parse's request limit): why, and the wait the server asked for.
package struct RetryableAnswer: Sendable {
    package var reason: String
    package var retryAfter: Double?

    package init(reason: String, retryAfter: Double? = nil) {
        (self.reason, self.retryAfter) = (reason, retryAfter)
    }
}

/// Why a `RetryingClient` gave up on a request; each adapter words it as its own error.
package struct HTTPFailure: Error, Sendable, CustomStringConvertible {
    package enum Kind: Sendable {
        /// No server at the address, and none has answered this client yet: a mistyped URL, not an outage.
        case nothingThere
        /// A failure that would come again (a response over the size cap, `https` to a plain server).
        case permanent
        /// A request that must not be sent twice failed after it may have reached the server.
        case mayHaveApplied
        /// Every attempt failed.
        case gaveUp
        /// `shouldStop` ended the wait for a retry.
        case interrupted
    }

    package let kind: Kind
    /// The last failure: `cannot reach …: Couldn't connect to server`, `http://… answered HTTP 503: …`.
    package let reason: String
    /// The last answer, when the last failure was one.
    package let response: HTTPResponse?
    package let attempts: Int
    /// The response outgrew the client's cap (`HTTPClient.maximumResponseBytes`): a pull asks for a smaller page.
    package var isTooLarge = false

    package init(_ kind: Kind, _ reason: String, response: HTTPResponse? = nil, attempts: Int = 1) {
        (self.kind, self.reason, self.response, self.attempts) = (kind, reason, response, attempts)
    }

    package var description: String {
        let tries = "\(attempts) attempt\(attempts == 1 ? "" : "s")"
        switch kind {
        case .gaveUp: return "\(reason) (gave up after \(tries))"
        case .interrupted: return "\(reason) (interrupted after \(tries))"
        case .nothingThere, .permanent, .mayHaveApplied: return reason
        }
    }
}

/// The one retry loop of every adapter, on one `HTTPClient`: network errors,
/// 5xx, 429 and what the adapter classifies as failed are sent again after the
/// `RetryPolicy`'s wait; every request, status and retry is told to `onActivity`.
///
/// Retries are for a server that was reachable and faltered. Until a request
/// of this client has had an HTTP answer, a refused connection or a host name
/// that does not resolve fails at once: that is a wrong address (a mistyped
/// port), and eight attempts would only make the user wait 40 s to learn it.
/// A client lives for one sync, so the next sync (a `--watch` tick) asks again.
package final class RetryingClient {
    package var retry = RetryPolicy()
    package var onActivity: ((HTTPActivity) -> Void)?
    /// Asked before each retry and while waiting for one: true gives up at once (Ctrl-C), with the failure at hand.
    package var shouldStop: () -> Bool = { false }
    /// The server's own words in an error answer (Kinto's `message`, Parse's `error`), for a failure's reason.
    package var serverMessage: (HTTPResponse) -> String? = { _ in nil }
    /// A response header asking clients to wait that many seconds before their next request (Kinto's `Backoff`).
    package var pauseHeader: String?
    /// Whether a request of this client has had an HTTP answer (also one sent on another client, `report`ed here).
    package private(set) var hasAnswered = false

    package let client: HTTPClient
    private var pauseUntil: Date?

    /// - Parameter server: the URL the user gave: requests go to its origin only (`HTTPClient`).
    package init(server: URL, credentials: Credentials?, userAgent: String) throws(TransportError) {
        client = try HTTPClient(server: server, credentials: credentials, userAgent: userAgent)
    }

    /// Sends `request` until it gets an answer that is not a failure, or gives up.
    /// - Parameters:
    ///   - resendable: false for a request that must not be sent twice once it may have reached the server
    ///     (a batch of creates where the server makes the ids): a broken connection or a 5xx then fails at once,
    ///     `mayHaveApplied`. A 429 or a `failsWhen` refusal happened before anything was done, and is retried.
    ///   - failsWhen: finds an answer failed that its status calls a success.
    package func send(_ request: HTTPRequest, resendable: Bool = true,
                      failsWhen isFailure: (HTTPResponse) -> RetryableAnswer? = { _ in nil }) throws(HTTPFailure) -> HTTPResponse {
        var attempt = 1
        while true {
            if let pauseUntil, pauseUntil > Date() {
                _ = RetryPolicy.wait(min(pauseUntil.timeIntervalSinceNow, retry.maximumDelay), unless: shouldStop)
            }
            let response: HTTPResponse
            do {
                response = try client.send(request)
            } catch {
                report(request, status: nil, failure: error.description)
                guard error.isRetryable else {
                    var failure = HTTPFailure(.permanent, error.description)
                    failure.isTooLarge = error.kind == .tooLarge
                    throw failure
                }
                if error.kind == .refused, !hasAnswered { throw HTTPFailure(.nothingThere, error.description) }
                // A refused connection carried nothing; any other failure may have come after the server read it all.
                if !resendable, error.kind != .refused { throw HTTPFailure(.mayHaveApplied, error.description) }
                try pause(after: attempt, failure: error.description)
                attempt += 1
                continue
            }
            report(request, status: response.status, failure: nil)
            if let pauseHeader, let seconds = response.headers[pauseHeader].flatMap(Double.init) {
                pauseUntil = Date().addingTimeInterval(seconds)
            }
            let failed: RetryableAnswer
            if RetryPolicy.isRetryable(status: response.status) {
                let said = serverMessage(response).map { ": \($0)" } ?? ""
                failed = RetryableAnswer(reason: "\(HTTPClient.describe(request.url)) answered HTTP \(response.status)\(said)",
                                         retryAfter: response.headers["retry-after"].flatMap(Double.init))
                if !resendable, response.status >= 500 { throw HTTPFailure(.mayHaveApplied, failed.reason, response: response) }
            } else if let answer = isFailure(response) {
                failed = answer
            } else {
                return response
            }
            try pause(after: attempt, failure: failed.reason, retryAfter: failed.retryAfter, response: response)
            attempt += 1
        }
    }

    /// The wait before attempt `attempt + 1` of something that failed with `failure`, told to `onActivity`:
    /// what `send` does between attempts, for an adapter's own retries (a whole push read again, some writes sent again).
    /// - Throws: `gaveUp` when that was the last attempt, `interrupted` when `shouldStop` ended the wait.
    package func pause(after attempt: Int, failure: String, retryAfter: Double? = nil, response: HTTPResponse? = nil) throws(HTTPFailure) {
        guard attempt < retry.attempts else { throw HTTPFailure(.gaveUp, failure, response: response, attempts: attempt) }
        let delay = retry.delay(after: attempt, retryAfter: retryAfter)
        onActivity?(.retrying(failure: failure, delay: delay, attempt: attempt + 1, attempts: retry.attempts))
        guard RetryPolicy.wait(delay, unless: shouldStop) else {
            throw HTTPFailure(.interrupted, failure, response: response, attempts: attempt)
        }
    }

    /// Tells `onActivity` of a request and its status, also one sent on another client (requests sent at once);
    /// the URL without user or password (a `Next-Page` is the server's to spell).
    package func report(_ request: HTTPRequest, status: Int?, failure: String?) {
        if status != nil { hasAnswered = true }
        guard let onActivity else { return }
        var components = URLComponents(url: request.url, resolvingAgainstBaseURL: false)
        components?.user = nil
        components?.password = nil
        onActivity(.request(method: request.method, url: components?.string ?? HTTPClient.describe(request.url), status: status, failure: failure))
    }
}
