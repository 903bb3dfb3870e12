import Foundation

/// One request sent without credentials, to learn whether a server speaks the protocol an adapter expects
/// before it blames the credentials for a refusal: a Kinto URL pointed at a CalDAV server is refused
/// there too (HTTP 401), and the user would go and reset a password that was right.
package enum ProtocolProbe {
    /// The server's answer, or nil when none came (then nothing is learnt, and the refusal stands as it was).
    /// No credentials go with it: they are what is in doubt, and a server of the wrong kind need not see them.
    package static func answer(_ request: HTTPRequest, userAgent: String) -> HTTPResponse? {
        guard let client = try? HTTPClient(server: request.url, credentials: nil, userAgent: userAgent) else { return nil }
        client.limits.maximumResponseBytes = 1 << 20
        return try? client.send(request)
    }
}
