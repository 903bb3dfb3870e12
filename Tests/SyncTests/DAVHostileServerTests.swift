@testable import DAVAdapter
@testable import EventStore
@testable import EventSync
import Foundation
import HTTPTransport
import Testing
import TestSupport

/// DAVRemote against a scripted hostile server: hrefs that leave the collection, links and redirects to another
/// server (another port of 127.0.0.1 here, another origin all the same; `OtherHostCLITests` runs another host),
/// answers one bad item of which would make the whole unreadable, and a 507 chain that never ends. Each server
/// logs what reached it, and the tests check it.
@Suite("DAV hostile server")
struct DAVHostileServerTests {
    typealias Scripted = DAVScriptedTests

    static func item(_ uid: String) -> String {
        ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:x", "BEGIN:VEVENT", "UID:\(uid)", "DTSTAMP:20270101T000000Z",
         "DTSTART;VALUE=DATE:20270301", "SUMMARY:\(uid.uppercased())", "END:VEVENT", "END:VCALENDAR", ""].joined(separator: "&#13;\n")
    }

    /// A sync-collection response for `href` carrying `uid`'s item.
    static func carried(_ href: String, uid: String, status: String = "HTTP/1.1 200 OK") -> String {
        #"<d:response><d:href>\#(href)</d:href><d:propstat><d:prop><d:getetag>"1"</d:getetag><c:calendar-data>\#(item(uid))</c:calendar-data></d:prop><d:status>\#(status)</d:status></d:propstat></d:response>"#
    }

    /// Every spelling of an href that leaves `/p/holidays/`, and what the skip names.
    static func outsideHrefs(other: ScriptedServer) -> [String] {
        ["/victim/private/x.ics", other.url + "/stolen/y.ics", "/p/holidays/../../../etc/passwd", "/p/holidays/%2e%2e/%2e%2e/z.ics",
         "/p/holidays/sub%2F..%2F..%2Fw.ics", "../other/v.ics", "/p/holidaysX/u.ics"]
    }

    @Test("members outside the collection, malformed responses and a garbage status are skipped, each named; the member inside arrives; nothing else is asked for")
    func outsideMembersAreSkipped() throws {
        let other = try ScriptedServer(then: ScriptedServer.Answer(200))
        let outside = Self.outsideHrefs(other: other)
        let listing = Self.carried("/p/holidays/a.ics", uid: "a") + outside.enumerated().map { Self.carried($1, uid: "o\($0)") }.joined()
            + #"<d:response><d:propstat><d:prop><d:getetag>"1"</d:getetag></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>"#
            + Self.carried("/p/holidays/g.ics", uid: "g", status: "garbage 99999999999999")
            + #"<d:response><d:href>/p/holidays/h.ics</d:href><d:status>HTTP/1.1 99999 Gone</d:status></d:response>"#
            + "<d:sync-token>t1</d:sync-token>"
        let server = try ScriptedServer(Scripted.discovery(listingReports: true) + [Scripted.multistatus(listing)], then: ScriptedServer.Answer(500))
        let (remote, holiday) = try Scripted.holidayRemote(server)
        let pages = try Scripted.pull(remote, holiday, since: nil)
        #expect(try Scripted.records(pages).map(\.id) == ["a"])
        let reasons = pages.flatMap(\.skipped).map(\.reason)
        #expect(pages.flatMap(\.skipped).allSatisfy { $0.id == nil })
        for href in outside {
            #expect(reasons.contains { $0.hasPrefix("\(href) is not inside the collection /p/holidays: ") }, "\(href): \(reasons)")
        }
        #expect(reasons.contains("\(other.url)/stolen/y.ics is not inside the collection /p/holidays: it is on another server, \(other.url)"), "\(reasons)")
        #expect(reasons.contains("the server's answer for /p/holidays has a <response> without an <href>"), "\(reasons)")
        #expect(reasons.contains("the server's answer for /p/holidays has /p/holidays/g.ics: its status 'garbage 99999999999999' is not an HTTP status line"), "\(reasons)")
        #expect(reasons.contains("the server's answer for /p/holidays has /p/holidays/h.ics: its status 'HTTP/1.1 99999 Gone' is not an HTTP status line"), "\(reasons)")
        #expect(reasons.count == outside.count + 3, "\(reasons)")
        #expect(pages.last?.cursor.map { DAVCursor($0).token } == "t1")
        // The listing carried the body: one REPORT after discovery, and nothing for the other server.
        #expect(server.requests.count == Scripted.discovery().count + 1, "\(server.requests.map(\.line))")
        #expect(other.requests.isEmpty, "\(other.requests.map(\.line))")
    }

    @Test("a push never writes outside the collection: an update or delete of an href outside is refused alone, unsent; a create's Location elsewhere is not followed")
    func pushStaysInside() throws {
        let other = try ScriptedServer(then: ScriptedServer.Answer(200))
        let outside = Self.outsideHrefs(other: other)
        let server = try ScriptedServer(Scripted.discovery() + [ScriptedServer.Answer(201, headers: ["ETag": #""9""#, "Location": other.url + "/stolen/b.ics"])],
                                        then: ScriptedServer.Answer(500))
        let remote = try DAVRemote(serverURL: server.url + "/", credentials: try Credentials(userPassword: "me:secret"))
        remote.settings.retry.attempts = 1
        let holiday = try SchemaRegistry().schema(named: "Holiday")
        try remote.prepare([(holiday, nil)])
        let writes: [RemoteOperation] = outside.flatMap { href in
            [RemoteOperation.update(id: "x", fields: ["name": "X", "date": "2027-03-01"], version: DAVVersion(etag: #""1""#, href: href).remoteVersion),
             .delete(id: "x", version: DAVVersion(etag: #""1""#, href: href).remoteVersion)]
        } + [.create(id: "b", fields: ["name": "B", "date": "2027-03-02"])]
        let outcomes = try remote.push(writes, of: holiday)
        for (operation, outcome) in zip(writes, outcomes).dropLast() {
            guard case .rejected(_, let message) = outcome else { Issue.record("\(operation) was not refused: \(outcome)"); continue }
            #expect(message.contains(" is not inside the collection /p/holidays: "), "\(message)")
        }
        guard case .applied = outcomes.last else { Issue.record("the create inside is pushed: \(String(describing: outcomes.last))"); return }
        let sent = server.requests.dropFirst(Scripted.discovery().count).map(\.line)
        #expect(sent == ["PUT /p/holidays/b.ics HTTP/1.1"], "\(sent)")
        #expect(other.requests.isEmpty, "\(other.requests.map(\.line))")
    }

    @Test("a redirect, principal or home set on another origin is refused with one line naming it; no request reaches it",
          arguments: ["301", "302", "307", "308", "principal", "calendar-home-set"])
    func linksElsewhere(way: String) throws {
        let other = try ScriptedServer(then: Scripted.multistatus(""))
        let principal = way == "principal" ? other.url + "/p/" : "/p/"
        let home = way == "calendar-home-set" ? other.url + "/p/" : "/p/"
        let first = Int(way).map { ScriptedServer.Answer($0, headers: ["Location": other.url + "/"]) }
            ?? Scripted.multistatus(#"<d:response><d:href>/</d:href><d:propstat><d:prop><d:current-user-principal><d:href>\#(principal)</d:href></d:current-user-principal></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>"#)
        let server = try ScriptedServer([first,
            Scripted.multistatus(#"<d:response><d:href>/p/</d:href><d:propstat><d:prop><c:calendar-home-set><d:href>\#(home)</d:href></c:calendar-home-set></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>"#),
        ], then: ScriptedServer.Answer(404))
        let remote = try DAVRemote(serverURL: server.url + "/", credentials: try Credentials(userPassword: "me:secret"))
        remote.settings.retry.attempts = 1
        let holiday = try SchemaRegistry().schema(named: "Holiday")
        try remote.prepare([(holiday, nil)])
        let error = #expect(throws: HTTPRemoteError.self) { try Scripted.pull(remote, holiday, since: nil) }
        let what = Int(way).map { "a redirect (HTTP \($0)) of /" } ?? "the \(way == "principal" ? "current-user-principal" : way)"
        #expect(error?.message == "the server at \(server.url)/ points \(what) to another server, \(other.url): refusing to follow it, "
            + "as credentials go only to \(server.url)", "\(String(describing: error))")
        #expect(!(error?.message.contains("\n") ?? true))
        #expect(other.requests.isEmpty, "\(other.requests.map(\.line))")
        #expect(server.requests.allSatisfy { $0.headers["authorization"] != nil })
    }

    @Test("one member whose body is not UTF-8 is skipped with its reason; the member beside it arrives")
    func notUTF8() throws {
        func multistatus(_ parts: [[UInt8]]) -> ScriptedServer.Answer {
            let head = Array(#"<?xml version="1.0"?><d:multistatus xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav">"#.utf8)
            return ScriptedServer.Answer(207, headers: ["Content-Type": "application/xml"], bytes: head + parts.joined() + Array("</d:multistatus>".utf8))
        }
        let good = Array(Self.carried("/p/holidays/a.ics", uid: "a").utf8)
        let bad = Array(Self.carried("/p/holidays/b.ics", uid: "b").utf8).map { $0 == UInt8(ascii: "B") ? 0xFF : $0 }
        let server = try ScriptedServer(Scripted.discovery() + [
            multistatus([good, bad, Array("<d:sync-token>t1</d:sync-token>".utf8)]),
            Scripted.multistatus(Scripted.member("/p/holidays/a.ics", etag: "1") + Scripted.member("/p/holidays/b.ics", etag: "1") + "<d:sync-token>t1</d:sync-token>"),
            multistatus([good, bad]),
            multistatus([good]),
            multistatus([bad]),
        ], then: ScriptedServer.Answer(500))
        let (remote, holiday) = try Scripted.holidayRemote(server)
        let pages = try Scripted.pull(remote, holiday, since: nil)
        #expect(try Scripted.records(pages).map(\.id) == ["a"])
        let skipped = pages.flatMap(\.skipped)
        #expect(skipped.map(\.id) == ["b"])
        #expect(skipped.first?.reason.hasPrefix("/p/holidays/b.ics cannot be read: ") == true, "\(skipped)")
        #expect(skipped.first?.reason.contains("not UTF-8") == true, "\(skipped)")
        #expect(pages.last?.cursor.map { DAVCursor($0).token } == "t1")
    }

    @Test("a 507 chain: each answer is a checkpoint with its token; one that never ends stops with an error after the bound, having handed over every answer")
    func endlessChain() throws {
        let answers = (1...5).map { n in
            Scripted.multistatus(Self.carried("/p/holidays/m\(n).ics", uid: "m\(n)")
                + #"<d:response><d:href>/p/holidays/</d:href><d:status>HTTP/1.1 507 Insufficient Storage</d:status></d:response><d:sync-token>t\#(n)</d:sync-token>"#)
        }
        let server = try ScriptedServer(Scripted.discovery(listingReports: true) + answers, then: ScriptedServer.Answer(500))
        let (remote, holiday) = try Scripted.holidayRemote(server)
        remote.maximumChainedAnswers = 4
        var pages: [RemotePage] = []
        let error = #expect(throws: HTTPRemoteError.self) { try remote.changes(of: holiday, since: nil) { pages.append($0); return true } }
        #expect(error?.message == "the server cut its sync-collection listing of /p/holidays short (507) 4 times in a row; "
            + "what those answers brought is kept: sync again to go on from there", "\(String(describing: error))")
        #expect(try Scripted.records(pages).map(\.id) == ["m1", "m2", "m3", "m4"])
        #expect(pages.map(\.isCheckpoint) == [true, true, true, true])
        #expect(pages.map { $0.cursor.map { DAVCursor($0).token } } == ["t1", "t2", "t3", "t4"])
        let reports = server.requests.filter { $0.line.hasPrefix("REPORT") }.map(\.body)
        #expect(reports.count == 4 && reports[3].contains("<sync-token>t3</sync-token>"), "\(reports)")
    }

    @Test("a sync stopped in a 507 chain keeps every answer it had, and the next goes on from the last token")
    func chainKeepsWhatItHad() async throws {
        let answers = (1...3).map { n in
            Scripted.multistatus(Self.carried("/p/holidays/m\(n).ics", uid: "m\(n)")
                + #"<d:response><d:href>/p/holidays/</d:href><d:status>HTTP/1.1 507 Insufficient Storage</d:status></d:response><d:sync-token>t\#(n)</d:sync-token>"#)
        }
        // The store's Birthday is synced first: an empty address book.
        let discovery = Scripted.discovery(listingReports: true)
        let birthdays = Scripted.multistatus(#"<d:response><d:href>/p/birthdays/</d:href><d:propstat><d:prop><d:resourcetype><d:collection/><a:addressbook/></d:resourcetype></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>"#)
        let server = try ScriptedServer(discovery.prefix(2) + [birthdays, Scripted.multistatus("<d:sync-token>b1</d:sync-token>"), discovery[2]] + answers,
                                        then: ScriptedServer.Answer(500))
        let directory = try TemporaryDirectory()
        let store = try Store(directory: directory.file("store"), create: true)
        let url = server.url + "/"
        let engine = SyncEngine(store: store) {
            let remote = try DAVRemote(serverURL: url, credentials: nil)
            remote.settings.retry.attempts = 1
            remote.maximumChainedAnswers = 3
            return remote
        }
        let error = await #expect(throws: SyncError.self) { try await engine.sync() }
        #expect(error?.message.contains("507") == true, "\(String(describing: error))")
        #expect(try store.records("Holiday").map(\.id).sorted() == ["m1", "m2", "m3"])
        let cursor = try #require(try store.pullCursor(remote: DAVRemote.address(of: try DAVRemote.checkedServer(url)), entity: "Holiday"))
        #expect(DAVCursor(cursor).token == "t3")
    }
}
