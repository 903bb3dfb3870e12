import Foundation

/// Whether a URL's host is this machine, where credentials may go over plain `http`.
package enum Loopback {
    /// `localhost`, 127.0.0.0/8 or `::1`. Only the literal forms count (`127.1`, a name
    /// in /etc/hosts or one that merely starts with `127.` do not), so a doubtful host is treated as remote.
    package static func isLoopback(_ host: String) -> Bool {
        let host = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")).lowercased()
        if host == "localhost" { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { $0.elementsEqual([UInt8](repeating: 0, count: 15) + [1]) }
        }
        return false
    }
}
