import TestSupport
import Foundation
import Testing

/// A remote URL that names a server of another kind is said to be one, never taken for wrong credentials
/// (exit 77 sends the user to reset a password that was right): each adapter checks the server speaks its
/// protocol (Kinto's `/v1/` capabilities, DAV's `OPTIONS` header, Parse's error answers) before it blames
/// the credentials. Real servers each way: Radicale, Kinto, the Parse stand-in.
@Suite("A server of the wrong kind")
struct WrongServerKindTests {
    static let notKinto: Int32 = 69

    @Test("a Kinto URL pointed at Radicale, with Radicale's own credentials, none, or wrong ones, says it is not a Kinto server",
          arguments: ["right", "none", "wrong"])
    func kintoURLAtRadicale(credentials: String) async throws {
        let dav = try await OwnDAV("radicale")
        let directory = try TemporaryDirectory("wrong-kind-kinto")
        let cli = Evsync(store: directory.file("store"))
        let wrong = directory.file("wrong")
        try Data("me:wrong".utf8).write(to: URL(fileURLWithPath: wrong))
        _ = chmod(wrong, 0o600)
        let auth = credentials == "right" ? ["--auth-file", dav.authFile] : credentials == "wrong" ? ["--auth-file", wrong] : []
        let url = dav.base + "v1/buckets/evsync"
        let output = try await cli.run(["sync", "--remote", url] + auth, environment: ["EVSYNC_RETRIES": "1"])
        #expect(output.status == Self.notKinto, "\(output)")
        #expect(output.stderr.hasSuffix("evsync: \(dav.base)v1 is not a Kinto server (GET /v1/ answered HTTP 401 Unauthorized): "
            + "the remote URL is wrong, not the credentials; a Kinto bucket URL looks like \(url)\n"), "\(output)")
        #expect(!output.stderr.contains("refused the credentials"), "\(output)")
    }

    @Test("a DAV URL pointed at Kinto says it is not a CalDAV/CardDAV server",
          .enabled(if: TestServer.isConfigured, TestServer.skipReason))
    func davURLAtKinto() async throws {
        let server = try #require(TestServer.url), authFile = try #require(TestServer.authFile)
        let directory = try TemporaryDirectory("wrong-kind-dav")
        let output = try await Evsync(store: directory.file("store"))
            .run(["sync", "--protocol", "dav", "--remote", server + "/", "--auth-file", authFile], environment: ["EVSYNC_RETRIES": "1"])
        #expect(output.status == Self.notKinto, "\(output)")
        #expect(output.stderr.contains("evsync: \(server)/ is not a CalDAV/CardDAV server (OPTIONS answered HTTP "), "\(output)")
        #expect(!output.stderr.contains("credentials"), "\(output)")
    }

    @Test("a Parse URL pointed at Radicale or Kinto says it is not a Parse server")
    func parseURLElsewhere() async throws {
        let dav = try await OwnDAV("radicale")
        let directory = try TemporaryDirectory("wrong-kind-parse")
        let cli = Evsync(store: directory.file("store"))
        var targets = [(dav.base + "parse", "HTTP 401")]
        if let kinto = TestServer.url { targets.append((kinto, "HTTP 404")) }
        for (url, status) in targets {
            let output = try await cli.run(["sync", "--protocol", "parse", "--remote", url],
                                           environment: ParseStandIn.environment.merging(["EVSYNC_RETRIES": "1"]) { $1 })
            #expect(output.status == Self.notKinto, "\(output)")
            #expect(output.stderr.contains("is not a Parse server (\(status) without Parse's {\"error\": …} answer): the remote URL is wrong"), "\(output)")
            #expect(!output.stderr.contains("refused the credentials"), "\(output)")
        }
    }

    @Test("wrong credentials on the right kind of server are still said to be wrong credentials (77)",
          .enabled(if: TestServer.isConfigured, TestServer.skipReason))
    func wrongCredentialsStillSaySo() async throws {
        let dav = try await OwnDAV("radicale")
        let parse = try await ParseStandIn()
        let directory = try TemporaryDirectory("wrong-kind-credentials")
        let cli = Evsync(store: directory.file("store"))
        let wrong = directory.file("wrong")
        try Data("me:wrong".utf8).write(to: URL(fileURLWithPath: wrong))
        _ = chmod(wrong, 0o600)
        let radicale = try await cli.run(["sync", "--protocol", "dav", "--remote", dav.base, "--auth-file", wrong], environment: ["EVSYNC_RETRIES": "1"])
        #expect(radicale.status == 77 && radicale.stderr.contains("the server refused the credentials"), "\(radicale)")
        let store2 = Evsync(store: directory.file("store2"))
        let parsed = try await store2.run(["sync", "--protocol", "parse", "--remote", parse.url],
                                          environment: ["EVSYNC_PARSE_APPLICATION_ID": ParseStandIn.applicationID, "EVSYNC_PARSE_REST_API_KEY": "wrong",
                                                        "EVSYNC_RETRIES": "1"])
        #expect(parsed.status == 77 && parsed.stderr.contains("refused the credentials"), "\(parsed)")
    }
}
