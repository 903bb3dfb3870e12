import TestSupport
import Foundation
import Testing

/// A Kinto of one test's own (`Tools/kinto`, memory backend, or PostgreSQL) on a free port of 127.0.0.1,
/// for what the shared test server must not suffer: being stopped and started again empty, or read in its database.
final class OwnKinto: Sendable {
    let port: Int
    /// Whether its storage is a PostgreSQL of its own (`Tools/kinto start --postgres`), which a test may read directly.
    let postgres: Bool
    /// `http://127.0.0.1:PORT/v1`.
    let server: String
    /// A file holding `user:password`.
    let authFile: String

    private static let tool = ServerTool.path("kinto")

    init(postgres: Bool = false) async throws {
        self.postgres = postgres
        port = postgres ? try ServerTool.freePortPair() : try ServerTool.freePort()
        (server, authFile) = try await Self.start(port, postgres: postgres)
    }

    /// Everything its PostgreSQL holds, as `pg_dump` writes it: what the server stores, read past Kinto's API.
    func databaseDump() async throws -> String {
        let state = URL(fileURLWithPath: authFile).deletingLastPathComponent().path
        let ini = try String(contentsOfFile: state + "/kinto.ini", encoding: .utf8)
        let prefix = "kinto.storage_url = "
        let url = try #require(ini.split(separator: "\n").first { $0.hasPrefix(prefix) }?.dropFirst(prefix.count), "no PostgreSQL in \(state)")
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []).sorted().reversed()
        let pgDump = try #require((versions.map { "/usr/lib/postgresql/\($0)/bin/pg_dump" } + ["/usr/bin/pg_dump"])
            .first { FileManager.default.isExecutableFile(atPath: $0) })
        let dump = try await ProcessRunner.run(pgDump, ["--data-only", String(url)], environment: ProcessInfo.processInfo.environment)
        try #require(dump.status == 0, "\(dump)")
        return dump.stdout
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
        _ = try await Self.start(port, postgres: postgres)
    }

    /// `Tools/kinto start`, tried as `ServerTool.start` tries it.
    private static func start(_ port: Int, postgres: Bool) async throws -> (String, String) {
        try await ServerTool.start(tool, ["--port", String(port)] + (postgres ? ["--postgres"] : []), port: port)
    }
}
