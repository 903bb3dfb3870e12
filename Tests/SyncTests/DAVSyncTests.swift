import EventStore
import TestSupport
import Foundation
import Testing

/// `evsync sync --protocol dav` against real Radicale and Xandikos (Tools/dav), with another, independent client
/// (the `caldav` package, Tools/dav-client) editing the same calendar between syncs.
@Suite("DAV sync", .serialized)
struct DAVSyncTests {
    static let python = DAVInteropTests.python
    static let client = ServerTool.repository.appendingPathComponent("Tools/dav-client").path

    /// The other client on a collection of the server.
    struct Peer {
        let collection: String
        let authFile: String

        @discardableResult
        func run(_ arguments: [String]) async throws -> ProcessOutput {
            let output = try await ProcessRunner.run(DAVSyncTests.python, [DAVSyncTests.client, collection, authFile] + arguments,
                                                     environment: ProcessInfo.processInfo.environment)
            guard output.status == 0 else { throw ProcessFailure(command: "dav-client " + arguments.joined(separator: " "), output: output) }
            return output
        }

        /// The UIDs and SUMMARYs of the calendar's items.
        func items() async throws -> [String: String] {
            var items: [String: String] = [:]
            for line in try await run(["list"]).stdoutLines {
                let item = try #require(JSONParser.parse(line).objectValue)
                items[item["uid"]?.stringValue ?? ""] = item["summary"]?.stringValue
            }
            return items
        }
    }

    static func names(_ evsync: Evsync, _ entity: String) async throws -> [String: String] {
        var names: [String: String] = [:]
        for record in try await evsync.json(["list", entity, "--json"]).arrayValue ?? [] {
            names[record.objectValue?["id"]?.stringValue ?? ""] = record.objectValue?["name"]?.stringValue
        }
        return names
    }

    @Test("a first sync fills real collections; another client's edit, addition and deletion are pulled; evsync's edit keeps its VALARM and X- lines; evsync's deletion reaches it; nothing changed is nothing to do",
          arguments: [("radicale", 8921), ("xandikos", 8922)])
    func roundTrip(server: String, port: Int) async throws {
        let dav = try OwnDAV(server, port: port)
        let directory = try TemporaryDirectory("dav-sync")
        let a = Evsync(store: directory.file("a")), b = Evsync(store: directory.file("b"))
        let environment = ["EVSYNC_AUTH_FILE": dav.authFile]
        let kept = try await a.ok(["add", "Holiday", "name=New Year", "date=2027-01-01"]).trimmingCharacters(in: .whitespacesAndNewlines)
        let gone = try await a.ok(["add", "Holiday", "name=May Day", "date=2027-05-01"]).trimmingCharacters(in: .whitespacesAndNewlines)
        try await a.ok(["add", "Birthday", "name=Ada Lovelace", "date=1815-12-10"])
        try await a.ok(["sync", "--protocol", "dav", "--remote", dav.base], environment: environment)
        #expect(try await a.ok(["remote"]) == "dav+\(dav.base)\n")

        // Found by discovery on both servers (their homes differ): list the calendar where a second store put it.
        try await b.ok(["sync", "--protocol", "dav", "--remote", dav.base], environment: environment)
        #expect(try await Self.names(b, "Holiday") == [kept: "New Year", gone: "May Day"])
        #expect(try await Self.names(b, "Birthday").values.sorted() == ["Ada Lovelace"])
        let home = server == "radicale" ? "evsync/" : "evsync/calendars/"
        let peer = Peer(collection: dav.base + home + "holidays/", authFile: dav.authFile)
        #expect(try await peer.items() == [kept: "New Year", gone: "May Day"])

        // Another client edits (adding an alarm and an X- line), adds one with a UID evsync's id rule refuses.
        try await peer.run(["edit", kept, "New Year's Day"])
        try await peer.run(["add", "peer-1@example.com", "Peer Day", "20270909"])
        let pulled = try await a.ok(["sync"], environment: environment)
        #expect(pulled.contains("pulled 2"), "\(pulled)")
        #expect(try await Self.names(a, "Holiday") == [kept: "New Year's Day", gone: "May Day", "dav_peer-1_40example_2Ecom": "Peer Day"])

        // evsync edits the item the other client enriched: its lines stay.
        try await a.ok(["edit", "Holiday", kept, "details=From evsync"])
        try await a.ok(["sync"], environment: environment)
        let served = try await peer.run(["show", kept]).stdout
        for line in ["SUMMARY:New Year's Day", "DESCRIPTION:From evsync", "X-EVSYNC-PEER:kept", "BEGIN:VALARM", "TRIGGER:-PT15M"] {
            #expect(served.contains(line), "\(line) missing from \(served)")
        }

        // Deletions both ways.
        try await a.ok(["delete", "Holiday", gone])
        try await peer.run(["delete", "peer-1@example.com"])
        try await a.ok(["sync"], environment: environment)
        #expect(try await peer.items() == [kept: "New Year's Day"])
        #expect(try await Self.names(a, "Holiday") == [kept: "New Year's Day"])
        try await b.ok(["sync"], environment: environment)
        #expect(try await Self.names(b, "Holiday") == [kept: "New Year's Day"])

        let idle = try await a.ok(["sync"], environment: environment)
        #expect(idle.contains("already in sync"), "\(idle)")
    }

    @Test("an expired sync token (Radicale's max_sync_token_age) is a full listing reconciled by href and ETag: changes and a deletion made meanwhile arrive, nothing is duplicated, nothing wiped")
    func expiredToken() async throws {
        let dav = try OwnDAV("radicale", ["--max-sync-token-age", "1"], port: 8923)
        let directory = try TemporaryDirectory("dav-token")
        let a = Evsync(store: directory.file("a")), b = Evsync(store: directory.file("b"))
        let environment = ["EVSYNC_AUTH_FILE": dav.authFile]
        var ids: [String] = []
        for day in 1...5 {
            ids.append(try await a.ok(["add", "Holiday", "name=Day \(day)", "date=2027-01-0\(day)"]).trimmingCharacters(in: .whitespacesAndNewlines))
        }
        try await a.ok(["sync", "--protocol", "dav", "--remote", dav.base], environment: environment)
        try await b.ok(["sync", "--protocol", "dav", "--remote", dav.base], environment: environment)
        let peer = Peer(collection: dav.base + "evsync/holidays/", authFile: dav.authFile)
        try await peer.run(["delete", ids[0]])
        try await peer.run(["edit", ids[1], "Edited"])
        // Radicale drops a token older than a second once it makes a newer one (b's sync after a change).
        let synced = Date()
        while Date().timeIntervalSince(synced) < 1.5 { try await Task.sleep(for: .milliseconds(100)) }
        try await peer.run(["add", "peer-1", "Peer 1", "20270601"])
        try await b.ok(["sync"], environment: environment)
        let output = try await a.run(["sync", "-v"], environment: environment)
        #expect(output.status == 0, "\(output)")
        let expired = output.stderr.contains("REPORT \(dav.base)evsync/holidays/ → HTTP 403")
        #expect(expired, "the token never expired")
        let names = try await Self.names(a, "Holiday")
        let served = try await peer.items()
        #expect(names.count == served.count, "a holds \(names.count), the server \(served.count)")
        #expect(Set(names.values) == Set(served.values))
        #expect(names[ids[0]] == nil)
        #expect(names[ids[1]] == "Edited")
        let idle = try await a.ok(["sync"], environment: environment)
        #expect(idle.contains("already in sync") || idle.contains("pulled 0"), "\(idle)")
    }
}
