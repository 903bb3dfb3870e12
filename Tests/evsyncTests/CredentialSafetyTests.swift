import Foundation
import Testing
import TestSupport

/// What `evsync sync` does to keep the password secret: it warns about an auth
/// file others can read, refuses to send credentials in clear text to another
/// machine unless told to, and leaves them in no core dump. No server is
/// needed: nothing here may reach one.
@Suite("CLI credential safety")
struct CredentialSafetyTests {
    static let unreachable = "http://127.0.0.1:1/v1/buckets/x"
    static let serverUnavailable: Int32 = 69

    // MARK: An auth file others can read

    @Test("an auth file others can read gets a one-line warning, and is still used", arguments: [0o644, 0o640, 0o604])
    func readableAuthFile(mode: Int) throws {
        try withSandbox { sandbox in
            let password = "Pw-" + UUID().uuidString
            let auth = try sandbox.write("auth", "me:\(password)")
            #expect(chmod(auth, mode_t(mode)) == 0)
            let result = try sandbox.run(["sync", "--remote", Self.unreachable, "--auth-file", auth], environment: ["EVSYNC_RETRIES": "1"])
            #expect(result.status == Self.serverUnavailable, "the sync went on: \(result)")
            let lines = result.stderr.split(separator: "\n").map(String.init)
            #expect(lines.count == 3 && lines[1] == "evsync: created a new store in \(sandbox.store.path)", "\(result)")
            #expect(lines.first == "evsync: warning: the auth file \(auth) can be read by other users (mode \(String(mode, radix: 8))): chmod 600 it")
            #expect(!result.stderr.contains(password) && !result.stdout.contains(password))
        }
    }

    @Test("an auth file only its owner can read is used without a warning")
    func privateAuthFile() throws {
        try withSandbox { sandbox in
            let auth = try sandbox.write("auth", "me:secret")
            #expect(chmod(auth, 0o600) == 0)
            let result = try sandbox.run(["sync", "--remote", Self.unreachable, "--auth-file", auth], environment: ["EVSYNC_RETRIES": "1"])
            #expect(result.status == Self.serverUnavailable, "\(result)")
            #expect(!result.stderr.contains("warning"), "\(result)")
        }
    }

    // MARK: CredentialSource in clear text to another machine

