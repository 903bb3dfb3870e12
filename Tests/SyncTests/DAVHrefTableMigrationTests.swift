@testable import DAVAdapter
import EventStore
import EventSync
import HTTPTransport
import TestSupport
import Foundation
import Testing

/// The href table of other clients' items moved from DAV's pull cursor to the adapter's own part of meta (issue 50):
/// a store an earlier evsync wrote, its table inside the cursor, syncs on with nothing lost.
@Suite("DAV href table of an older store", .serialized)
struct DAVHrefTableMigrationTests {
    @Test("a cursor that still carries the href table is read once and its table moved to the adapter's meta; a removal of another client's item at another href then deletes the right record")
    func olderCursor() async throws {
        let dav = try await OwnDAV("radicale")
        let directory = try TemporaryDirectory("dav-href-table")
        let environment = ["EVSYNC_AUTH_FILE": dav.authFile]
        let credentials = try Credentials(userPassword: String(contentsOfFile: dav.authFile, encoding: .utf8))
        let holiday = try SchemaRegistry().schema(named: "Holiday")
        func pull() throws -> [RemotePage] {
            let remote = try DAVRemote(serverURL: dav.base, credentials: credentials)
            try remote.prepare([(holiday, nil)])
            var pages: [RemotePage] = []
            try remote.changes(of: holiday, since: nil) { pages.append($0); return true }
            return pages
        }
        _ = try pull()  // makes the calendar
        // Another client's item at an href its UID does not give: only the table says which record a removal there is.
        let put = try DAVPushTests.put(dav, "evsync/holidays/elsewhere.ics", DAVPushTests.item(uid: "peer-1@example.com", summary: "Peer Day"))
        #expect(put.status == 201)
        let peer = "dav_peer-1_40example_2Ecom", href = "/evsync/holidays/elsewhere.ics"
        var pages = try pull()
        let last = pages.count - 1
        let state = try #require(pages[last].state)
        #expect(DAVHrefTable.read(state) == [href: peer])
        let cursor = try #require(pages[last].cursor)
        #expect(!cursor.token.contains("\t"), "the table is no longer in the cursor")

        // The store as an earlier evsync wrote it: the table's lines in the cursor, nothing in the adapter's meta.
        let address = DAVRemote.address(of: try DAVRemote.checkedServer(dav.base))
        pages[last].cursor = RemoteCursor(cursor.token + "\n" + state)
        pages[last].state = nil
        do {
            let store = try Store(directory: directory.file("store"), create: true)
            var batch = try store.makePullBatch()
            for page in pages { batch.append(page) }
            _ = try store.ingest(batch, entity: "Holiday", from: address) { _, _ in }
            try store.rememberRemote(address)
            try store.noteSynced(with: address)
            #expect(try store.remoteState(namespace: "dav", remote: address, entity: "Holiday") == nil)
        }
        let evsync = Evsync(store: directory.file("store"))
        #expect(try await DAVSyncTests.names(evsync, "Holiday") == [peer: "Peer Day"])

        // Nothing changed on the server: the sync writes the cursor once more, without the table, and the table beside it.
        try await evsync.ok(["sync"], environment: environment)
        do {
            let store = try Store(directory: directory.file("store"))
            #expect(try store.pullCursor(remote: address, entity: "Holiday") == cursor)
            #expect(try store.remoteState(namespace: "dav", remote: address, entity: "Holiday").map(DAVHrefTable.read) == [href: peer])
        }

        // The other client deletes its item: the removal names the href alone, and the table says it is `peer`.
        let client = try HTTPClient(server: try #require(URL(string: dav.base)), credentials: credentials, userAgent: "evsync-tests")
        #expect((200..<300).contains(try client.send(HTTPRequest(method: "DELETE", url: try #require(URL(string: dav.base + "evsync/holidays/elsewhere.ics")))).status))
        try await evsync.ok(["sync"], environment: environment)
        #expect(try await DAVSyncTests.names(evsync, "Holiday") == [:])
        let idle = try await evsync.ok(["sync"], environment: environment)
        #expect(idle.contains("already in sync"), "\(idle)")
    }
}
