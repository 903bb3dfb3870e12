import Foundation

/// `user:password` for HTTP basic authentication. Its description never shows the password.
///
/// ```swift
/// let credentials = try Credentials(userPassword: "evsync:evsync-local-secret")
/// ```
public struct Credentials: Sendable, CustomStringConvertible {
    public let user: String
    package let password: String

    /// Parses `user:password`: the user is what comes before the first colon, the password all after it.
    /// Newlines around it are dropped (a file's last line ends in one).
    /// - Throws: `CredentialsError` when there is no colon, or no user before it. Its message never quotes
    ///   the text, which may be a password alone.
    public init(userPassword text: String) throws(CredentialsError) {
        let text = text.trimmingCharacters(in: .newlines)
        guard let colon = text.firstIndex(of: ":") else { throw CredentialsError("there is no ':' between the user and the password") }
        guard colon != text.startIndex else { throw CredentialsError("the user before the ':' is empty") }
        user = String(text[..<colon])
        password = String(text[text.index(after: colon)...])
    }

    /// Parses `user:password`; nil when it is not that, without saying why.
    @available(*, deprecated, renamed: "init(userPassword:)",
               message: "a nil here turns into no credentials, and the server's refusal then says none were given: use init(userPassword:), which says what is wrong (try? keeps an optional)")
    public init?(_ text: String) {
        guard let parsed = try? Credentials(userPassword: text) else { return nil }
        self = parsed
    }

    public var description: String { "\(user):****" }
}

/// Text that is not `user:password`.
public struct CredentialsError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong with it, never the text itself.
    public let reason: String

    init(_ reason: String) {
        self.reason = reason
    }

    public var description: String { "credentials must be user:password: \(reason)" }
}
