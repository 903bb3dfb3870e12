import CCurl
package import Foundation

/// An HTTP request: what `HTTPClient` sends.
package struct HTTPRequest: Sendable {
    package var method: String
    package var url: URL
    package var headers: [(String, String)] = []
    package var body: [UInt8]?

    /// - Parameter contentType: the body's type (`application/json`, `text/calendar`), sent as `Content-Type`.
    package init(method: String, url: URL, headers: [(String, String)] = [], body: [UInt8]? = nil, contentType: String? = nil) {
        (self.method, self.url, self.headers, self.body) = (method, url, headers, body)
        if let contentType { self.headers.append(("Content-Type", contentType)) }
    }
}

/// An HTTP response, with header names lower-cased.
package struct HTTPResponse: Sendable {
    package var status: Int
    package var headers: [String: String]
    package var body: [UInt8]
    /// The status line's reason phrase (`Temporary Redirect`), empty when the server gave none (HTTP/2 has none).
    package var reason = ""

    package init(status: Int, headers: [String: String], body: [UInt8], reason: String = "") {
        (self.status, self.headers, self.body, self.reason) = (status, headers, body, reason)
    }
}

/// A transport failure: nothing usable came back from the server.
package struct TransportError: Error, Sendable, CustomStringConvertible {
    package enum Kind: Sendable {
        /// The connection broke, or could not be made in time: worth trying again.
        case unreachable
        /// Nothing there: the connection was refused or the host name does not resolve. Worth trying
        /// again only with a server that has answered before (`RetryingClient`): else a mistyped address.
        case refused
        /// The transfer fell below the minimum rate: worth trying again.
        case tooSlow
        /// The response outgrew `HTTPClient.maximumResponseBytes`: it would again.
        case tooLarge
        /// An `https` URL whose server speaks plain `http`: it always will.
        case plainHTTP
        /// A request for another origin than the client's (a server's redirect or link): refused before it is sent.
        case otherOrigin
    }

    package let kind: Kind
    package let url: String
    package let reason: String

    init(_ kind: Kind = .unreachable, url: String, reason: String) {
        self.kind = kind
        self.url = url
        self.reason = reason
    }

    package var isRetryable: Bool { kind != .tooLarge && kind != .plainHTTP && kind != .otherOrigin }

    package var description: String {
        switch kind {
        case .unreachable, .refused: "cannot reach \(url): \(reason)"
        case .tooSlow, .tooLarge, .plainHTTP: "the server at \(url) \(reason)"
        case .otherOrigin: reason
        }
    }
}

