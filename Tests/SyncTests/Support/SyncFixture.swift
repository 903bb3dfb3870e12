@testable import EventStore
@testable import EventSync
@testable import KintoAdapter
import TestSupport
import Foundation
import Synchronization
import Testing

/// The Kinto server the integration tests use: `EVSYNC_TEST_KINTO` (server
/// root, e.g. http://127.0.0.1:8899/v1) and `EVSYNC_TEST_KINTO_AUTH_FILE`
/// (a file holding user:password). `Tools/test` sets both; without them the
/// server tests are skipped and the rest still run.
enum TestServer {
    static let url: String? = {
        guard let value = ProcessInfo.processInfo.environment["EVSYNC_TEST_KINTO"], !value.isEmpty else { return nil }
        return value.hasSuffix("/") ? String(value.dropLast()) : value
    }()

    static let authFile: String? = {
        guard let value = ProcessInfo.processInfo.environment["EVSYNC_TEST_KINTO_AUTH_FILE"], !value.isEmpty else { return nil }
        return value
    }()

    static var isConfigured: Bool { url != nil && authFile != nil }

    static let skipReason: Comment = "needs a Kinto server: set EVSYNC_TEST_KINTO and EVSYNC_TEST_KINTO_AUTH_FILE (Tools/test does)"

    /// `user:password` from the auth file.
    static func credentials() throws -> String {
        let path = try #require(authFile)
        let text = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .newlines)
        #expect(text.contains(":"))
        return text
    }

    /// A bucket nobody else uses: `t` and a UUID, lower-cased, without dashes.
    static func freshBucket() -> String {
        "t" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    }
}

/// One integration test's world: a fresh store directory, a fresh bucket on
/// the test server, the `evsync` CLI on that store and the web app on that bucket.
struct SyncFixture: Sendable {
    let directory: TemporaryDirectory
    let cli: Evsync
    let web: KintoWebApp
    let authFile: String

    var remote: String { web.bucketURL }
    var password: String { String(web.credentials.split(separator: ":", maxSplits: 1).last ?? "") }

    init() throws {
        try self.init(server: try #require(TestServer.url), authFile: try #require(TestServer.authFile))
        BucketRegistry.current?.register(web)
    }

    /// The same world on a Kinto of its own: for a test of thousands of records, which on the shared server
    /// would queue the rest of the suite behind them and slow its memory backend for every test after.
    init(on kinto: OwnKinto) throws {
        try self.init(server: kinto.server, authFile: kinto.authFile)
    }

    private init(server: String, authFile: String) throws {
        directory = try TemporaryDirectory("synctests-store")
        cli = Evsync(store: directory.file("store"))
        let credentials = try String(contentsOfFile: authFile, encoding: .utf8).trimmingCharacters(in: .newlines)
        web = KintoWebApp(server: server, credentials: credentials, bucket: TestServer.freshBucket())
        self.authFile = authFile
    }

    /// Another store syncing with the same bucket.
    func secondStore() -> Evsync {
        Evsync(store: directory.file("store2"))
    }

    /// `evsync sync --remote BUCKET --auth-file FILE --json <extra>` on `store` (default: this fixture's).
    func sync(_ extra: [String] = [], store: Evsync? = nil, environment: [String: String] = [:]) async throws -> ProcessOutput {
        try await (store ?? cli).run(["sync", "--remote", remote, "--auth-file", authFile, "--json"] + extra, environment: environment)
    }

    /// A sync that must succeed; its `--json` report.
    func syncReport(_ extra: [String] = [], store: Evsync? = nil) async throws -> SyncJSON {
        let output = try await sync(extra, store: store)
        guard output.status == 0, let line = output.stdoutLines.last else {
            throw ProcessFailure(command: "evsync sync \(extra.joined(separator: " "))", output: output)
        }
        return try SyncJSON(line)
    }
}

func newID() -> String { "r" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased() }

/// Deletes the buckets a test's fixtures made once the test ends, pass or
/// fail, so the server stays small: Kinto's memory backend gets slower with
/// every record it holds (its permission lookups scan them all), which
/// would slow down later tests and later runs against the same server.
struct DeleteTestBuckets: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    func provideScope(for test: Test, testCase: Test.Case?,
                      performing function: @Sendable () async throws -> Void) async throws {
        let registry = BucketRegistry()
        do {
            try await BucketRegistry.$current.withValue(registry) { try await function() }
        } catch {
            await registry.deleteAll()
            throw error
        }
        await registry.deleteAll()
    }
}

extension Trait where Self == DeleteTestBuckets {
    static var deletesTestBuckets: Self { DeleteTestBuckets() }
}

/// The buckets made during one test.
final class BucketRegistry: Sendable {
    @TaskLocal static var current: BucketRegistry?
    private let buckets = Mutex<[KintoWebApp]>([])

    func register(_ web: KintoWebApp) {
        buckets.withLock { $0.append(web) }
    }

    func deleteAll() async {
        for web in buckets.withLock({ $0 }) {
            _ = try? await web.request("DELETE", "/buckets/\(web.bucket)")
        }
    }
}
