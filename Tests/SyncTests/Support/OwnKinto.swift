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

    private static let tool = ServerTool.path("kinto")

    init() async throws {
        port = try ServerTool.freePort()
        (server, authFile) = try await Self.start(port)
    }

    deinit { _ = try? DaemonStarter.run([Self.tool, "stop", "--port", String(port)]) }

    /// Stops the server and starts it again on the same port: its memory backend comes back empty.
    func restartEmpty() async throws {
        try await stop()
        try await start()
    }

    /// Stops the server: its port refuses connections until `start()`.
    func stop() async throws {
        let stopped = try await ServerTool.stop(Self.tool, port: port)
        #expect(stopped.status == 0, "\(stopped)")
    }

    /// Starts it again on the same port, empty.
    func start() async throws {
        _ = try await Self.start(port)
    }

    /// `Tools/kinto start`, tried as `ServerTool.start` tries it.
    private static func start(_ port: Int) async throws -> (String, String) {
        try await ServerTool.start(tool, ["--port", String(port)], port: port)
    }
}
