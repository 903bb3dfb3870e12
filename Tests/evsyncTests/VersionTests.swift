import Foundation
import Testing
@testable import evsync

/// One version string: `evsync --version` and the HTTP user agent say the same.
@Suite("CLI version")
struct VersionTests {
    @Test("--version and the User-Agent of a sync carry the same version")
    func userAgent() throws {
        try withSandbox { sandbox in
            let version = try sandbox.run(["--version"])
            #expect(version.status == Exit.ok, "\(version)")
            #expect(version.stdout == Help.version + "\n")
            let number = try #require(version.stdout.split(separator: " ").last?.trimmingCharacters(in: .newlines))

            // A listener on 127.0.0.1 that reads one request's head and hangs up.
            let listener = try LoopbackListener()
            let sync = try sandbox.launch(["sync", "--remote", "http://127.0.0.1:\(listener.port)/v1/buckets/x"],
                                          environment: ["EVSYNC_RETRIES": "1"])
            let head = try listener.acceptOneRequestHead(timeout: 60)
            listener.close()
            let result = sync.wait()
            #expect(result.status == 69, "the server hung up: \(result)")
            #expect(head.contains("\r\nUser-Agent: evsync/\(number)\r\n"), "\(head)")
        }
    }
}

/// A TCP socket listening on 127.0.0.1 on a port the kernel picks.
final class LoopbackListener {
    private var descriptor: Int32
    let port: UInt16

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.descriptor = descriptor
        try #require(descriptor >= 0, "socket: \(String(cString: strerror(errno)))")
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && listen(descriptor, 8) == 0 && getsockname(descriptor, pointer, &length) == 0
            }
        }
        try #require(bound, "bind/listen: \(String(cString: strerror(errno)))")
        port = UInt16(bigEndian: address.sin_port)
    }

    deinit { close() }

    /// Waits up to `timeout` seconds for a connection, reads up to the end of the request's head, closes the connection.
    func acceptOneRequestHead(timeout: Double) throws -> String {
        var poll = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        try #require(Glibc.poll(&poll, 1, Int32(timeout * 1000)) == 1, "no connection within \(timeout) s")
        let connection = accept(descriptor, nil, nil)
        try #require(connection >= 0, "accept: \(String(cString: strerror(errno)))")
        defer { Glibc.close(connection) }
        var head: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !head.ends(with: Array("\r\n\r\n".utf8)) {
            var readable = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
            guard Glibc.poll(&readable, 1, Int32(timeout * 1000)) == 1 else { break }
            let count = read(connection, &buffer, buffer.count)
            guard count > 0 else { break }
            head += buffer[..<count]
        }
        return String(decoding: head, as: UTF8.self)
    }

    func close() {
        if descriptor >= 0 { Glibc.close(descriptor) }
        descriptor = -1
    }
}

private extension Array where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool { count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix }
}
