import TestSupport
import Foundation
import Testing

/// `Tools/slow-proxy` in front of the test server, with its options: `--delay
/// SECONDS` holds every response back, `--trickle BYTES_PER_SECOND` sends
/// bodies that slowly, `--max-body BYTES` answers 413 to larger requests,
/// `--rewrite-accepted JSON` changes the records accepted writes are answered with.
/// `answered` tells what it has answered, for a test to wait on.
final class SlowProxy: Sendable {
    /// The proxy's URL with the test server's path, e.g. `http://127.0.0.1:PORT/v1`.
    let url: String
    private let process: RunningProcess
    private let directory: TemporaryDirectory
    private let answeredFile: String

    /// - Parameter target: the server's URL; the test Kinto's if nil.
    init(_ options: [String], target: String? = nil) async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let serverURL = try #require(target ?? TestServer.url)
        let server = try #require(URLComponents(string: serverURL))
        let host = try #require(server.host), port = try #require(server.port)
        let target = "http://\(host):\(port)"
        directory = try TemporaryDirectory("synctests-proxy")
        let portFile = directory.file("url")
        answeredFile = directory.file("answered")
        process = try RunningProcess(executable: root.appendingPathComponent("Tools/slow-proxy").path,
                                     arguments: ["--target", target, "--port-file", portFile, "--answered", answeredFile] + options,
                                     environment: ProcessInfo.processInfo.environment)
        var written: String?
        for _ in 0..<100 where written == nil {
            try await Task.sleep(for: .milliseconds(50))
            written = try? String(contentsOfFile: portFile, encoding: .utf8)
        }
        let base = try #require(written?.trimmingCharacters(in: .whitespacesAndNewlines), "the proxy did not start")
        url = base + server.path
    }

    /// The responses sent so far, oldest first: `GET /v1/buckets/…/records?… 200`.
    var answered: [String] {
        ((try? String(contentsOfFile: answeredFile, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    /// For a failure's message: whether the proxy still runs, what it answered and what it wrote.
    var report: String {
        "the proxy at \(url) \(process.hasExited ? "has exited" : "runs"), answered \(answered), wrote \(process.outputSoFar())"
    }

    deinit { process.signal(SIGTERM) }
}
