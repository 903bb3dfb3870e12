import EventStore
import EventSync
import Foundation
import HTTPTransport
import RemoteHTTP

/// How KintoRemote sends a request and words what the server answered: the
/// retrying itself is `RetryingClient`'s, shared with every adapter.
extension KintoRemote {
    /// Sends with retries: network errors, 5xx and 429 are tried again after a backoff,
    /// and so is a response that `failsWhen` finds failed (with its reason and the wait it asks for).
    /// A body is JSON: Kinto takes nothing else.
    func send(_ request: HTTPRequest,
              failsWhen isFailure: (HTTPResponse) -> (reason: String, retryAfter: Double?)? = { _ in nil })
        throws(HTTPRemoteError) -> HTTPResponse {
        var request = request
        if request.body != nil, !request.headers.contains(where: { $0.0.lowercased() == "content-type" }) {
            request.headers.append(("Content-Type", "application/json"))
        }
        do {
            return try http.send(request) { isFailure($0).map { RetryableAnswer(reason: $0.reason, retryAfter: $0.retryAfter) } }
        } catch {
            throw HTTPRemoteError(error)
        }
    }

    /// Tells `onActivity` of a request sent on another client, and its status.
    func report(_ request: HTTPRequest, status: Int?, failure: String?) {
        http.report(request, status: status, failure: failure)
    }

    /// Creates the bucket and the collection where missing. Returns whether this created either.
    func createCollection(_ collection: KintoCollection) throws(HTTPRemoteError) -> Bool {
        var created = false
        for segments in [["buckets", collection.bucket], ["buckets", collection.bucket, "collections", collection.name]] {
            let response = try send(HTTPRequest(method: "PUT", url: url(segments), headers: [("If-None-Match", "*")],
                                                body: Array(#"{"data":{}}"#.utf8)))
            // 412: it exists already (made by someone else meanwhile).
            try expect(response, [200, 201, 412], doing: "creating \(segments.joined(separator: "/"))")
            if response.status == 201 { created = true }
        }
        return created
    }

    /// `createCollection` for a pull whose first answer was 403 or 404. Pulled before, and now neither readable nor
    /// creatable, the place is there and this account's access was withdrawn (Kinto answers 403 for a bucket that is
    /// not there as for one the account may not read: the create tells them apart); a pull never made it deletions.
    func createForPull(_ collection: KintoCollection, pulledBefore: Bool) throws(HTTPRemoteError) -> Bool {
        do {
            let created = try createCollection(collection)
            // Whoever creates a bucket or collection is its writer: what was read of its permissions is stale.
            if created { permissionsByBucket = [:] }
            return created
        } catch {
            guard error.status == 403, pulledBefore else { throw error }
            throw HTTPRemoteError(.unauthorized, "this account may no longer read \(collection.bucket)/\(collection.name) on "
                + "\(server.absoluteString) (HTTP 403): access withdrawn", status: 403, deniesAccess: true)
        }
    }

    func expect(_ response: HTTPResponse, _ statuses: Set<Int>, doing what: String) throws(HTTPRemoteError) {
        guard !statuses.contains(response.status) else { return }
        let said = Self.said(response)
        // A refusal or a missing resource from a server of another kind says nothing of the credentials or the bucket.
        if Self.refusals.contains(response.status), let answer = notKinto() {
            throw HTTPRemoteError(.server, "\(server.absoluteString) is not a Kinto server (\(answer)): the remote URL is wrong, not the credentials; "
                + "a Kinto bucket URL looks like \(exampleBucketURL)", status: response.status)
        }
        switch response.status {
        case 401:
            throw HTTPRemoteError(.unauthorized, "the server refused the credentials\(credentials.map { " of user \($0.user)" } ?? " (none given: set EVSYNC_AUTH or --auth-file)") while \(what) (HTTP 401)", status: 401)
        case 403:
            throw HTTPRemoteError(.unauthorized, "the server forbids \(what) in \(address) (\(said))", status: 403)
        case 300..<400, 404:
            // A redirect or a missing API: the URL is most likely not a bucket's on a Kinto server.
            let target = response.headers["location"].map { " to \($0)" } ?? ""
            throw HTTPRemoteError(.server, "the server failed \(what): \(said)\(target); is \(address) a Kinto bucket URL? "
                + "One looks like \(exampleBucketURL)", status: response.status)
        default:
            throw HTTPRemoteError(.server, "the server failed \(what): \(said)", status: response.status)
        }
    }

    /// The answers that blame the credentials, the permissions or the URL: a server of another kind gives them too.
    static let refusals: Set<Int> = [401, 403, 404, 405, 409]

    /// What the server root (`GET /v1/`, public on every Kinto) answered, when it is not Kinto's capabilities
    /// document; nil when it is, or when nothing answered.
    func notKinto() -> String? {
        guard let answer = ProtocolProbe.answer(HTTPRequest(method: "GET", url: url([""])), userAgent: EvsyncVersion.userAgent) else { return nil }
        let root = answer.status == 200 ? (try? JSONParser.parse(answer.body))?.objectValue : nil
        if root?["project_name"]?.stringValue?.lowercased() == "kinto" || root?["capabilities"] != nil { return nil }
        return "GET \(server.path)/ answered \(Self.said(answer))\(root == nil ? "" : ", not Kinto's capabilities")"
    }

    /// What a server said in an answer: its status and reason phrase, and Kinto's
    /// `message` when the body has one (`HTTP 404 Not Found: The requested API version is not available on this server.`).
    static func said(_ response: HTTPResponse) -> String {
        "HTTP \(response.status)" + (response.reason.isEmpty ? "" : " \(response.reason)") + (message(in: response).map { ": \($0)" } ?? "")
    }

    /// Kinto's `message` in an error answer.
    static func message(in response: HTTPResponse) -> String? {
        (try? JSONParser.parse(response.body))?.objectValue?["message"]?.stringValue
    }

    /// This remote's bucket as Kinto serves it, at `/v1` on the same host: what a mistyped URL most likely meant.
    var exampleBucketURL: String {
        var components = URLComponents(url: server, resolvingAgainstBaseURL: false) ?? URLComponents()
        components.path = "/v1/buckets/\(bucket)"
        return components.string ?? "http://127.0.0.1:8888/v1/buckets/\(bucket)"
    }

    func json(_ response: HTTPResponse, doing what: String) throws(HTTPRemoteError) -> JSONValue {
        do {
            return try JSONParser.parse(response.body)
        } catch {
            throw HTTPRemoteError(.server, "the server sent invalid JSON while \(what): \(error)")
        }
    }
}

extension HTTPClient {
    /// A client of evsync's, for requests `prepare` sends at once on their own connections.
    convenience init(server: URL, credentials: Credentials?) throws(TransportError) {
        try self.init(server: server, credentials: credentials, userAgent: EvsyncVersion.userAgent)
    }
}
