import Foundation

/// What a Parse Server knows a client by, sent as `X-Parse-*` headers: the
/// application id, and a REST API key, a session token or (only when the user
/// gives it) the master key. Never printed: its description shows the
/// application id only.
public struct ParseCredentials: Sendable, CustomStringConvertible {
    public let applicationID: String
    let restAPIKey: String?
    let sessionToken: String?
    let masterKey: String?

    public init(applicationID: String, restAPIKey: String? = nil, sessionToken: String? = nil, masterKey: String? = nil) {
        self.applicationID = applicationID
        self.restAPIKey = restAPIKey
        self.sessionToken = sessionToken
        self.masterKey = masterKey
    }

    /// `applicationId:restApiKey`, as an auth file holds it.
    public init?(authFileText text: String) {
        let text = text.trimmingCharacters(in: .newlines)
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex else { return nil }
        self.init(applicationID: String(text[..<colon]), restAPIKey: String(text[text.index(after: colon)...]))
    }

    var headers: [(String, String)] {
        var headers = [("X-Parse-Application-Id", applicationID)]
        if let restAPIKey, !restAPIKey.isEmpty { headers.append(("X-Parse-REST-API-Key", restAPIKey)) }
        if let sessionToken { headers.append(("X-Parse-Session-Token", sessionToken)) }
        if let masterKey { headers.append(("X-Parse-Master-Key", masterKey)) }
        return headers
    }

    public var description: String { "application \(applicationID)" }
}
