package import Foundation

/// A URL's scheme, host and port (RFC 6454): the one server a client talks to. Every request of an `HTTPClient`
/// goes to the origin it was made for, whatever a server answers (a redirect, a link, a `Next-Page`), so that
/// credentials reach no other host and the plain-`http` rule checked on the URL given holds for every hop.
package struct Origin: Hashable, Sendable, CustomStringConvertible {
    package let scheme: String
    package let host: String
    package let port: Int

    /// nil for a URL that is not `http` or `https` or has no host.
    package init?(_ url: URL) {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: true),
              let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = components.host?.lowercased(), !host.isEmpty else { return nil }
        self.scheme = scheme
        self.host = host
        port = components.port ?? (scheme == "https" ? 443 : 80)
    }

    /// `https://dav.example.com`, `http://127.0.0.2:8000`: the port only when it is not the scheme's own.
    package var description: String {
        let defaultPort = scheme == "https" ? 443 : 80
        let host = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return "\(scheme)://\(host)" + (port == defaultPort ? "" : ":\(port)")
    }
}
