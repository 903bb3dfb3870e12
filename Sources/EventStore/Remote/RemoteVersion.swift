/// A server's version of one record, as the server hands it out: a Kinto
/// `last_modified`, a CouchDB `_rev`, a CalDAV ETag, a Parse `updatedAt`.
///
/// Opaque to evsync: the log stores it, and a sync compares two versions for
/// equality only (is this change one the log already has?). The remote that
/// made it is the only one that reads meaning into it.
///
/// ```swift
/// RemoteVersion(1796076723092)      // Kinto
/// RemoteVersion("3-917fa2381192822767f010b95b45325b")   // CouchDB
/// ```
///
/// Stored forms: a token that is a non-negative decimal integer in canonical
/// form (no sign, no leading zero) is kept as that integer, a JSON number in
/// an event and 8 bytes in the `records` view, exactly as every version
/// logged before versions became opaque; any other token as a string.
public struct RemoteVersion: Hashable, Sendable, CustomStringConvertible {
    package enum Storage: Hashable, Sendable {
        case integer(Int64)
        case token(String)
    }

    package let storage: Storage

    /// A version from the token the server gave.
    public init(_ token: String) {
        storage = Self.canonicalInteger(token).map(Storage.integer) ?? .token(token)
    }

    /// A version the server gave as a number (Kinto's `last_modified`); negative numbers are kept as text.
    public init(_ number: Int64) {
        storage = number >= 0 ? .integer(number) : .token(String(number))
    }

    /// The token as the server gave it.
    public var token: String {
        switch storage {
        case .integer(let number): String(number)
        case .token(let token): token
        }
    }

    /// The version as a non-negative integer, when the server gave one.
    public var integer: Int64? {
        if case .integer(let number) = storage { return number }
        return nil
    }

    public var description: String { token }

    private static func canonicalInteger(_ token: String) -> Int64? {
        let digits = token.utf8
        guard let first = digits.first, (first != UInt8(ascii: "0") || digits.count == 1),
              digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return Int64(token)
    }
}

/// `Codable` in its stored form: a number when it is one, else the token (a string), as events and `--json` hold it.
extension RemoteVersion: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Int64.self) { self.init(number) } else { self.init(try container.decode(String.self)) }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch storage {
        case .integer(let number): try container.encode(number)
        case .token(let token): try container.encode(token)
        }
    }
}

/// Where a pull stopped: handed out by the remote with each page, given back
/// to it to ask for what changed since. Opaque to evsync, which keeps it per
/// remote and entity beside the log (a Kinto timestamp, a CouchDB `last_seq`,
/// a CalDAV sync-token).
public struct RemoteCursor: Hashable, Sendable, CustomStringConvertible {
    public let token: String

    public init(_ token: String) {
        self.token = token
    }

    public var description: String { token }
}
