import Foundation
import EventStore
import Testing

/// What reaches another host when a server points there, for each adapter: `evsync sync` runs inside `unshare -n`
/// beside `Tools/scripted-hosts`, which answers on 127.0.0.1 (the server given) and 127.0.0.2 (another machine,
/// same port) and logs every request of each. Credentials and requests go to the server given only.
@Suite("CLI: credentials stay with the server given (another host inside unshare -n)")
struct OtherHostCLITests {
    /// `unshare -n` and `ip` work here: a new network namespace, with 127.0.0.2 added to its loopback.
    static let works: Bool = {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "exec unshare -n /bin/sh -c 'ip link set lo up && ip addr add 127.0.0.2/8 dev lo'"]
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }()

    static let given = "127.0.0.1:8080"
    static let other = "127.0.0.2:8080"
    static let password = "Pw-" + UUID().uuidString

    struct Logged {
        var host: String
        var line: String
        var headers: [String: String]
    }

    /// Runs `evsync sync --remote REMOTE` in a namespace of its own, the hosts answering from `script`; what it
    /// printed, and the requests each host had.
    static func sync(_ sandbox: Sandbox, remote: String, script: [String: [[String: Any]]], environment: String) throws -> (CLIResult, [Logged]) {
        let scriptFile = sandbox.root.appendingPathComponent("script.json").path
        try JSONSerialization.data(withJSONObject: script).write(to: URL(fileURLWithPath: scriptFile))
        let log = sandbox.root.appendingPathComponent("log.jsonl").path
        let ready = sandbox.root.appendingPathComponent("ready").path
        let tool = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Tools/scripted-hosts").path
        let inner = sandbox.root.appendingPathComponent("inner.sh").path
        try """
        ip link set lo up && ip addr add 127.0.0.2/8 dev lo || exit 90
        '\(tool)' --script '\(scriptFile)' --log '\(log)' --ready '\(ready)' &
        hosts=$!
        while [ ! -e '\(ready)' ]; do kill -0 $hosts 2>/dev/null || exit 91; sleep 0.05; done
        EVSYNC_RETRIES=1 \(environment) "$EVSYNC_BINARY_PATH" sync --remote '\(remote)'
        status=$?
        kill $hosts
        exit $status
        """.write(toFile: inner, atomically: true, encoding: .utf8)
        let result = try sandbox.launchShell("exec unshare -n /bin/sh '\(inner)'").wait()
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        let logged = try text.split(separator: "\n").map { line in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            return Logged(host: object["host"] as? String ?? "", line: "\(object["method"] ?? "") \(object["path"] ?? "")",
                          headers: object["headers"] as? [String: String] ?? [:])
        }
        #expect(!result.stderr.contains(password) && !result.stdout.contains(password), "\(result)")
        return (result, logged)
    }

    static func answer(_ status: Int, location: String? = nil, body: String = "") -> [String: Any] {
        ["status": status, "headers": location.map { ["Location": $0] } ?? ["Content-Type": "application/xml"], "body": body]
    }

    static func multistatus(_ inner: String) -> [String: Any] {
        answer(207, body: #"<?xml version="1.0"?><d:multistatus xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav">"# + inner + "</d:multistatus>")
    }

    static func principal(_ href: String) -> [String: Any] {
        multistatus(#"<d:response><d:href>/</d:href><d:propstat><d:prop><d:current-user-principal><d:href>\#(href)</d:href></d:current-user-principal></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>"#)
    }

    static func homes(_ href: String) -> [String: Any] {
        multistatus(#"<d:response><d:href>/p/</d:href><d:propstat><d:prop><c:calendar-home-set><d:href>\#(href)</d:href></c:calendar-home-set></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>"#)
    }

    @Test("a DAV server pointing to another host (redirect 301, 302, 307, 308, principal, calendar-home-set) is refused in one line naming it; nothing reaches that host",
          .enabled(if: works, "needs unshare -n and ip"), arguments: ["301", "302", "307", "308", "principal", "calendar-home-set"])
    func davElsewhere(way: String) throws {
        try withSandbox { sandbox in
            let elsewhere = "http://\(Self.other)/p/"
            let first = Int(way).map { Self.answer($0, location: elsewhere) } ?? Self.principal(way == "principal" ? elsewhere : "/p/")
            let script = [Self.given: [first, Self.homes(elsewhere)], Self.other: [Self.principal("/p/")]]
            let (result, logged) = try Self.sync(sandbox, remote: "dav+http://\(Self.given)/", script: script,
                                                 environment: "EVSYNC_AUTH='me:\(Self.password)'")
            #expect(result.status == 69, "\(result)")
            let what = Int(way).map { "a redirect (HTTP \($0)) of /" } ?? "the \(way == "principal" ? "current-user-principal" : way)"
            #expect(result.stderr.hasSuffix("evsync: the server at http://\(Self.given)/ points \(what) to another server, http://\(Self.other): "
                + "refusing to follow it, as credentials go only to http://\(Self.given)\n"), "\(result)")
            #expect(!logged.isEmpty && logged.allSatisfy { $0.host == Self.given }, "\(logged.map { "\($0.host) \($0.line)" })")
            #expect(logged.allSatisfy { $0.headers["authorization"] != nil })
        }
    }

    @Test("a Kinto or Parse server redirecting (301, 302, 307, 308) to another host is not followed: the sync fails naming it, nothing reaches that host",
          .enabled(if: works, "needs unshare -n and ip"), arguments: [301, 302, 307, 308])
    func kintoAndParseElsewhere(status: Int) throws {
        let remotes = [
            ("http://\(Self.given)/v1/buckets/x", "http://\(Self.other)/v1/buckets/x", "EVSYNC_AUTH='me:\(Self.password)'", "authorization"),
            ("parse+http://\(Self.given)/parse", "http://\(Self.other)/parse",
             "EVSYNC_PARSE_APPLICATION_ID=app EVSYNC_PARSE_REST_API_KEY='\(Self.password)'", "x-parse-rest-api-key"),
        ]
        for (remote, elsewhere, environment, secretHeader) in remotes {
            try withSandbox { sandbox in
                let (result, logged) = try Self.sync(sandbox, remote: remote, script: [Self.given: [Self.answer(status, location: elsewhere)],
                                                                                       Self.other: [Self.answer(200)]], environment: environment)
                #expect(result.status == 69, "\(result)")
                let lines = result.stderr.split(separator: "\n").filter { !$0.contains("created a new store") }
                #expect(lines.count == 1 && lines[0].contains("HTTP \(status)") && lines[0].contains(elsewhere), "\(result)")
                #expect(!logged.isEmpty && logged.allSatisfy { $0.host == Self.given }, "\(logged.map { "\($0.host) \($0.line)" })")
                #expect(logged.allSatisfy { $0.headers[secretHeader] != nil }, "\(logged.map(\.headers))")
            }
        }
    }

    @Test("DAV members on another host or outside the collection are skipped, each named; the member inside arrives; nothing reaches the other host",
          .enabled(if: works, "needs unshare -n and ip"))
    func davMembersElsewhere() throws {
        try withSandbox { sandbox in
            func collection(_ name: String, _ type: String) -> [String: Any] {
                Self.multistatus(#"<d:response><d:href>/p/\#(name)/</d:href><d:propstat><d:prop><d:resourcetype><d:collection/>\#(type)</d:resourcetype></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>"#)
            }
            func member(_ href: String, uid: String) -> String {
                let item = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:x", "BEGIN:VEVENT", "UID:\(uid)", "DTSTAMP:20270101T000000Z",
                            "DTSTART;VALUE=DATE:20270301", "SUMMARY:\(uid.uppercased())", "END:VEVENT", "END:VCALENDAR", ""].joined(separator: "&#13;\n")
                return #"<d:response><d:href>\#(href)</d:href><d:propstat><d:prop><d:getetag>"1"</d:getetag><c:calendar-data>\#(item)</c:calendar-data></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>"#
            }
            let elsewhere = ["http://\(Self.other)/stolen/y.ics", "/victim/private/x.ics", "/p/holidays/../../etc/passwd"]
            let listing = member("/p/holidays/a.ics", uid: "a") + elsewhere.enumerated().map { member($1, uid: "o\($0)") }.joined()
            let script = [Self.given: [
                Self.principal("/p/"),
                Self.multistatus(#"<d:response><d:href>/p/</d:href><d:propstat><d:prop><c:calendar-home-set><d:href>/p/</d:href></c:calendar-home-set><a:addressbook-home-set xmlns:a="urn:ietf:params:xml:ns:carddav"><d:href>/p/</d:href></a:addressbook-home-set></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>"#),
                collection("birthdays", #"<a:addressbook xmlns:a="urn:ietf:params:xml:ns:carddav"/>"#),
                Self.multistatus("<d:sync-token>b1</d:sync-token>"),
                collection("holidays", "<c:calendar/>"),
                Self.multistatus(listing + "<d:sync-token>t1</d:sync-token>"),
                Self.answer(404),
            ], Self.other: [Self.answer(200)]]
            let (result, logged) = try Self.sync(sandbox, remote: "dav+http://\(Self.given)/", script: script,
                                                 environment: "EVSYNC_AUTH='me:\(Self.password)'")
            #expect(result.status == 0, "\(result)")
            for href in elsewhere {
                #expect(result.stderr.contains("\(href) is not inside the collection /p/holidays: "), "\(href): \(result)")
            }
            #expect(logged.allSatisfy { $0.host == Self.given }, "\(logged.map { "\($0.host) \($0.line)" })")
            #expect(logged.count == 6, "\(logged.map(\.line))")
            let listed = try sandbox.succeed(["list", "Holiday", "--json"]).stdout
            #expect(listed.contains(#""id":"a""#) && !listed.contains(#""o0""#), "\(listed)")
        }
    }
}
