import Foundation
import Testing
import TestSupport
@testable import DAVAdapter
import EventStore

/// The WebDAV XML reader and multistatus answers (RFC 4918 §13, RFC 6578), as Radicale and Xandikos write them,
/// and hostile bodies refused with a reason.
@Suite("DAV XML")
struct MultistatusTests {
    static let radicaleSync = """
        <?xml version='1.0' encoding='utf-8'?>
        <multistatus xmlns="DAV:"><response><href>/evsync/holidays/a1.ics</href><propstat><prop><getetag>"e1"</getetag></prop>\
        <status>HTTP/1.1 200 OK</status></propstat></response><response><href>/evsync/holidays/gone%40x.ics</href>\
        <status>HTTP/1.1 404 Not Found</status></response><sync-token>http://radicale.org/ns/sync/9f3</sync-token></multistatus>
        """

    @Test("a sync-collection answer: members with ETags, a removed member, the new token")
    func syncCollection() throws {
        let answer = try Multistatus(parsing: Array(Self.radicaleSync.utf8))
        #expect(answer.syncToken == "http://radicale.org/ns/sync/9f3")
        #expect(answer.responses.map(\.href) == ["/evsync/holidays/a1.ics", "/evsync/holidays/gone%40x.ics"])
        #expect(answer.responses[0].property(DAVNamespace.dav, "getetag")?.text == "\"e1\"")
        #expect(answer.responses[0].status == nil)
        #expect(answer.responses[1].status == 404)
    }

    @Test("prefixes, a default namespace redeclared inside, CDATA, references and CRLF in calendar-data")
    func namespacesAndText() throws {
        let body = """
            <?xml version="1.0"?><!-- Xandikos -->
            <ns0:multistatus xmlns:ns0="DAV:" xmlns:ns1="urn:ietf:params:xml:ns:caldav"><ns0:response>\
            <ns0:href>/c/x.ics</ns0:href><ns0:propstat><ns0:status>HTTP/1.1 200 OK</ns0:status><ns0:prop>\
            <ns1:calendar-data>BEGIN:VCALENDAR&#13;\r\nSUMMARY:A &amp; B &lt;c&gt; &#x65E5;<![CDATA[<raw>&amp;]]>&#13;\r\n</ns1:calendar-data>\
            <getetag xmlns="DAV:">"7"</getetag><x:other xmlns:x="http://example.com/ns"/></ns0:prop></ns0:propstat>\
            <ns0:propstat><ns0:prop><ns0:displayname/></ns0:prop><ns0:status>HTTP/1.1 404 Not Found</ns0:status></ns0:propstat>\
            </ns0:response></ns0:multistatus>
            """
        let answer = try Multistatus(parsing: Array(body.utf8))
        let response = try #require(answer.responses.first)
        #expect(response.property(DAVNamespace.caldav, "calendar-data")?.text == "BEGIN:VCALENDAR\r\nSUMMARY:A & B <c> 日<raw>&amp;\r\n")
        #expect(response.property(DAVNamespace.dav, "getetag")?.text == "\"7\"")
        #expect(response.property("http://example.com/ns", "other") != nil)
        #expect(response.failedProperties.map(\.status) == [404])
        #expect(response.property(DAVNamespace.dav, "displayname") == nil)
    }

    @Test("a truncated answer: 507 on the request URI (RFC 6578 §3.6)")
    func truncated() throws {
        let body = #"<d:multistatus xmlns:d="DAV:"><d:response><d:href>/evsync/holidays/</d:href><d:status>HTTP/1.1 507 Insufficient Storage</d:status></d:response><d:sync-token>data:,7</d:sync-token></d:multistatus>"#
        let answer = try Multistatus(parsing: Array(body.utf8))
        #expect(answer.responses.map(\.status) == [507])
        #expect(answer.syncToken == "data:,7")
    }

    @Test("home sets and the principal as hrefs inside properties")
    func homeSets() throws {
        let body = #"<multistatus xmlns="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><response><href>/p/</href><propstat><prop><current-user-principal><href> /p/ </href></current-user-principal><C:calendar-home-set><href>/p/calendars/</href></C:calendar-home-set></prop><status>HTTP/1.1 200 OK</status></propstat></response></multistatus>"#
        let response = try #require(try Multistatus(parsing: Array(body.utf8)).responses.first)
        #expect(response.property(DAVNamespace.dav, "current-user-principal")?.hrefs == ["/p/"])
        #expect(response.property(DAVNamespace.caldav, "calendar-home-set")?.hrefs == ["/p/calendars/"])
    }

