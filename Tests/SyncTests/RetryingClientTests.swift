import HTTPTransport
import TestSupport
import Foundation
import Synchronization
import Testing

/// The one retry loop of every adapter, against a local server that fails as told: what it retries, when it
/// gives up, what it reports, and that it sends any method and content type as given.
@Suite("RetryingClient")
struct RetryingClientTests {
    /// What a client reported.
    final class Reported: Sendable {
        private let events = Mutex<[HTTPActivity]>([])
        func append(_ event: HTTPActivity) { events.withLock { $0.append(event) } }
        var all: [HTTPActivity] { events.withLock { $0 } }
    }

    /// A client with short waits, and what it reports.
    private static func client(for server: ScriptedServer, attempts: Int = 4) throws -> (RetryingClient, Reported) {
        let client = try RetryingClient(server: try #require(URL(string: server.url)), credentials: nil, userAgent: "evsync-test")
        client.retry = RetryPolicy(attempts: attempts, baseDelay: 0.01, maximumDelay: 0.05)
        let reported = Reported()
        client.onActivity = { reported.append($0) }
        return (client, reported)
    }

    private static func get(_ server: ScriptedServer, _ path: String = "/x") throws -> HTTPRequest {
        HTTPRequest(method: "GET", url: try #require(URL(string: server.url + path)))
    }

    enum Outcome: Equatable {
        case answered(Int)
        case failed(HTTPFailure.Kind, attempts: Int)
    }

    @Test("what is retried, and how it ends", arguments: [
        // script, resendable, attempts sent, outcome
        ([503, 503], true, 3, Outcome.answered(200)),
        ([500, 502, 503, 504], true, 4, .failed(.gaveUp, attempts: 4)),
        ([429], false, 2, .answered(200)),
        ([502], false, 1, .failed(.mayHaveApplied, attempts: 1)),
        ([404], true, 1, .answered(404)),
        ([], true, 1, .answered(200)),
    ])
    func retries(script: [Int], resendable: Bool, sent: Int, outcome: Outcome) throws {
        let server = try ScriptedServer(script.map { ScriptedServer.Answer($0) }, then: .init(200))
        let (client, activity) = try Self.client(for: server)
        let request = try Self.get(server)
        var result: Outcome
        do {
            result = .answered(try client.send(request, resendable: resendable).status)
        } catch {
            result = .failed(error.kind, attempts: error.attempts)
        }
        #expect(result == outcome)
        #expect(server.requests.count == sent)
        let reported = activity.all
        let requests = reported.filter { if case .request = $0 { true } else { false } }
        #expect(requests.count == sent, "\(reported)")
        let retries = reported.compactMap { event -> Int? in if case let .retrying(_, _, attempt, _) = event { attempt } else { nil } }
        #expect(retries == Array(stride(from: 2, through: sent, by: 1)), "\(reported)")
    }

    @Test("an answer the adapter finds failed is retried with its reason")
    func classifiedFailure() throws {
        let server = try ScriptedServer([.init(200, body: "rolled back")], then: .init(200, body: "kept"))
        let (client, activity) = try Self.client(for: server)
        let response = try client.send(Self.get(server)) { response in
            String(decoding: response.body, as: UTF8.self) == "rolled back" ? RetryableAnswer(reason: "the batch was rolled back") : nil
        }
        #expect(String(decoding: response.body, as: UTF8.self) == "kept")
        #expect(activity.all.contains { if case .retrying("the batch was rolled back", _, 2, 4) = $0 { true } else { false } })
    }

    @Test("a refused connection fails at once before any answer, and is retried after one")
    func refusedConnection() throws {
        let server = try ScriptedServer(then: .init(200))
        let (fresh, _) = try Self.client(for: server, attempts: 3)
        let (answered, _) = try Self.client(for: server, attempts: 3)
        let request = try Self.get(server)
        #expect(try answered.send(request).status == 200)
        server.stop()
        let started = ContinuousClock.now
        #expect { try fresh.send(request) } throws: { ($0 as? HTTPFailure)?.kind == .nothingThere && ($0 as? HTTPFailure)?.attempts == 1 }
        #expect(ContinuousClock.now - started < .seconds(2))
        // A client that has had an answer: the server faltered, and is tried again.
        #expect { try answered.send(request) } throws: { ($0 as? HTTPFailure)?.kind == .gaveUp && ($0 as? HTTPFailure)?.attempts == 3 }
    }

    @Test("shouldStop ends the wait for a retry at once")
    func interrupted() throws {
        let server = try ScriptedServer(then: .init(503))
        let (client, _) = try Self.client(for: server)
        client.retry = RetryPolicy(attempts: 5, baseDelay: 30, maximumDelay: 30)
        let started = ContinuousClock.now
        let stop = Atomic(false)
        client.onActivity = { if case .retrying = $0 { stop.store(true, ordering: .relaxed) } }
        client.shouldStop = { stop.load(ordering: .relaxed) }
        #expect { try client.send(Self.get(server)) } throws: { ($0 as? HTTPFailure)?.kind == .interrupted }
        #expect(ContinuousClock.now - started < .seconds(5))
    }

    @Test("any method, body and content type go out as given; none is added")
    func methodAndContentType() throws {
        let server = try ScriptedServer(then: .init(207, body: "<multistatus/>"))
        let (client, _) = try Self.client(for: server)
        let calendar = "BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n"
        var request = HTTPRequest(method: "REPORT", url: try #require(URL(string: server.url + "/cal/")),
                                  headers: [("Depth", "1")], body: Array(calendar.utf8), contentType: "text/calendar")
        #expect(String(decoding: try client.send(request).body, as: UTF8.self) == "<multistatus/>")
        request = HTTPRequest(method: "PROPFIND", url: request.url, body: Array("<propfind/>".utf8))
        #expect(try client.send(request).status == 207)
        let sent = server.requests
        #expect(sent.map(\.line) == ["REPORT /cal/ HTTP/1.1", "PROPFIND /cal/ HTTP/1.1"])
        #expect(sent.first?.headers["content-type"] == "text/calendar" && sent.first?.headers["depth"] == "1")
        #expect(sent.first?.body == calendar)
        #expect(sent.last?.headers["content-type"] == nil, "no type is forced on a body: \(sent.last?.headers ?? [:])")
        #expect(sent.first?.headers["user-agent"] == "evsync-test")
    }

    @Test("a client sends to its server's origin only: another port is refused unsent, with credentials or without; a redirect is not followed")
    func oneOrigin() throws {
        let other = try ScriptedServer(then: .init(200))
        let server = try ScriptedServer([.init(307, headers: ["Location": other.url + "/x"])], then: .init(200))
        for credentials in [nil, try Credentials(userPassword: "me:secret")] {
            let client = try RetryingClient(server: try #require(URL(string: server.url + "/dav/")), credentials: credentials, userAgent: "evsync-test")
            let failure = #expect(throws: HTTPFailure.self) { try client.send(Self.get(other)) }
            #expect(failure?.kind == .permanent)
            #expect(failure?.description == "refusing to send a request to \(other.url): evsync talks only to \(server.url), the server given, "
                + "and sends its credentials nowhere else", "\(String(describing: failure))")
        }
        let client = try RetryingClient(server: try #require(URL(string: server.url)), credentials: try Credentials(userPassword: "me:secret"),
                                        userAgent: "evsync-test")
        #expect(try client.send(Self.get(server)).status == 307)
        #expect(server.requests.count == 1 && server.requests.first?.headers["authorization"] != nil)
        #expect(other.requests.isEmpty, "\(other.requests)")
    }
}
