import TestSupport
import Foundation
import Testing

/// A Kinto of one test's own (`Tools/kinto`, memory backend) on a free port of 127.0.0.1,
/// for what the shared test server must not suffer: being stopped and started again empty.
final class OwnKinto: Sendable {
    let port: Int
    /// `http://127.0.0.1:PORT/v1`.
    let server: String
    /// A file holding `user:password`.
    let authFile: String

    private static let tool = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Tools/kinto").path

    init() async throws {
        port = try Self.freePort()
        (server, authFile) = try await Self.start(port)
    }

    deinit { _ = try? DaemonStarter.run([Self.tool, "stop", "--port", String(port)]) }

    /// Stops the server and starts it again on the same port: its memory backend comes back empty.
    func restartEmpty() async throws {
        let stopped = try DaemonStarter.run([Self.tool, "stop", "--port", String(port)])
        #expect(stopped.status == 0, "\(stopped)")
        _ = try await Self.start(port)
    }

    /// `Tools/kinto start` leaves a server running: `DaemonStarter`, not `ProcessRunner`.
    /// Tried three times: on a machine busy with a parallel test run, a start can miss its deadline.
    private static func start(_ port: Int) async throws -> (String, String) {
        var failure = ""
        for _ in 1...3 {
            let started = try DaemonStarter.run([tool, "start", "--port", String(port)])
            let lines = started.stdout.split(separator: "\n").map(String.init)
            if started.status == 0, lines.count == 2 { return (lines[0], lines[1]) }
            failure = "status \(started.status): \(started.stderr)"
            _ = try? DaemonStarter.run([tool, "stop", "--port", String(port)])
        }
        throw ParseStandIn.Failure(description: "Tools/kinto start failed: \(failure)")
    }

    /// A port nobody listens on now: the kernel's pick for a socket bound to port 0.
    private static func freePort() throws -> Int {
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0 }
        }
        guard bound else { throw ParseStandIn.Failure(description: "no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
