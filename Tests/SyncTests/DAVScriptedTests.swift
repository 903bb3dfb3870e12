@testable import DAVAdapter
import EventStore
import EventSync
import Foundation
import HTTPTransport
import Testing
import TestSupport

/// DAVRemote's pull against a scripted server, for what neither real server does on demand: a truncated answer
/// (507 on the collection), Xandikos's 500 for a token it no longer has, a server refusing bodies in sync-collection.
@Suite("DAV scripted pull")
struct DAVScriptedTests {
    static func multistatus(_ inner: String) -> ScriptedServer.Answer {
        ScriptedServer.Answer(207, headers: ["Content-Type": "application/xml"],
                              body: #"<?xml version="1.0"?><d:multistatus xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav" xmlns:a="urn:ietf:params:xml:ns:carddav">"# + inner + "</d:multistatus>")
    }

    /// The answers of a discovery: the principal `/p/`, its homes, and the calendar `/p/holidays/` (listing
    /// sync-collection among its reports, or no reports).
    static func discovery(listingReports: Bool = false) -> [ScriptedServer.Answer] {
        let reports = listingReports
            ? "<d:supported-report-set><d:supported-report><d:report><d:sync-collection/></d:report></d:supported-report></d:supported-report-set>" : ""
        return [
            multistatus(#"<d:response><d:href>/</d:href><d:propstat><d:prop><d:current-user-principal><d:href>/p/</d:href></d:current-user-principal></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>"#),
            multistatus(#"<d:response><d:href>/p/</d:href><d:propstat><d:prop><c:calendar-home-set><d:href>/p/</d:href></c:calendar-home-set><a:addressbook-home-set><d:href>/p/</d:href></a:addressbook-home-set></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>"#),
            multistatus(#"<d:response><d:href>/p/holidays/</d:href><d:propstat><d:prop><d:resourcetype><d:collection/><c:calendar/></d:resourcetype>"# + reports
                         + "</d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>"),
        ]
    }

    /// A DAVRemote of the scripted server that tries each request once, prepared for Holiday (from `since`).
    static func holidayRemote(_ server: ScriptedServer, since: RemoteCursor? = nil) throws -> (DAVRemote, EntitySchema) {
        let remote = try DAVRemote(serverURL: server.url + "/", credentials: nil)
        remote.settings.retry.attempts = 1
        let holiday = try SchemaRegistry().schema(named: "Holiday")
        try remote.prepare([(holiday, since)])
        return (remote, holiday)
    }

    /// The pages of one pull of Holiday since `since`.
    static func pull(_ remote: DAVRemote, _ holiday: EntitySchema, since: RemoteCursor?) throws -> [RemotePage] {
        var pages: [RemotePage] = []
        try remote.changes(of: holiday, since: since) { pages.append($0); return true }
        return pages
    }

    static func records(_ pages: [RemotePage]) throws -> [RemoteRecord] {
        try pages.flatMap { page in try page.entries.map { try page.record($0) } }
    }

    static func member(_ href: String, etag: String) -> String {
        #"<d:response><d:href>\#(href)</d:href><d:propstat><d:prop><d:getetag>"\#(etag)"</d:getetag></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>"#
    }

    @Test("a 500 to an old token starts again from the empty one; a 507 is followed with its token; a removed member is a deletion; never DAV:limit")
    func truncatedAndExpired() throws {
        let item = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:x", "BEGIN:VEVENT", "UID:a", "DTSTAMP:20270101T000000Z",
                    "DTSTART;VALUE=DATE:20270301", "SUMMARY:A &amp; B", "END:VEVENT", "END:VCALENDAR", ""].joined(separator: "&#13;\n")
        let server = try ScriptedServer(Self.discovery(listingReports: true) + [
            ScriptedServer.Answer(500, body: "token not found"),
            Self.multistatus(Self.member("/p/holidays/a.ics", etag: "1") + Self.member("/p/holidays/b.ics", etag: "2")
                             + #"<d:response><d:href>/p/holidays/</d:href><d:status>HTTP/1.1 507 Insufficient Storage</d:status></d:response><d:sync-token>t2</d:sync-token>"#),
            Self.multistatus(#"<d:response><d:href>/p/holidays/a.ics</d:href><d:propstat><d:prop><d:getetag>"1"</d:getetag><c:calendar-data>\#(item)</c:calendar-data></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>"#
                             + #"<d:response><d:href>/p/holidays/b.ics</d:href><d:status>HTTP/1.1 404 Not Found</d:status></d:response>"#),
            Self.multistatus(#"<d:response><d:href>/p/holidays/c.ics</d:href><d:status>HTTP/1.1 404 Not Found</d:status></d:response><d:sync-token>t3</d:sync-token>"#),
        ], then: ScriptedServer.Answer(500))
        let since = DAVCursor(token: "t1").cursor
        let (remote, holiday) = try Self.holidayRemote(server, since: since)
        let pages = try Self.pull(remote, holiday, since: since)
        let records = try Self.records(pages)
        #expect(records.map(\.id) == ["a", "b", "c"])
        #expect(records.map { $0.fields?["name"] } == ["A & B", nil, nil])
        #expect(pages.map { $0.cursor.map { DAVCursor($0).token } } == ["t2", "t3"])
        #expect(try remote.liveIDs(of: holiday) == ["a"])
        let reports = server.requests.filter { $0.line.hasPrefix("REPORT") }.map(\.body)
        #expect(reports.count == 4)
        #expect(reports[0].contains("<sync-token>t1</sync-token>"))
        #expect(reports[1].contains("<sync-token></sync-token>"))
        #expect(reports[3].contains("<sync-token>t2</sync-token>"))
        #expect(!reports.contains { $0.contains("limit") })
    }

    @Test("bodies in the sync-collection answer need no multiget; a sync-collection asking for them that is refused, or answered unreadably, is asked again without")
    func bodiesInTheListing() throws {
        func item(_ uid: String) -> String {
            ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:x", "BEGIN:VEVENT", "UID:\(uid)", "DTSTAMP:20270101T000000Z",
             "DTSTART;VALUE=DATE:20270301", "SUMMARY:\(uid.uppercased())", "END:VEVENT", "END:VCALENDAR", ""].joined(separator: "&#13;\n")
        }
        let server = try ScriptedServer(Self.discovery() + [
            ScriptedServer.Answer(400, body: "calendar-data is not a property for sync-collection here"),
            Self.multistatus(Self.member("/p/holidays/a.ics", etag: "1") + "<d:sync-token>t2</d:sync-token>"),
            Self.multistatus(#"<d:response><d:href>/p/holidays/a.ics</d:href><d:propstat><d:prop><d:getetag>"1"</d:getetag><c:calendar-data>\#(item("a"))</c:calendar-data></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>"#),
            Self.multistatus(#"<d:response><d:href>/p/holidays/b.ics</d:href><d:propstat><d:prop><d:getetag>"1"</d:getetag><c:calendar-data>\#(item("b"))</c:calendar-data></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response><d:sync-token>t3</d:sync-token>"#),
            // An answer whose bodies make it unreadable: the listing again without them, then a multiget.
            Self.multistatus(#"<d:response><d:href>/p/holidays/c.ics</d:href><d:propstat><d:prop><c:calendar-data>\#u{1}</c:calendar-data>"#),
            Self.multistatus(Self.member("/p/holidays/c.ics", etag: "1") + "<d:sync-token>t4</d:sync-token>"),
            Self.multistatus(#"<d:response><d:href>/p/holidays/c.ics</d:href><d:propstat><d:prop><d:getetag>"1"</d:getetag><c:calendar-data>\#(item("c"))</c:calendar-data></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>"#),
        ], then: ScriptedServer.Answer(500))
        let since = DAVCursor(token: "t1").cursor
        let (remote, holiday) = try Self.holidayRemote(server, since: since)
        var pages = try Self.pull(remote, holiday, since: since)
        pages += try Self.pull(remote, holiday, since: pages.last?.cursor)
        pages += try Self.pull(remote, holiday, since: pages.last?.cursor)
        let records = try Self.records(pages)
        #expect(records.map(\.id) == ["a", "b", "c"])
        #expect(records.map { $0.fields?["name"] } == ["A", "B", "C"])
        #expect(pages.map { $0.cursor.map { DAVCursor($0).token } } == ["t2", "t3", "t4"])
        let reports = server.requests.filter { $0.line.hasPrefix("REPORT") }.map(\.body)
        #expect(reports.count == 7)
        #expect(reports[0].contains("<sync-token>t1</sync-token>") && reports[0].contains("calendar-data"))
        #expect(reports[1].contains("<sync-token>t1</sync-token>") && !reports[1].contains("calendar-data"))
        #expect(reports[2].contains("calendar-multiget"))
        #expect(reports[3].contains("<sync-token>t2</sync-token>") && reports[3].contains("calendar-data"))
        #expect(reports[4].contains("<sync-token>t3</sync-token>") && reports[4].contains("calendar-data"))
        #expect(reports[5].contains("<sync-token>t3</sync-token>") && !reports[5].contains("calendar-data"))
        #expect(reports[6].contains("calendar-multiget"))
    }

    @Test("an item the server refuses to show (403 to the GET before an update) refuses that write alone; the next is pushed")
    func oneRefusedItemDoesNotStopThePush() throws {
        let server = try ScriptedServer(Self.discovery() + [
            ScriptedServer.Answer(403, body: "not yours"),
            ScriptedServer.Answer(201, headers: ["ETag": #""2""#]),
        ], then: ScriptedServer.Answer(500))
        let (remote, holiday) = try Self.holidayRemote(server)
        let outcomes = try remote.push([
            .update(id: "a", fields: ["name": "A", "date": "2027-03-01"], version: RemoteVersion(#""1""#)),
            .create(id: "b", fields: ["name": "B", "date": "2027-03-02"]),
        ], of: holiday)
        guard case .rejected(let status, _) = outcomes.first else { Issue.record("\(outcomes)"); return }
        #expect(status == 403)
        #expect(outcomes.count == 2 && outcomes.last != outcomes.first, "\(outcomes)")
        guard case .applied = outcomes.last else { Issue.record("the create after it is pushed: \(outcomes)"); return }
    }

    /// The bound is the XML reader's (`maximumAnswerBytes`) or the HTTP client's response cap (`transferLimits`).
    @Test("a multiget answer over the size bound is asked for again in halves; the one item too large is skipped, the others arrive",
          arguments: [false, true])
    func tooLarge(byResponseCap: Bool) throws {
        func item(_ uid: String, _ summary: String) -> String {
            #"<d:response><d:href>/p/holidays/\#(uid).ics</d:href><d:propstat><d:prop><d:getetag>"1"</d:getetag><c:calendar-data>"#
                + ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:x", "BEGIN:VEVENT", "UID:\(uid)", "DTSTAMP:20270101T000000Z",
                   "DTSTART;VALUE=DATE:20270301", "SUMMARY:\(summary)", "END:VEVENT", "END:VCALENDAR", ""].joined(separator: "&#13;\n")
                + "</c:calendar-data></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>"
        }
        let huge = String(repeating: "x", count: 3000)
        let server = try ScriptedServer(Self.discovery() + [
            Self.multistatus(Self.member("/p/holidays/a.ics", etag: "1") + Self.member("/p/holidays/b.ics", etag: "1") + "<d:sync-token>t1</d:sync-token>"),
            Self.multistatus(item("a", "A") + item("b", huge)),
            Self.multistatus(item("a", "A")),
            Self.multistatus(item("b", huge)),
        ], then: ScriptedServer.Answer(500))
        let (remote, holiday) = try Self.holidayRemote(server)
        if byResponseCap { remote.settings.transferLimits.maximumResponseBytes = 2000 } else { remote.maximumAnswerBytes = 2000 }
        let pages = try Self.pull(remote, holiday, since: nil)
        let records = try Self.records(pages)
        #expect(records.map(\.id) == ["a"])
        #expect(pages.flatMap(\.skipped).map(\.id) == ["b"])
        #expect(pages.flatMap(\.skipped).first?.reason.contains("too large") == true)
        #expect(try remote.liveIDs(of: holiday) == ["a", "b"])
        #expect(pages.last?.cursor.map { DAVCursor($0).token } == "t1")
    }
}