/// A thin, blocking HTTP client on one libcurl easy handle.
///
/// The handle is kept for the client's life, so libcurl reuses the
/// connection across requests (a pull is one request per page). TLS
/// verification is left at libcurl's default: on. Credentials go through
/// `CURLOPT_USERNAME`/`PASSWORD`, never into a URL. Not thread-safe: one
/// client per sync. A client talks to one origin, the server's (`Origin`): a request for any other is refused
/// before it is sent, so that no redirect or link of a server's takes the credentials (or a write) elsewhere.
///
/// Two limits keep a hostile or broken server from holding a sync (and its
/// lock) forever or from filling memory:
/// - a minimum rate: a transfer that averages less than `minimumRate` bytes a
///   second for `limits.slowTime` seconds is abandoned (libcurl's
///   `CURLOPT_LOW_SPEED_LIMIT`/`TIME`; its average runs over the last few
///   seconds, so a server that trickles or stalls is caught alike, and one
///   that thinks for less than `limits.slowTime` before answering is not). 1 KiB/s
///   is far below any working link (a page of 1,000 holidays is ~150 KiB),
///   so only a broken or hostile server trips it;
/// - a size cap: a response body larger than `maximumResponseBytes` is cut off
///   in the write callback. A Kinto page holds at most the `_limit` records
///   asked for (1,000) and a batch response at most `batch_max_requests`
///   records, so 256 MiB is over 250 KiB a record: far above any page we
///   ask for, still well inside memory.
package final class HTTPClient {
    private let handle: UnsafeMutableRawPointer
    private let credentials: Credentials?
    /// The one origin requests go to: the server's, as the user gave it.
    private let origin: Origin?
    private let userAgent: String
    /// Connection attempts (with their TLS handshake) fail after this many seconds.
    var connectTimeout = 10
    /// A whole transfer fails after this many seconds; 0: no limit (the minimum rate applies).
    var timeout = 0
    /// Bytes a second a transfer must keep up, averaged over `limits.slowTime`.
    var minimumRate = 1024
    /// How long a transfer may stay below `minimumRate`, and the largest response body accepted.
    package var limits = TransferLimits()
    package var maximumResponseBytes: Int { limits.maximumResponseBytes }

    private static let globalInit: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    /// - Parameters:
    ///   - server: the URL the user gave: requests go to its origin only.
    ///   - userAgent: what the client calls itself (`evsync/1.2.0`), given by the program.
    package init(server: URL, credentials: Credentials?, userAgent: String) throws(TransportError) {
        _ = Self.globalInit
        guard let handle = curl_easy_init() else { throw TransportError(url: "-", reason: "libcurl failed to start") }
        self.handle = handle
        self.origin = Origin(server)
        self.credentials = credentials
        self.userAgent = userAgent
    }

    deinit {
        curl_easy_cleanup(handle)
    }

    package func send(_ request: HTTPRequest) throws(TransportError) -> HTTPResponse {
        let target = Origin(request.url)
        guard let origin, target == origin else {
            throw TransportError(.otherOrigin, url: Self.describe(request.url),
                                 reason: "refusing to send a request to \(target?.description ?? Self.describe(request.url)): "
                                     + "evsync talks only to \(origin?.description ?? "the server given"), the server given, and sends its credentials nowhere else")
        }
        let collector = ResponseCollector(limit: maximumResponseBytes, expectsBody: request.method != "HEAD")
        let context = Unmanaged.passUnretained(collector).toOpaque()
        var headerList: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(headerList) }
        for (name, value) in request.headers {
            headerList = curl_slist_append(headerList, "\(name): \(value)")
        }
        // A body of no stated type goes without one, not as libcurl's default form type.
        if request.body != nil, !request.headers.contains(where: { $0.0.lowercased() == "content-type" }) {
            headerList = curl_slist_append(headerList, "Content-Type:")
        }
        // An empty Expect stops libcurl waiting for "100 Continue" before large bodies.
        headerList = curl_slist_append(headerList, "Expect:")

        curl_easy_reset(handle)
        evsync_curl_set_string(handle, CURLOPT_URL, request.url.absoluteString)
        evsync_curl_set_long(handle, CURLOPT_NOSIGNAL, 1)
        evsync_curl_set_long(handle, CURLOPT_CONNECTTIMEOUT, connectTimeout)
        evsync_curl_set_long(handle, CURLOPT_TIMEOUT, timeout)
        evsync_curl_set_long(handle, CURLOPT_LOW_SPEED_LIMIT, minimumRate)
        evsync_curl_set_long(handle, CURLOPT_LOW_SPEED_TIME, limits.slowTime)
        evsync_curl_set_long(handle, CURLOPT_TCP_KEEPALIVE, 1)
        evsync_curl_set_string(handle, CURLOPT_USERAGENT, userAgent)
        if let credentials {
            evsync_curl_set_long(handle, CURLOPT_HTTPAUTH, evsync_curl_auth_basic())
            evsync_curl_set_string(handle, CURLOPT_USERNAME, credentials.user)
            evsync_curl_set_string(handle, CURLOPT_PASSWORD, credentials.password)
        }
        evsync_curl_set_string(handle, CURLOPT_CUSTOMREQUEST, request.method)
        if request.method == "HEAD" { evsync_curl_set_long(handle, CURLOPT_NOBODY, 1) }
        evsync_curl_set_slist(handle, CURLOPT_HTTPHEADER, headerList)
        evsync_curl_set_write_function(handle, CURLOPT_WRITEFUNCTION) { data, size, count, context in
            guard let data, let context else { return 0 }
            let collector = Unmanaged<ResponseCollector>.fromOpaque(context).takeUnretainedValue()
            // Returning less than was given makes libcurl stop with CURLE_WRITE_ERROR.
            return collector.append(UnsafeRawBufferPointer(start: data, count: size * count)) ? size * count : 0
        }
        evsync_curl_set_pointer(handle, CURLOPT_WRITEDATA, context)
        evsync_curl_set_write_function(handle, CURLOPT_HEADERFUNCTION) { data, size, count, context in
            guard let data, let context else { return 0 }
            let collector = Unmanaged<ResponseCollector>.fromOpaque(context).takeUnretainedValue()
            collector.addHeaderLine(UnsafeRawBufferPointer(start: data, count: size * count))
            return size * count
        }
        evsync_curl_set_pointer(handle, CURLOPT_HEADERDATA, context)

        let code: CURLcode = withExtendedLifetime(collector) {
            if let body = request.body {
                return body.withUnsafeBytes { bytes in
                    evsync_curl_set_long(handle, CURLOPT_POSTFIELDSIZE, bytes.count)
                    evsync_curl_set_pointer(handle, CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress))
                    return curl_easy_perform(handle)
                }
            }
            return curl_easy_perform(handle)
        }
        guard code == CURLE_OK else {
            let url = Self.describe(request.url)
            if collector.overflowed {
                throw TransportError(.tooLarge, url: url, reason: "sent a response larger than \(Self.size(maximumResponseBytes)); refusing it")
            }
            if request.url.scheme == "https", code == CURLE_SSL_CONNECT_ERROR || (code == CURLE_OPERATION_TIMEDOUT && handshakeStalled()),
               Self.answersPlainHTTP(request.url, userAgent: userAgent) {
                throw TransportError(.plainHTTP, url: url, reason: "speaks plain http, not https: give the remote as an http:// URL")
            }
            if code == CURLE_OPERATION_TIMEDOUT, requestWasSent() {
                throw TransportError(.tooSlow, url: url,
                                     reason: "was too slow: less than \(Self.size(minimumRate))/s for \(limits.slowTime) s")
            }
            let nothingThere = code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST || code == CURLE_COULDNT_RESOLVE_PROXY
            throw TransportError(nothingThere ? .refused : .unreachable, url: url, reason: String(cString: curl_easy_strerror(code)))
        }
        var status = 0
        evsync_curl_get_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return HTTPResponse(status: status, headers: collector.headers, body: collector.body, reason: collector.reason)
    }

    /// Whether any of the last request reached the server: a timeout after that is the
    /// minimum rate's (the server was too slow), before it the connect timeout's.
    private func requestWasSent() -> Bool {
        var sent = 0
        evsync_curl_get_long(handle, CURLINFO_REQUEST_SIZE, &sent)
        return sent > 0
    }

    /// Whether the last transfer connected but never finished its TLS handshake:
    /// what a server that does not speak TLS does with an `https` request (it
    /// waits for the rest of what it takes for a request line).
    private func handshakeStalled() -> Bool {
        // A connection was made (libcurl counts it once TCP is up), yet the transfer timed out while connecting.
        var connections = 0
        evsync_curl_get_long(handle, CURLINFO_NUM_CONNECTS, &connections)
        return connections > 0 && !requestWasSent()
    }

    /// Whether the host and port of an `https` URL answer plain `http`: one
    /// request for `/` with short timeouts and no credentials, made only after
    /// a TLS handshake there failed, so that the error can say what to change.
    private static func answersPlainHTTP(_ url: URL, userAgent: String) -> Bool {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return false }
        components.scheme = "http"
        components.port = components.port ?? 443
        components.path = "/"
        components.query = nil
        guard let probeURL = components.url, let client = try? HTTPClient(server: probeURL, credentials: nil, userAgent: userAgent) else { return false }
        client.connectTimeout = 2
        client.timeout = 3
        return (try? client.send(HTTPRequest(method: "HEAD", url: probeURL))) != nil
    }

    /// Bytes for messages: `256 MiB`, `1 KiB`, `100 bytes`.
    package static func size(_ bytes: Int) -> String {
        if bytes >= 1 << 20, bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        if bytes >= 1 << 10, bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return "\(bytes) bytes"
    }

    /// A URL for messages: scheme, host, port and path only.
    package static func describe(_ url: URL) -> String {
        var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        components?.user = nil
        components?.password = nil
        components?.query = nil
        return components?.string ?? "the server"
    }
}

