import EventStore
import EventSync
import Foundation
import HTTPTransport
import RemoteHTTP

/// Parse's REST API over the house's retrying client: URLs built from encoded
/// segments and query items, `find` with its paging, `batch`, and the errors
/// of an answer in Parse's words.
extension ParseRemote {
    /// A path under the server's mount, each segment percent-encoded: an `objectId` comes from the server,
    /// and a `/` or `..` in one must not send a write elsewhere.
    func path(_ segments: String...) -> String {
        server.path + "/" + segments.map(Self.encodeQueryValue).joined(separator: "/")
    }

    func url(_ segments: String..., query: [URLQueryItem] = []) -> URL {
        var components = URLComponents(url: server, resolvingAgainstBaseURL: false) ?? URLComponents()
        components.percentEncodedPath += "/" + segments.map(Self.encodeQueryValue).joined(separator: "/")
        components.percentEncodedQuery = query.isEmpty ? nil : query.map { item in
            "\(item.name)=\(item.value.map(Self.encodeQueryValue) ?? "")"
        }.joined(separator: "&")
        return components.url ?? server
    }

    /// A query value or path segment percent-encoded strictly (a JSON `where` holds `+`, `&`, `=` in strings).
    static func encodeQueryValue(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~,")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }

    /// An element of a `results` array.
    struct FoundObject {
        /// The object's members; for one evsync cannot read whole, only those that say which object it is.
        var fields: JSONObject
        /// Why it could not be read whole (a key given twice, nesting deeper than the parser reads, not an
        /// object); nil when it was.
        var unreadable: String?
    }

    /// The objects a query finds, read one by one: one that another client made unreadable is handed back
    /// as such, and the rest are read. Only an answer that is not JSON at all fails.
    /// - Parameter bytes: told the size of the answer's body (a pull's `PageLimit`).
    func find(_ className: String, query: [URLQueryItem], doing what: String,
              bytes: (Int) -> Void = { _ in }) throws(HTTPRemoteError) -> [FoundObject] {
        let response = try send(HTTPRequest(method: "GET", url: url("classes", className, query: query)), doing: what)
        bytes(response.body.count)
        var found: [FoundObject] = []
        var sawResults = false
        do {
            try response.body.withUnsafeBytes { bytes in
                try JSONParser.parseObject(bytes) { key, parser in
                    guard key.equals("results") else { _ = try parser.value(); return }
                    sawResults = true
                    try parser.forEachElement { parser in
                        let value = try parser.value()
                        found.append(value.objectValue.map { FoundObject(fields: $0) }
                                     ?? FoundObject(fields: [:], unreadable: "it is not a JSON object"))
                    } passingOver: { element, error in
                        found.append(FoundObject(fields: Self.identity(of: element), unreadable: "evsync cannot read it: \(error)"))
                    }
                }
            }
        } catch {
            throw HTTPRemoteError(.server, "the server sent invalid JSON while \(what): \(error)")
        }
        guard sawResults else { throw HTTPRemoteError(.server, "the server's answer to \(what) has no results") }
        return found
    }

    /// What says which object an unreadable one is (`objectId`, `updatedAt`, `idField`), read past the rest.
    static func identity(of element: UnsafeRawBufferPointer) -> JSONObject {
        var fields: JSONObject = [:]
        try? JSONParser.scanObject(element) { key, parser in
            let name = String(decoding: key, as: UTF8.self)
            if name == "objectId" || name == "updatedAt" || name == idField {
                fields[name] = try parser.value()
            } else {
                _ = try parser.skipValue(startingAt: parser.offset)
            }
            return true
        }
        return fields
    }

    func batch(_ requests: [JSONObject], doing what: String) throws(HTTPRemoteError) -> [JSONObject] {
        let body = JSONWriter.encode(.object(["requests": .array(requests.map(JSONValue.object))]))
        let response = try send(HTTPRequest(method: "POST", url: url("batch"), body: body, contentType: "application/json"),
                                doing: what, resendable: false)
        guard case .array(let answers) = try json(response, doing: what), answers.count == requests.count else {
            throw HTTPRemoteError(.server, "the server's batch answer does not match the \(requests.count) requests sent while \(what)")
        }
        return answers.map { $0.objectValue ?? [:] }
    }

    func json(_ response: HTTPResponse, doing what: String) throws(HTTPRemoteError) -> JSONValue {
        do {
            return try JSONParser.parse(response.body)
        } catch {
            throw HTTPRemoteError(.server, "the server sent invalid JSON while \(what): \(error)")
        }
    }

    /// Waits before retrying what failed (a Ctrl-C, `shouldStop`, ends the wait and the sync at once).
    func waitToRetry(after attempt: Int, failure: String) throws(HTTPRemoteError) {
        do {
            try http.pause(after: attempt, failure: failure)
        } catch {
            throw ParseAnswer.failure(error)
        }
    }

    /// Sends with retries (network errors, 5xx, 429 and Parse's 155), and turns a refusal into a `HTTPRemoteError`.
    /// - Parameter resendable: false for a request that must not be sent twice once it may have reached the
    ///   server (a batch of creates): a network error or a 5xx then throws at once, `mayHaveApplied`. A 429 or
    ///   155 is a refusal before anything was done, and is retried either way.
    func send(_ request: HTTPRequest, doing what: String, resendable: Bool = true) throws(HTTPRemoteError) -> HTTPResponse {
        var request = request
        request.headers += credentials.headers
        let response: HTTPResponse
        do {
            response = try http.send(request, resendable: resendable) { response in
                // Only a refusal can be one; a page of results is not read twice to find out.
                guard !(200..<300).contains(response.status), ParseAnswer.read(response).code == ParseAnswer.Code.requestLimitExceeded
                else { return nil }
                return RetryableAnswer(reason: "\(HTTPClient.describe(request.url)) refused the request as over its request limit (Parse error 155)",
                                       retryAfter: response.headers["retry-after"].flatMap(Double.init))
            }
        } catch {
            throw ParseAnswer.failure(error)
        }
        if response.status == 200 || response.status == 201 { return response }
        let (code, said) = ParseAnswer.read(response)
        let message = said ?? "HTTP \(response.status)"
        if response.status == 401 || response.status == 403 {
            // Parse Server refuses keys with its JSON `{"error": …}`; any other body is another kind of server.
            if !ParseAnswer.isParse(response) {
                throw HTTPRemoteError(.server, "\(HTTPClient.describe(request.url)) is not a Parse server (HTTP \(response.status) without Parse's "
                    + "{\"error\": …} answer): the remote URL is wrong, not the keys", code: code)
            }
            throw HTTPRemoteError(.unauthorized, "the server refused the credentials of \(credentials) while \(what) (HTTP \(response.status): \(message))",
                             code: code)
        }
        // Parse answers a class it does not know with no results, never 404: a 404 is another server's path.
        if response.status == 404, !ParseAnswer.isParse(response) {
            throw HTTPRemoteError(.server, "\(HTTPClient.describe(request.url)) is not a Parse server (HTTP 404 without Parse's "
                + "{\"error\": …} answer): the remote URL is wrong", code: code)
        }
        if let code { throw ParseAnswer.failure(code: code, message: message, doing: what) }
        if (300..<400).contains(response.status), let location = response.headers["location"] {
            // Followed by no adapter but DAV's discovery: the keys go to the server given, and nowhere else.
            throw HTTPRemoteError(.server, "the server failed \(what): HTTP \(response.status), a redirect to \(location), which evsync does not follow; "
                + "if that is where the server is, give it as the remote")
        }
        throw HTTPRemoteError(.server, "the server failed \(what): HTTP \(response.status): \(message)")
    }
}
