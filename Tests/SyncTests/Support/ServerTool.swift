import TestSupport
import Foundation

/// Starting a server of one test's own with a tool of Tools/ (`Tools/kinto`, `Tools/dav`) on a free port.
enum ServerTool {
    /// This checkout.
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The tool `Tools/<name>` of this checkout.
    static func path(_ name: String) -> String { repository.appendingPathComponent("Tools/\(name)").path }

    /// `tool start ARGUMENTS`, whose two lines (the URL, the credentials file) it returns. It leaves a server
    /// running, and is waited for alone (`ProcessRunner` waits for the command's pid, not for its output to close),
    /// on a thread of its own, not the test runner's few. Tried three times, stopping what a failed try left: on a
    /// machine busy with a parallel test run, a start can miss its deadline.
    static func start(_ tool: String, _ arguments: [String], port: Int) async throws -> (String, String) {
        var failure = ""
        for _ in 1...3 {
            let started = try await ProcessRunner.run(tool, ["start"] + arguments)
            let lines = started.stdout.split(separator: "\n").map(String.init)
            if started.status == 0, lines.count == 2 { return (lines[0], lines[1]) }
            failure = "status \(started.status): \(started.stderr)"
            _ = try? await stop(tool, port: port)
        }
        throw ParseStandIn.Failure(description: "\(tool) start failed: \(failure)")
    }

    /// `tool stop --port PORT`.
    static func stop(_ tool: String, port: Int) async throws -> ProcessOutput {
        try await ProcessRunner.run(tool, ["stop", "--port", String(port)])
    }

    /// A port nobody listens on now: the kernel's pick for a socket bound to port 0.
    static func freePort() throws -> Int {
        try freePort(0)
    }

    /// A port free now with the port `offset` above it free too, below 55,536: `Tools/kinto start --postgres`
    /// puts its PostgreSQL there.
    static func freePortPair(offset: Int = 10_000) throws -> Int {
        for _ in 0..<200 {
            let port = Int.random(in: 20_000..<(65_536 - offset))
            if (try? freePort(port)) != nil, (try? freePort(port + offset)) != nil { return port }
        }
        throw ParseStandIn.Failure(description: "no free pair of ports \(offset) apart")
    }

    /// `port` if it can be bound now (0: any free port).
    private static func freePort(_ port: Int) throws -> Int {
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0 }
        }
        guard bound else { throw ParseStandIn.Failure(description: "no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