/// Gathers a response's body and headers from libcurl's callbacks.
private final class ResponseCollector {
    var body: [UInt8] = []
    var headers: [String: String] = [:]
    var reason = ""
    /// The body outgrew `limit`, and the transfer was stopped.
    private(set) var overflowed = false
    private let limit: Int
    /// False for a `HEAD`, whose `Content-Length` is that of a body it does not send.
    private let expectsBody: Bool

    init(limit: Int, expectsBody: Bool) {
        self.limit = limit
        self.expectsBody = expectsBody
    }

    /// The response's `Content-Length` is over the limit: its first bytes stop it, none downloaded for nothing.
    private var announcedTooLarge = false

    /// Adds body bytes; false (stop the transfer) when they would pass the limit.
    func append(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard !announcedTooLarge, body.count + bytes.count <= limit else {
            overflowed = true
            return false
        }
        body.append(contentsOf: bytes)
        return true
    }

    func addHeaderLine(_ bytes: UnsafeRawBufferPointer) {
        let line = String(decoding: bytes, as: UTF8.self)
        if line.hasPrefix("HTTP/") {
            headers = [:]  // a new response (after a redirect or 100 Continue) starts over
            announcedTooLarge = false
            // `HTTP/1.1 307 Temporary Redirect`: what follows the status code.
            reason = line.split(separator: " ", maxSplits: 2).dropFirst(2).first?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            return
        }
        guard let colon = line.firstIndex(of: ":") else { return }
        let name = line[..<colon].lowercased()
        let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
        headers[name] = value
        // The body's room at once: grown by doubling, a large body would be copied as it grows, twice its size at a time.
        if expectsBody, name == "content-length", let length = Int(value), length > 0 {
            if length <= limit { body.reserveCapacity(length) } else { announcedTooLarge = true }
        }
    }
}
