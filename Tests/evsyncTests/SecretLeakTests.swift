import Foundation
import Testing

/// No output of evsync ever holds a secret: a known password is fed through every way credentials come
/// in, with the mistakes a user makes with each (a password where a path belongs, no user, no colon,
/// credentials in the URL, the wrong variable), and looked for on stdout and stderr of every command
/// that reads them. The server is unreachable (127.0.0.1:1): nothing is sent anywhere.
@Suite("CLI: no secret in any output")
struct SecretLeakTests {
    /// Stands for the password in the cases below; each run puts a fresh one in its place.
    static let secret = "SECRET"
    static let kinto = "http://127.0.0.1:1/v1/buckets/x"
    static let parse = "parse+http://127.0.0.1:1/parse"
    static let dav = "dav+http://127.0.0.1:1/user/calendar/"

    struct Case: CustomTestStringConvertible, Sendable {
        let arguments: [String]
        let environment: [String: String]
        /// Whether `arguments` name a file holding the secret (created by the test), at `FILE`.
        var fileHolds: String? = nil
        var testDescription: String { "\(arguments.joined(separator: " ")) \(environment.map { "\($0)=\($1)" }.sorted().joined(separator: " "))" }
    }

    static let remotes = [kinto, parse, dav]

    static let cases: [Case] = {
        var cases: [Case] = []
        // Commands that read credentials, with the remote given each way.
        let commands: [(String) -> [String]] = [
            { ["sync", "--remote", $0] },
            { ["sync", "-v", "--remote", $0] },
            { ["sync", "--json", "--remote", $0] },
            { _ in ["verify", "--remote", "--repair", "--json"] },  // the remote from EVSYNC_REMOTE
        ]
        for remote in remotes {
            for command in commands {
                let arguments = command(remote)
                var environment = arguments.first == "verify" ? ["EVSYNC_REMOTE": remote] : [:]
                // The right ways, which must not echo either.
                cases.append(Case(arguments: arguments, environment: environment.merging(["EVSYNC_AUTH": "me:\(secret)"]) { $1 }))
                // A password alone, no user, no colon.
                for value in [secret, ":\(secret)", "\(secret):", "me:\(secret)\nme:\(secret)"] {
                    cases.append(Case(arguments: arguments, environment: environment.merging(["EVSYNC_AUTH": value]) { $1 }))
                }
                // The credentials where a file's path belongs.
                for value in ["me:\(secret)", secret, "/nonexistent/\(secret)"] {
                    cases.append(Case(arguments: arguments, environment: environment.merging(["EVSYNC_AUTH_FILE": value]) { $1 }))
                    cases.append(Case(arguments: arguments + ["--auth-file", value], environment: environment))
                }
                // A file holding a password alone, or with no user, or a readable one.
                for content in [secret, ":\(secret)", "me:\(secret)"] {
                    cases.append(Case(arguments: arguments + ["--auth-file", "FILE"], environment: environment, fileHolds: content))
                    cases.append(Case(arguments: arguments, environment: environment.merging(["EVSYNC_AUTH_FILE": "FILE"]) { $1 }, fileHolds: content))
                }
                // Parse's keys, right or misplaced.
                for name in ["EVSYNC_PARSE_REST_API_KEY", "EVSYNC_PARSE_MASTER_KEY", "EVSYNC_PARSE_SESSION_TOKEN", "EVSYNC_PARSE_APPLICATION_ID"] {
                    environment[name] = secret
                    cases.append(Case(arguments: arguments, environment: environment))
                    environment[name] = nil
                }
            }
            // Credentials in the URL itself, every shape of it, given as an option, a variable, or to `remote`.
            let scheme = remote.components(separatedBy: "://")[0]
            let rest = remote.components(separatedBy: "://")[1]
            for url in ["\(scheme)://me:\(secret)@\(rest)", "\(scheme)://\(secret)@\(rest)", "me:\(secret)@\(rest)",
                        "\(scheme)://me:\(secret)@\(rest)?x=1", "\(scheme)://me:\(secret)@127.0.0.1:1/", "me:\(secret)"] {
                cases.append(Case(arguments: ["sync", "--remote", url], environment: [:]))
                cases.append(Case(arguments: ["sync"], environment: ["EVSYNC_REMOTE": url]))
                cases.append(Case(arguments: ["verify", "--remote"], environment: ["EVSYNC_REMOTE": url]))
                cases.append(Case(arguments: ["remote", url], environment: [:]))
                cases.append(Case(arguments: ["remote", "set", url], environment: [:]))
            }
        }
        return cases
    }()

    @Test("a known password given every way, with every mistake, is in no output", arguments: cases)
    func noSecretInOutput(_ given: Case) throws {
        try withSandbox { sandbox in
            let password = "Pw-" + UUID().uuidString
            let file = try given.fileHolds.map { content in
                let path = try sandbox.write("auth", content.replacingOccurrences(of: Self.secret, with: password))
                #expect(chmod(path, 0o644) == 0)  // readable by others: the warning names the file, never what it holds
                return path
            }
            func filled(_ text: String) -> String {
                text == "FILE" ? (file ?? text) : text.replacingOccurrences(of: Self.secret, with: password)
            }
            var environment: [String: String?] = ["EVSYNC_RETRIES": "1"]
            for (name, value) in given.environment { environment[name] = filled(value) }
            let result = try sandbox.run(given.arguments.map(filled), environment: environment)
            #expect(result.status != Exit.ok || given.arguments.first == "remote", "\(result)")
            #expect(!result.stdout.contains(password) && !result.stderr.contains(password), "the password was printed: \(result)")
            // Nor a part of it long enough to tell (a password cut by a width limit still leaks).
            let head = String(password.prefix(12))
            #expect(!result.stdout.contains(head) && !result.stderr.contains(head), "part of the password was printed: \(result)")
        }
    }

    @Test("EVSYNC_AUTH_FILE or --auth-file holding user:password says so, and what was meant, without it",
          arguments: [("EVSYNC_AUTH_FILE", true), ("--auth-file", false)])
    func credentialsWhereAPathBelongs(source: String, isVariable: Bool) throws {
        try withSandbox { sandbox in
            let value = "me:Pw-" + UUID().uuidString
            let result = try sandbox.run(["sync", "--remote", Self.kinto] + (isVariable ? [] : ["--auth-file", value]),
                                         environment: isVariable ? ["EVSYNC_AUTH_FILE": value] : [:])
            #expect(result.status == Exit.noInput, "\(result)")
            #expect(result.stderr == "evsync: \(source) names no readable file (it looks like user:password: did you mean EVSYNC_AUTH?)\n", "\(result)")
        }
    }
}