    /// `unshare -n`: the command runs with no network at all, so that even a
    /// build without the refusal sends nothing anywhere.
    static let noNetworkWorks: Bool = {
        guard let unshare = ["/usr/bin/unshare", "/bin/unshare"].first(where: FileManager.default.isExecutableFile) else { return false }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: unshare)
        process.arguments = ["-n", "true"]
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }()

    /// Runs `evsync sync --remote URL <extra>` with no network, credentials from
    /// `--auth-file` or `EVSYNC_AUTH`, one attempt per request.
    private func syncWithoutNetwork(_ sandbox: Sandbox, remote: String, extra: String = "", environment: String = "",
                                    credentials: CredentialSource?) throws -> CLIResult {
        let password = "Pw-" + UUID().uuidString
        let auth = try sandbox.write("auth", "me:\(password)")
        #expect(chmod(auth, 0o600) == 0)
        let source = switch credentials {
        case .file: "--auth-file '\(auth)'"
        case .environment: ""
        case nil: ""
        }
        let variables = "EVSYNC_RETRIES=1 " + (credentials == .environment ? "EVSYNC_AUTH='me:\(password)' " : "") + environment
        let result = try sandbox.launchShell("\(variables) exec unshare -n \"$EVSYNC_BINARY_PATH\" sync --remote '\(remote)' \(source) \(extra)").wait()
        #expect(!result.stderr.contains(password) && !result.stdout.contains(password), "\(result)")
        return result
    }

    enum CredentialSource: CaseIterable { case file, environment }

    @Test("credentials over plain http to a host that is not this machine are refused with 64, before the store or a connection",
          .enabled(if: noNetworkWorks, "needs unshare -n"),
          arguments: [
              "http://evsync-test.invalid/v1/buckets/x",
              "HTTP://Evsync-Test.Invalid:8888/v1/buckets/x",
              "http://192.0.2.1/v1/buckets/x",          // TEST-NET-1
              "http://[2001:db8::1]:8888/v1/buckets/x", // the documentation prefix
              "http://127.0.0.1.evsync-test.invalid/v1/buckets/x",
              "http://localhost.evsync-test.invalid/v1/buckets/x",
              "http://0.0.0.0:8888/v1/buckets/x",
          ], CredentialSource.allCases)
    func insecureAuthRefused(remote: String, credentials: CredentialSource) throws {
        try withSandbox { sandbox in
            let result = try syncWithoutNetwork(sandbox, remote: remote, credentials: credentials)
            #expect(result.status == Exit.usage, "\(result)")
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.count == 1, "\(result)")
            #expect(result.stderr.hasPrefix("evsync: refusing to send credentials unencrypted over http to "), "\(result)")
            #expect(result.stderr.contains("--allow-insecure-auth or EVSYNC_ALLOW_INSECURE_AUTH=1"), "\(result)")
            #expect(!FileManager.default.fileExists(atPath: sandbox.store.path), "refused before the store was opened")
        }
    }

    @Test("the refusal needs no network to happen: a name that never resolves")
    func insecureAuthRefusedWithTheNetworkUp() throws {
        try withSandbox { sandbox in
            let result = try sandbox.run(["sync", "--remote", "http://evsync-test.invalid/v1/buckets/x"],
                                         environment: ["EVSYNC_AUTH": "me:secret", "EVSYNC_RETRIES": "1"])
            #expect(result.status == Exit.usage, "a connection was tried (exit 69), or something else: \(result)")
            #expect(result.stderr == "evsync: refusing to send credentials unencrypted over http to evsync-test.invalid, which is not this machine: "
                + "use https (or, accepting that anyone on the way can read them, --allow-insecure-auth or EVSYNC_ALLOW_INSECURE_AUTH=1)\n")
        }
    }

    @Test("allowed, so a connection is tried (69 with no network): opted in, https, no credentials, or this machine",
          .enabled(if: noNetworkWorks, "needs unshare -n"),
          arguments: [
              ("http://evsync-test.invalid/v1/buckets/x", "--allow-insecure-auth", "", CredentialSource.file),
              ("http://192.0.2.1/v1/buckets/x", "", "EVSYNC_ALLOW_INSECURE_AUTH=1", .environment),
              ("https://evsync-test.invalid/v1/buckets/x", "", "", .file),
              ("http://127.0.0.2:1/v1/buckets/x", "", "", .file),
              ("http://localhost:1/v1/buckets/x", "", "", .environment),
              ("http://LOCALHOST:1/v1/buckets/x", "", "", .file),
              ("http://[::1]:1/v1/buckets/x", "", "", .file),
          ] as [(String, String, String, CredentialSource)])
    func insecureAuthAllowed(remote: String, flag: String, environment: String, credentials: CredentialSource) throws {
        try withSandbox { sandbox in
            let result = try syncWithoutNetwork(sandbox, remote: remote, extra: flag, environment: environment, credentials: credentials)
            #expect(result.status == Self.serverUnavailable, "\(result)")
            #expect(result.stderr.contains("cannot reach"), "\(result)")
        }
    }

    @Test("no credentials, nothing to protect: plain http to another machine is tried", .enabled(if: noNetworkWorks, "needs unshare -n"))
    func plainHTTPWithoutCredentials() throws {
        try withSandbox { sandbox in
            let result = try syncWithoutNetwork(sandbox, remote: "http://evsync-test.invalid/v1/buckets/x", credentials: nil)
            #expect(result.status == Self.serverUnavailable, "\(result)")
        }
    }

    // MARK: No password in a core dump

    /// Whether a core dump of a child would land, as a file named `core…`, in
    /// its working directory (`kernel.core_pattern` is a plain name, and the
    /// hard limit allows one): only then can a test look for it.
    static let coreFilesLandInTheWorkingDirectory: Bool = {
        guard let pattern = try? String(contentsOfFile: "/proc/sys/kernel/core_pattern", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines),
            pattern.hasPrefix("core"), !pattern.contains("/")
        else { return false }
        var limit = rlimit()
        return getrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &limit) == 0 && limit.rlim_max > 1 << 30
    }()

    @Test("a sync killed while it holds the credentials leaves no core file (with the password in it)",
          .enabled(if: coreFilesLandInTheWorkingDirectory, "core dumps do not land in the working directory here (kernel.core_pattern)"),
          arguments: CredentialSource.allCases)
    func noCoreDump(credentials: CredentialSource) throws {
        try withSandbox { sandbox in
            let password = "Pw-" + UUID().uuidString
            let auth = try sandbox.write("auth", "me:\(password)")
            #expect(chmod(auth, 0o600) == 0)
            let server = try SilentServer()
            let remote = "http://127.0.0.1:\(server.port)/v1/buckets/x"
            let source = credentials == .file ? "--auth-file '\(auth)'" : ""
            let variables = credentials == .environment ? "EVSYNC_AUTH='me:\(password)'" : ""
            // Core dumps on, and the Swift runtime's crash handler off, so a crash dumps core as it does by default.
            // One attempt: a sync that outlives the test gives up on the silent server after 30 s.
            let sync = try sandbox.launchShell("ulimit -c \"$(ulimit -H -c)\" && \(variables) SWIFT_BACKTRACE=enable=no EVSYNC_RETRIES=1 "
                + "exec \"$EVSYNC_BINARY_PATH\" sync --remote \(remote) \(source)")
            // Connected: the credentials are read, and the sync waits on a server that never answers.
            #expect(server.waitForConnection(seconds: 60), "the sync never connected")
            // A crash, as the kernel would deliver it. (Not SIGQUIT or SIGABRT: a child of
            // the test runner inherits its worker thread's mask, which blocks both.)
            kill(sync.pid, SIGSEGV)
            let result = sync.wait()
            #expect(result.status == -SIGSEGV, "\(result)")
            let cores = try FileManager.default.contentsOfDirectory(atPath: sandbox.root.path).filter { $0.hasPrefix("core") }
            for core in cores {
                let data = try Data(contentsOf: sandbox.root.appendingPathComponent(core))
                let holdsPassword = data.range(of: Data(password.utf8)) != nil
                Issue.record("a core file was written (\(data.count) bytes\(holdsPassword ? ", holding the password" : ""))")
            }
        }
    }
}

/// A TCP socket on 127.0.0.1 that takes connections and never answers.
private final class SilentServer {
    let port: Int
    private let socketFD: Int32

    init() throws {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(socketFD >= 0)
        self.socketFD = socketFD
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(socketFD, address, length) == 0 && listen(socketFD, 8) == 0 && getsockname(socketFD, address, &length) == 0
            }
        }
        try #require(bound, "cannot listen on 127.0.0.1: errno \(errno)")
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(socketFD) }

    /// Whether a client connects within `seconds` (the connection is left waiting, unanswered).
    func waitForConnection(seconds: Int) -> Bool {
        var entry = pollfd(fd: socketFD, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, Int32(seconds * 1000)) == 1
    }
}
