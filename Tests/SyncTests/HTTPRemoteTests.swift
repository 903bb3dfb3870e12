import DAVAdapter
import EventStore
import EventSync
import KintoAdapter
import ParseAdapter
import TestSupport
import Testing

/// The three adapters take one settings value and fail with one error type (issue 50).
@Suite("One settings value and one error for every HTTP remote")
struct HTTPRemoteTests {
    @Test("a server answering 503 to everything: each adapter tries as often as the settings given to its init say, tells their watcher, and fails as unavailable with the status kept (Kinto's too)")
    func settingsReachTheRetryLoopAndTheStatusIsKept() throws {
        let holiday = try SchemaRegistry().schema(named: "Holiday")
        let makers: [(String, (String, HTTPRemoteSettings) throws -> any SyncRemote)] = [
            ("kinto", { try KintoRemote(bucketURL: $0 + "/v1/buckets/evsync", credentials: nil, settings: $1) }),
            ("parse", { try ParseRemote(serverURL: $0 + "/parse", credentials: ParseCredentials(applicationID: "app"), settings: $1) }),
            ("dav", { try DAVRemote(serverURL: $0 + "/", credentials: nil, settings: $1) }),
        ]
        for (name, make) in makers {
            let server = try ScriptedServer(then: ScriptedServer.Answer(503, body: "busy"))
            var retries = 0
            let settings = HTTPRemoteSettings(retry: RetryPolicy(attempts: 3, baseDelay: 0.01, maximumDelay: 0.02),
                                              onActivity: { if case .retrying = $0 { retries += 1 } })
            let remote = try make(server.url, settings)
            let error = try #require(throws: HTTPRemoteError.self, "\(name)") {
                try remote.changes(of: holiday, since: nil) { _ in true }
            }
            #expect(error.status == 503 && error.syncCode == .unavailable, "\(name): \(error)")
            #expect(error.message.contains("HTTP 503") && error.message.contains("gave up after 3 attempts"), "\(name): \(error)")
            #expect(server.requests.count == 3 && retries == 2, "\(name): \(server.requests.count) requests, \(retries) retries")
        }
    }
}