    @Test("refused, with a reason", arguments: [
        ("", "no root element"),
        ("<html><body>502</body></html>", "not a DAV:multistatus"),
        (#"<!DOCTYPE m [<!ENTITY a "aaaa">]><m/>"#, "DTD"),
        (#"<multistatus xmlns="DAV:">&a;</multistatus>"#, "unknown entity"),
        (#"<multistatus xmlns="DAV:"><response></multistatus>"#, "does not close"),
        (#"<x:multistatus/>"#, "not declared"),
        (#"<multistatus xmlns="DAV:">"#, "ends inside"),
        (#"<multistatus xmlns="DAV:"/><other/>"#, "after the root"),
        (#"<multistatus xmlns="DAV:" a="1" a="2"/>"#, "twice"),
        (#"<multistatus xmlns="DAV:">&#0;</multistatus>"#, "character reference"),
        ("<multistatus xmlns=\"DAV:\">\u{1}</multistatus>", "control character"),
    ] as [(String, String)])
    func refused(body: String, reason: String) {
        #expect {
            _ = try Multistatus(parsing: Array(body.utf8))
        } throws: { error in
            "\(error)".contains(reason)
        }
    }

    @Test("text that is not UTF-8 is refused")
    func notUTF8() {
        #expect(throws: XMLReadError.self) { _ = try XMLReader.parse(Array("<a>".utf8) + [0xC3, 0x28] + Array("</a>".utf8)) }
    }

    @Test("nesting past the limit is refused, not a stack overflow")
    func deep() {
        let depth = XMLReader.maximumDepth + 1
        let body = String(repeating: "<a>", count: depth) + String(repeating: "</a>", count: depth)
        #expect { _ = try XMLReader.parse(Array(body.utf8)) } throws: { "\($0)".contains("deeper") }
        let fine = String(repeating: "<a>", count: depth - 1) + String(repeating: "</a>", count: depth - 1)
        #expect((try? XMLReader.parse(Array(fine.utf8))) != nil)
    }

    @Test("mangled answers never trap: each is read or refused")
    func mangled() {
        var random = SplitMix64(seed: 26)
        let seeds = [Self.radicaleSync, #"<d:multistatus xmlns:d="DAV:"><d:response><d:href>/a/</d:href><d:status>HTTP/1.1 507 x</d:status></d:response></d:multistatus>"#]
        var read = 0
        for round in 0..<3000 {
            var bytes = Array(seeds[round % seeds.count].utf8)
            for _ in 0..<(1 + Int(random.next() % 4)) {
                let at = Int(random.next() % UInt64(bytes.count))
                switch random.next() % 3 {
                case 0: bytes[at] = UInt8(truncatingIfNeeded: random.next())
                case 1: bytes.remove(at: at)
                default: bytes.insert(contentsOf: Array("<&;\"'/>]]>".utf8).shuffled(using: &random).prefix(2), at: at)
                }
            }
            if (try? Multistatus(parsing: bytes)) != nil { read += 1 }
        }
        #expect(read > 0)
    }
}

extension MultistatusTests {
    /// RFC 3744's `current-user-privilege-set` as Radicale writes it for its rights (`rR`: read; `RrWw`: all),
    /// and aggregates a server may name instead (RFC 3744 §3.12).
    @Test("privileges say what an account may do with a collection: read-only, read-write, create-only, none")
    func privileges() throws {
        func access(_ privileges: [String]) throws -> EntityAccess {
            let body = #"<multistatus xmlns="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><response><href>/evsync/holidays/</href><propstat><prop>"#
                + "<current-user-privilege-set>" + privileges.map { "<privilege><\($0)/></privilege>" }.joined()
                + "</current-user-privilege-set></prop><status>HTTP/1.1 200 OK</status></propstat></response></multistatus>"
            let set = try #require(try Multistatus(parsing: Array(body.utf8)).responses.first?.property(DAVNamespace.dav, "current-user-privilege-set"))
            return DAVRemote.access(privileges: set)
        }
        #expect(try access(["read", "C:read-free-busy"]) == .readOnly)
        #expect(try access(["read", "C:read-free-busy", "all", "write", "write-properties", "write-content"]) == .readWrite)
        #expect(try access(["all"]) == .readWrite)
        #expect(try access(["read", "write-content"]) == .readWrite)
        #expect(try access(["read", "bind"]) == .readAndCreate)
        #expect(try access(["bind"]) == .createOnly)
        #expect(try access(["C:read-free-busy"]) == .noAccess, "a privilege of another namespace is not DAV:read")
        #expect(try access([]) == .noAccess)
    }
}
