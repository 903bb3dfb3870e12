import TestSupport
import Foundation

/// A CalDAV/CardDAV server of one test's own (`Tools/dav`: Radicale or Xandikos from .tools/venv) on a free port
/// of 127.0.0.1, stopped with the test.
final class OwnDAV: Sendable {
    let port: Int
    /// `http://127.0.0.1:PORT/`.
    let base: String
    /// A file holding `user:password` (Xandikos takes any credentials: docs/dav.md).
    let authFile: String

    private static let tool = ServerTool.path("dav")

    /// - Parameter server: `radicale` or `xandikos`; `options`: more of `Tools/dav start`'s.
    init(_ server: String, _ options: [String] = [], port: Int? = nil) async throws {
        let port = try port ?? ServerTool.freePort()
        self.port = port
        (base, authFile) = try await ServerTool.start(Self.tool, ["--server", server, "--port", String(port)] + options, port: port)
    }

    deinit { _ = try? DaemonStarter.run([Self.tool, "stop", "--port", String(port)]) }

    /// The server's process id, from its state dir (`Tools/dav`'s dav.pid).
    func pid() -> Int32? {
        let file = ServerTool.repository.appendingPathComponent(".tools/dav-\(port)/dav.pid").path
        return (try? String(contentsOfFile: file, encoding: .utf8)).flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    /// `Tools/dav stop` now (the deinit's stop then finds nothing to do).
    func stop() throws -> Int32 {
        try DaemonStarter.run([Self.tool, "stop", "--port", String(port)]).status
    }

    /// `Tools/dav status` for this port: `running radicale http://…` or `stopped`.
    func status() throws -> String {
        try DaemonStarter.run([Self.tool, "status", "--port", String(port)]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
