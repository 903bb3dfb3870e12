import Foundation
import Synchronization

/// An HTTP server on 127.0.0.1 that answers from a script, one connection at a
/// time and each with `Connection: close`: a server that fails N times, then
/// answers. It keeps what each request said, for a test to check what was sent.
public final class ScriptedServer: Sendable {
    public struct Answer: Sendable {
        public var status: Int
        public var headers: [String: String]
        /// The body's bytes: text as UTF-8, or any bytes (a body that is not UTF-8).
        public var bytes: [UInt8]

        public init(_ status: Int, headers: [String: String] = [:], body: String = "") {
            self.init(status, headers: headers, bytes: Array(body.utf8))
        }

        public init(_ status: Int, headers: [String: String] = [:], bytes: [UInt8]) {
            (self.status, self.headers, self.bytes) = (status, headers, bytes)
        }
    }

    /// One request as it came: its request line and headers (names lower-cased), and its body.
    public struct Request: Sendable {
        public var line: String
        public var headers: [String: String]
        public var body: String
    }

    public let port: Int
    private let listener: Int32
    private let script: Script
    private let stopped = Atomic(false)

    /// Answers `script` in order, then `last` to every request after.
    public init(_ script: [Answer] = [], then last: Answer) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && listen(descriptor, 16) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else {
            close(descriptor)
            throw POSIXError(.EADDRINUSE)
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        listener = descriptor
        let shared = Script(script, then: last)
        self.script = shared
        // The thread holds the script, not the server, so that the server's deinit stops it.
        Thread { shared.serve(descriptor) }.start()
    }

    deinit { stop() }

    public var url: String { "http://127.0.0.1:\(port)" }

    /// The requests received so far, in order.
    public var requests: [Request] { script.state.withLock { $0.requests } }

    /// Stops listening: the port then refuses connections. Once only: the serving thread closes the listener
    /// when it stops, and a second `shutdown` (an explicit stop, then `deinit`'s) would reach whatever socket of
    /// another test took that descriptor's number since: its server then refused every connection.
    public func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        shutdown(listener, Int32(SHUT_RDWR))
    }
}

/// What the server answers, and what it was asked, shared with the thread that serves.
private final class Script: Sendable {
    let state: Mutex<(script: [ScriptedServer.Answer], requests: [ScriptedServer.Request])>
    let last: ScriptedServer.Answer

    init(_ script: [ScriptedServer.Answer], then last: ScriptedServer.Answer) {
        state = Mutex((script, []))
        self.last = last
    }

    func serve(_ listener: Int32) {
        defer { close(listener) }
        while true {
            let connection = accept(listener, nil, nil)
            // A signal (another test's child exiting) interrupts accept: that is no reason to stop serving.
            if connection < 0, errno == EINTR || errno == ECONNABORTED { continue }
            guard connection >= 0 else { return }
            answer(connection)
            close(connection)
        }
    }

    private func answer(_ connection: Int32) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        func readMore() -> Bool {
            var count = read(connection, &buffer, buffer.count)
            while count < 0, errno == EINTR { count = read(connection, &buffer, buffer.count) }
            guard count > 0 else { return false }
            received += buffer[0..<count]
            return true
        }
        let end = Array("\r\n\r\n".utf8)
        var headEnd: Int?
        while headEnd == nil {
            guard readMore() else { return }
            headEnd = received.indices.dropLast(3).first { received[$0..<$0 + 4].elementsEqual(end) }
        }
        guard let headEnd else { return }
        let head = String(decoding: received[..<headEnd], as: UTF8.self).components(separatedBy: "\r\n")
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let length = headers["content-length"].flatMap { Int($0) } ?? 0
        while received.count < headEnd + 4 + length, readMore() {}
        let body = String(decoding: received.dropFirst(headEnd + 4).prefix(length), as: UTF8.self)
        let answer = state.withLock { state in
            state.requests.append(ScriptedServer.Request(line: head.first ?? "", headers: headers, body: body))
            return state.script.isEmpty ? last : state.script.removeFirst()
        }
        var text = "HTTP/1.1 \(answer.status) Scripted\r\nConnection: close\r\nContent-Length: \(answer.bytes.count)\r\n"
        for (name, value) in answer.headers { text += "\(name): \(value)\r\n" }
        let bytes = Array((text + "\r\n").utf8) + answer.bytes
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return }
            sent += count
        }
    }
}
