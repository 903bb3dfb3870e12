import EventStore
import Foundation
import Testing
import TestSupport
@testable import DAVAdapter

/// Record ids from UIDs and back (docs/decisions/dav-ids-are-the-uid-escaped.md): reversible for every UID and every id.
@Suite("DAV ids")
struct DAVIDTests {
    @Test("a UID is its own id when the id rule takes it; else escaped, and read back", arguments: [
        ("evsync-1", "evsync-1"),
        ("4f1c@example.com", "dav_4f1c_40example_2Ecom"),
        ("new_year", "new_year"),
        ("_x", "dav__5Fx"),
        ("dav_x", "dav_x"),                  // no UID escapes to it (x needs none): its own
        ("dav_40", "dav_40"),
        ("dav__40", "dav_dav_5F_5F40"),      // reads as an escape of "@": so escaped itself
        ("日本", "dav__E6_97_A5_E6_9C_AC"),
        ("", "dav_"),
    ] as [(String, String)])
    func uid(uid: String, id: String) {
        #expect(DAVIDs.id(forUID: uid) == id)
        #expect(DAVIDs.uid(forID: id) == uid)
    }

    @Test("random UIDs and ids survive both ways")
    func random() {
        var random = SplitMix64(seed: 6)
        let alphabet = Array("aZ09-_@.dav_/ é".unicodeScalars)
        for _ in 0..<5000 {
            var text = ""
            for _ in 0..<(Int(random.next() % 12)) { text.unicodeScalars.append(alphabet[Int(random.next() % UInt64(alphabet.count))]) }
            if random.next() % 3 == 0 { text = "dav_" + text }
            let id = DAVIDs.id(forUID: text)
            #expect(RecordID.isValidServerID(id), "\(text)")
            #expect(DAVIDs.uid(forID: id) == text, "\(text) → \(id)")
            if RecordID.isValid(text) { #expect(DAVIDs.id(forUID: DAVIDs.uid(forID: text)) == text, "id \(text)") }
        }
    }

    @Test("a version carries another client's href beside the ETag")
    func version() {
        let version = DAVVersion(etag: "\"abc\"", href: "/evsync/holidays/other%20name.ics")
        #expect(DAVVersion(version.remoteVersion) == version)
        #expect(DAVVersion(RemoteVersion("\"abc\"")) == DAVVersion(etag: "\"abc\"", href: nil))
    }

    @Test("hrefs compare by their decoded path; a new item's segment is the UID percent-encoded")
    func hrefs() {
        #expect(DAVIDs.key("http://h:1/a/b%40c.ics") == DAVIDs.key("/a/b@c.ics"))
        #expect(DAVIDs.segment(forUID: "4f1c@example.com", extension: "ics") == "4f1c%40example.com.ics")
        #expect(DAVIDs.uid(inHref: "/a/4f1c%40example.com.ics") == "4f1c@example.com")
    }

    @Test("a cursor keeps the sync token and the collection's URL; the href table is state of its own; a token alone reads too, and an older cursor's href table is read")
    func cursor() throws {
        let url = try #require(URL(string: "http://127.0.0.1:5232/evsync/holidays/"))
        let cursor = DAVCursor(token: "http://radicale.org/ns/sync/9f", collection: url)
        let read = DAVCursor(cursor.cursor)
        #expect(read.token == cursor.token && read.collection == url && read.legacyHrefs.isEmpty)
        #expect(cursor.cursor.token == "http://radicale.org/ns/sync/9f\n@ http://127.0.0.1:5232/evsync/holidays/")
        let table = ["/evsync/holidays/x y.ics": "dav_x_40y", "/evsync/holidays/b.ics": "other"]
        #expect(DAVHrefTable.read(DAVHrefTable.text(table)) == table)
        #expect(DAVHrefTable.read("") == [:])
        let old = DAVCursor(RemoteCursor("data:,7"))
        #expect(old.token == "data:,7" && old.collection == nil && old.legacyHrefs.isEmpty)
        // As an evsync before issue 50 wrote it: the table's lines after the token and the URL.
        let older = DAVCursor(RemoteCursor("http://radicale.org/ns/sync/9f\n@ http://127.0.0.1:5232/evsync/holidays/\n"
            + "/evsync/holidays/b.ics\tother\n/evsync/holidays/x y.ics\tdav_x_40y"))
        #expect(older.token == cursor.token && older.collection == url && older.legacyHrefs == table)
        #expect(older.cursor == cursor.cursor, "written again without the table")
    }
}
