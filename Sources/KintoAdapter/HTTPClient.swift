import EventStore
import EventSync
import CCurl
import Foundation

/// An HTTP request: what `HTTPClient` sends.
struct HTTPRequest: Sendable {
    var method: String
    var url: URL
    var headers: [(String, String)] = []
    var body: [UInt8]?
}

/// An HTTP response, with header names lower-cased.
struct HTTPResponse: Sendable {
    var status: Int
    var headers: [String: String]
    var body: [UInt8]
}

/// A transport failure: nothing usable came back from the server.
struct TransportError: Error, Sendable, CustomStringConvertible {
    let url: String
    let reason: String
    var description: String { "cannot reach \(url): \(reason)" }
}

/// A thin, blocking HTTP client on one libcurl easy handle.
///
/// The handle is kept for the client's life, so libcurl reuses the
/// connection across requests (a pull is one request per page). TLS
/// verification is left at libcurl's default: on. Credentials go through
/// `CURLOPT_USERNAME`/`PASSWORD`, never into a URL. Not thread-safe: one
/// client per sync.
final class HTTPClient {
    private let handle: UnsafeMutableRawPointer
    private let credentials: Credentials?
    /// Connection attempts fail after this many seconds.
    var connectTimeout = 10
    /// A transfer that moves less than 1 byte a second for this long is abandoned.
    var stallTimeout = 30

    private static let globalInit: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    init(credentials: Credentials?) throws(TransportError) {
        _ = Self.globalInit
        guard let handle = curl_easy_init() else { throw TransportError(url: "-", reason: "libcurl failed to start") }
        self.handle = handle
        self.credentials = credentials
    }

    deinit {
        curl_easy_cleanup(handle)
    }

    func send(_ request: HTTPRequest) throws(TransportError) -> HTTPResponse {
        let collector = ResponseCollector()
        let context = Unmanaged.passUnretained(collector).toOpaque()
        var headerList: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(headerList) }
        for (name, value) in request.headers {
            headerList = curl_slist_append(headerList, "\(name): \(value)")
        }
        if request.body != nil {
            headerList = curl_slist_append(headerList, "Content-Type: application/json")
        }
        // An empty Expect stops libcurl waiting for "100 Continue" before large bodies.
        headerList = curl_slist_append(headerList, "Expect:")

        curl_easy_reset(handle)
        evsync_curl_set_string(handle, CURLOPT_URL, request.url.absoluteString)
        evsync_curl_set_long(handle, CURLOPT_NOSIGNAL, 1)
        evsync_curl_set_long(handle, CURLOPT_CONNECTTIMEOUT, connectTimeout)
        evsync_curl_set_long(handle, CURLOPT_LOW_SPEED_LIMIT, 1)
        evsync_curl_set_long(handle, CURLOPT_LOW_SPEED_TIME, stallTimeout)
        evsync_curl_set_long(handle, CURLOPT_TCP_KEEPALIVE, 1)
        evsync_curl_set_string(handle, CURLOPT_USERAGENT, EvsyncVersion.userAgent)
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
            collector.body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: size * count))
            return size * count
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
            throw TransportError(url: Self.describe(request.url), reason: String(cString: curl_easy_strerror(code)))
        }
        var status = 0
        evsync_curl_get_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return HTTPResponse(status: status, headers: collector.headers, body: collector.body)
    }

    /// A URL for messages: scheme, host, port and path only.
    static func describe(_ url: URL) -> String {
        var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        components?.user = nil
        components?.password = nil
        components?.query = nil
        return components?.string ?? "the server"
    }
}

/// `user:password` for HTTP basic authentication. Its description never shows the password.
public struct Credentials: Sendable, CustomStringConvertible {
    public let user: String
    let password: String

    /// Parses `user:password`.
    public init?(_ text: String) {
        let text = text.trimmingCharacters(in: .newlines)
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex else { return nil }
        user = String(text[..<colon])
        password = String(text[text.index(after: colon)...])
    }

    public var description: String { "\(user):****" }
}

/// Gathers a response's body and headers from libcurl's callbacks.
private final class ResponseCollector {
    var body: [UInt8] = []
    var headers: [String: String] = [:]

    func addHeaderLine(_ bytes: UnsafeRawBufferPointer) {
        let line = String(decoding: bytes, as: UTF8.self)
        if line.hasPrefix("HTTP/") {
            headers = [:]  // a new response (after a redirect or 100 Continue) starts over
            return
        }
        guard let colon = line.firstIndex(of: ":") else { return }
        let name = line[..<colon].lowercased()
        let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
        headers[name] = value
    }
}
