@testable import DAVAdapter
import EventStore
import EventSync
import HTTPTransport
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
        func items() async throws -> [String: String] { try await listing().items }

        /// How many items the calendar holds, and their UIDs and SUMMARYs: fewer UIDs than items is a UID held twice.
        func listing() async throws -> (count: Int, items: [String: String]) {
            let lines = try await run(["list"]).stdoutLines
            var items: [String: String] = [:]
            for line in lines {
                let item = try #require(JSONParser.parse(line).objectValue)
                items[item["uid"]?.stringValue ?? ""] = item["summary"]?.stringValue
            }
            return (lines.count, items)
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
          arguments: ["radicale", "xandikos"])
    func roundTrip(server: String) async throws {
        let dav = try await OwnDAV(server)
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
        // What the account may do, from the server's current-user-privilege-set (RFC 3744): its own collections, all.
        let status = try await b.json(["status", "--json"]).objectValue?["access"]?.objectValue
        #expect(status == ["Holiday": "read-write", "Birthday": "read-write"], "\(String(describing: status))")
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

        let idle = try await a.run(["sync", "-v"], environment: environment)
        #expect(idle.stdout.contains("already in sync"), "\(idle)")
        // Nothing changed: one request per collection (the cursor remembers where each is).
        let requests = idle.stderr.split(separator: "\n").filter { $0.contains(" → HTTP ") }
        #expect(requests.count == 2 && requests.allSatisfy { $0.contains("REPORT ") }, "\(idle.stderr)")
        #expect(try await a.ok(["verify", "--remote"], environment: environment).contains("the server holds what the log believes"))

        // The calendar deleted on the server: found missing, made again, the record kept, and put back when asked.
        let client = try HTTPClient(server: try #require(URL(string: dav.base)), credentials: try Credentials(userPassword: String(contentsOfFile: dav.authFile, encoding: .utf8)),
                                    userAgent: "evsync-tests")
        #expect((200..<300).contains(try client.send(HTTPRequest(method: "DELETE", url: try #require(URL(string: peer.collection)))).status))
        let wiped = try await a.run(["sync"], environment: environment)
        #expect(wiped.stderr.contains("the server lacks 1 Holiday record"), "\(wiped)")
        #expect(try await Self.names(a, "Holiday") == [kept: "New Year's Day"])
        try await a.ok(["sync", "--missing", "push-back"], environment: environment)
        #expect(try await peer.items() == [kept: "New Year's Day"])
    }

    @Test("an expired sync token (Radicale's max_sync_token_age) is a full listing reconciled by href and ETag: changes and a deletion made meanwhile arrive, nothing is duplicated, nothing wiped")
    func expiredToken() async throws {
        let dav = try await OwnDAV("radicale", ["--max-sync-token-age", "1"])
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

extension DAVSyncTests {
    @Test("what evsync cannot hold (a timed event, a task; Radicale refuses text that is not iCalendar) is skipped with its reason and the rest arrives; a vCard 4 birthday without a year from another client is read and kept exactly")
    func skipped() async throws {
        let dav = try await OwnDAV("radicale")
        let directory = try TemporaryDirectory("dav-skip")
        let a = Evsync(store: directory.file("a"))
        let schemas = directory.file("schemas")
        try FileManager.default.createDirectory(atPath: schemas, withIntermediateDirectories: true)
        try Data(#"{"title": "Book", "type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}"#.utf8)
            .write(to: URL(fileURLWithPath: schemas + "/book.schema.json"))
        let environment = ["EVSYNC_AUTH_FILE": dav.authFile, "EVSYNC_SCHEMAS": schemas]
        try await a.ok(["add", "Book", "title=Dune"], environment: environment)
        // An entity with no mapping is left out, in one line; the others sync.
        let first = try await a.run(["sync", "--protocol", "dav", "--remote", dav.base], environment: environment)
        #expect(first.status == 0, "\(first)")
        #expect(first.stderr == "evsync: Book has no place on this dav server (no mapping for it); left out of this sync\n", "\(first)")
        func put(_ path: String, _ lines: [String], type: String = "text/calendar") throws -> Int {
            try DAVPushTests.put(dav, "evsync/" + path, lines.joined(separator: "\r\n") + "\r\n", type: type).status
        }
        let calendar = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//peer//EN"]
        #expect(try put("holidays/meeting.ics", calendar + ["BEGIN:VEVENT", "UID:meeting", "DTSTAMP:20270101T000000Z",
                        "DTSTART:20270301T090000Z", "SUMMARY:Standup", "END:VEVENT", "END:VCALENDAR"]) == 201)
        #expect(try put("holidays/task.ics", calendar + ["BEGIN:VTODO", "UID:task", "DTSTAMP:20270101T000000Z", "SUMMARY:Buy cake",
                        "END:VTODO", "END:VCALENDAR"]) == 201)
        #expect(try put("holidays/good.ics", calendar + ["BEGIN:VEVENT", "UID:good", "DTSTAMP:20270101T000000Z",
                        "DTSTART;VALUE=DATE:20270301", "SUMMARY:Good Day", "END:VEVENT", "END:VCALENDAR"]) == 201)
        #expect(try put("birthdays/grace.vcf", ["BEGIN:VCARD", "VERSION:4.0", "UID:grace", "FN:Grace Hopper", "BDAY:--1209",
                        "TEL:+1-555-0100", "END:VCARD"], type: "text/vcard") == 201)
        let report = try #require(try JSONParser.parse(try await a.ok(["sync", "--json"], environment: environment)).objectValue)
        let skipped = (report["skipped"]?.arrayValue ?? []).compactMap { $0.objectValue }
        #expect(Set(skipped.compactMap { $0["id"]?.stringValue }) == ["meeting", "task"])
        #expect(skipped.contains { $0["reason"]?.stringValue?.hasPrefix("timedEvent:") == true })
        #expect(skipped.contains { $0["reason"]?.stringValue?.hasPrefix("wrongComponent:") == true })
        #expect(try await DAVSyncTests.names(a, "Holiday") == ["good": "Good Day"])
        #expect(try await a.json(["show", "Birthday", "grace", "--json"]).objectValue?["date"] == "1604-12-09")

        // An edit of the card keeps it vCard 4, year-less, with its TEL.
        try await a.ok(["edit", "Birthday", "grace", "giftIdeas=A compiler"])
        try await a.ok(["sync"], environment: environment)
        let client = try HTTPClient(server: try #require(URL(string: dav.base)), credentials: try Credentials(userPassword: String(contentsOfFile: dav.authFile, encoding: .utf8)),
                                    userAgent: "evsync-tests")
        let card = String(decoding: try client.send(HTTPRequest(method: "GET", url: try #require(URL(string: dav.base + "evsync/birthdays/grace.vcf")))).body,
                          as: UTF8.self)
        for line in ["VERSION:4.0", "BDAY:--1209", "TEL:+1-555-0100", "NOTE:A compiler"] { #expect(card.contains(line), "\(line) not in \(card)") }
    }
}

extension DAVSyncTests {
    @Test("a field changed on both sides is a conflict: server-wins takes the other client's, client-wins writes ours onto its item")
    func conflicts() async throws {
        let dav = try await OwnDAV("radicale")
        let directory = try TemporaryDirectory("dav-conflict")
        let a = Evsync(store: directory.file("a"))
        let environment = ["EVSYNC_AUTH_FILE": dav.authFile]
        let id = try await a.ok(["add", "Holiday", "name=Harvest", "date=2027-10-01"]).trimmingCharacters(in: .whitespacesAndNewlines)
        try await a.ok(["sync", "--protocol", "dav", "--remote", dav.base], environment: environment)
        let peer = Peer(collection: dav.base + "evsync/holidays/", authFile: dav.authFile)

        try await peer.run(["edit", id, "Theirs"])
        try await a.ok(["edit", "Holiday", id, "name=Ours"])
        let serverWins = try await a.ok(["sync", "--conflicts", "server-wins"], environment: environment)
        #expect(serverWins.contains("conflicts 1"), "\(serverWins)")
        #expect(try await DAVSyncTests.names(a, "Holiday") == [id: "Theirs"])
        #expect(try await peer.items() == [id: "Theirs"])

        try await peer.run(["edit", id, "Theirs again"])
        try await a.ok(["edit", "Holiday", id, "name=Ours again", "details=Ours alone"])
        let clientWins = try await a.ok(["sync", "--conflicts", "client-wins"], environment: environment)
        #expect(clientWins.contains("conflicts 1"), "\(clientWins)")
        #expect(try await DAVSyncTests.names(a, "Holiday") == [id: "Ours again"])
        let served = try await peer.run(["show", id]).stdout
        for line in ["SUMMARY:Ours again", "DESCRIPTION:Ours alone", "X-EVSYNC-PEER:kept", "BEGIN:VALARM"] {
            #expect(served.contains(line), "\(line) missing from \(served)")
        }
        let idle = try await a.ok(["sync"], environment: environment)
        #expect(idle.contains("already in sync"), "\(idle)")
    }
}

extension DAVSyncTests {
    @Test("kill -9 in the middle of pushing and of pulling 500 holidays: the next syncs converge, each UID once on the server, nothing lost",
          arguments: ["radicale", "xandikos"])
    func killed(server: String) async throws {
        let dav = try await OwnDAV(server)
        let calendarPath = (server == "radicale" ? "evsync/" : "evsync/calendars/") + "holidays/"
        let calendar = dav.base + calendarPath
        let directory = try TemporaryDirectory("dav-kill")
        let a = Evsync(store: directory.file("a")), b = Evsync(store: directory.file("b"))
        let environment = ["EVSYNC_AUTH_FILE": dav.authFile]
        let lines = (0..<500).map { #"{"name": "Day \#($0)", "date": "2027-01-01"}"# }.joined(separator: "\n") + "\n"
        try await a.ok(["import", "Holiday", "-"], stdin: lines)
        func killedAfter(_ evsync: Evsync, _ requests: Int, _ method: String, remote: String? = nil) async throws {
            let sync = try evsync.start(["sync", "-v", "--protocol", "dav", "--remote", remote ?? dav.base], environment: environment)
            try await sync.waitFor("\(requests) \(method) requests", timeout: .seconds(120)) {
                sync.outputSoFar().stderr.components(separatedBy: "\(method) \(remote ?? dav.base)\(calendarPath)").count > requests
            }
            sync.signal(SIGKILL)
            let output = await sync.wait()
            #expect(output.killedBySignal, "\(output)")
        }
        try await killedAfter(a, 100, "PUT")
        // A killed sync remembered no remote: it is given again.
        let pushed = try await a.ok(["sync", "--protocol", "dav", "--remote", dav.base], environment: environment)
        #expect(!pushed.contains("rejected"), "\(pushed)")
        let peer = Peer(collection: calendar, authFile: dav.authFile)
        let served = try await peer.listing()
        #expect(served.count == 500 && served.items.count == 500, "\(served.count) items, \(served.items.count) UIDs")
        #expect(try await Self.names(a, "Holiday").count == 500)

        // The pull. Xandikos: sync-collection, then multigets of 100, killed after two of them, through a proxy that
        // holds each answer back 0.5 s (on a fast machine the other four REPORTs once came and committed before the
        // kill). Radicale sends the bodies in the sync-collection answer: killed while it arrives, trickled.
        let proxy = try await SlowProxy(server == "radicale" ? ["--trickle", "100000"] : ["--delay", "0.5"], target: dav.base)
        try await killedAfter(b, server == "radicale" ? 1 : 3, "REPORT", remote: proxy.url)
        try await b.ok(["sync", "--protocol", "dav", "--remote", proxy.url], environment: environment)
        let held = try await Self.names(b, "Holiday")
        #expect(held.count == 500)
        #expect(held == (try await Self.names(a, "Holiday")))
        #expect(try await a.ok(["sync"], environment: environment).contains("already in sync"))
    }

    @Test("through a server that sheds every 9th request (503, not applied) and one that loses the answer to every 11th (applied, answered 503): 200 creates, then edits and deletions both ways, converge with each UID once on the server and nothing lost",
          arguments: ["radicale", "xandikos"])
    func faults(server: String) async throws {
        let dav = try await OwnDAV(server)
        let calendar = dav.base + (server == "radicale" ? "evsync/" : "evsync/calendars/") + "holidays/"
        let directory = try TemporaryDirectory("dav-faults")
        let a = Evsync(store: directory.file("a")), b = Evsync(store: directory.file("b"))
        let environment = ["EVSYNC_AUTH_FILE": dav.authFile]
        let lines = (0..<200).map { #"{"name": "Day \#($0)", "date": "2027-01-01"}"# }.joined(separator: "\n") + "\n"
        try await a.ok(["import", "Holiday", "-"], stdin: lines)
        // Each fault costs a retry's backoff (about 0.4 s): fewer faults keep the test short, enough still to hit every kind of request.
        let losing = try await SlowProxy(["--lost-answer-every", "11"], target: dav.base)
        let shedding = try await SlowProxy(["--unavailable-every", "9"], target: dav.base)
        func sync(_ evsync: Evsync, through proxy: SlowProxy) async throws {
            let report = try JSONParser.parse(try await evsync.ok(["sync", "--json", "--protocol", "dav", "--remote", proxy.url], environment: environment))
            let fields = report.objectValue ?? [:]
            #expect(fields["result"]?.stringValue != "failed" && fields["conflicts"]?.int64Value == 0 && fields["rejected"]?.arrayValue?.isEmpty == true,
                    "\(JSONWriter.string(report))")
        }
        let peer = Peer(collection: calendar, authFile: dav.authFile)
        func expectConverged(_ count: Int) async throws {
            let served = try await peer.listing()
            #expect(served.count == count && served.items.count == count, "\(served.count) items, \(served.items.count) UIDs")
            let held = try await Self.names(a, "Holiday")
            #expect(held.count == count)
            #expect(try await Self.names(b, "Holiday") == held)
        }

        // Creates whose answers are lost: each retry meets its own first copy (If-None-Match: * answered 412).
        try await sync(a, through: losing)
        try await sync(b, through: shedding)
        try await expectConverged(200)

        // Edits and deletions both ways: a lost answer to a PUT If-Match or a DELETE is retried against what it did.
        let ids = try await Self.names(a, "Holiday").keys.sorted()
        // 15 of each, more than the 11 between two lost answers: a run of deletions has one lost.
        for id in ids[0..<15] { try await a.ok(["edit", "Holiday", id, "details=edited by a"]) }
        for id in ids[15..<30] { try await a.ok(["delete", "Holiday", id]) }
        for id in ids[30..<45] { try await b.ok(["edit", "Holiday", id, "name=renamed by b"]) }
        for id in ids[45..<60] { try await b.ok(["delete", "Holiday", id]) }
        try await sync(a, through: losing)
        try await sync(b, through: shedding)
        try await sync(a, through: losing)
        try await expectConverged(170)
        let held = try await a.json(["list", "Holiday", "--json"]).arrayValue ?? []
        #expect(held.filter { $0.objectValue?["details"]?.stringValue == "edited by a" }.count == 15)
        #expect(held.filter { $0.objectValue?["name"]?.stringValue == "renamed by b" }.count == 15)

        // The faults happened: writes of every kind lost their answers, and the other proxy shed requests. (Which
        // requests a proxy's every Nth falls on depends on how many the syncs make, so only that much is certain.)
        let lost = losing.answered.filter { $0.hasSuffix(" 503") }, shed = shedding.answered.filter { $0.hasSuffix(" 503") }
        #expect(lost.contains { $0.hasPrefix("PUT ") } && lost.contains { $0.hasPrefix("DELETE ") }, "\(lost)")
        #expect(shed.count >= 3, "\(shed)")
        #expect(try await a.ok(["sync"], environment: environment).contains("already in sync"))
        #expect(try await b.ok(["sync"], environment: environment).contains("already in sync"))
    }
}

/// DAVRemote's push against the real servers, operation by operation: what the engine folds.
@Suite("DAV push outcomes", .serialized)
struct DAVPushTests {
    static func remote(_ dav: OwnDAV) throws -> (DAVRemote, EntitySchema) {
        let credentials = try Credentials(userPassword: String(contentsOfFile: dav.authFile, encoding: .utf8))
        let remote = try DAVRemote(serverURL: dav.base, credentials: credentials)
        let holiday = try SchemaRegistry().schema(named: "Holiday")
        try remote.prepare([(holiday, nil)])
        return (remote, holiday)
    }

    static func put(_ dav: OwnDAV, _ path: String, _ body: String, headers: [(String, String)] = [], type: String = "text/calendar") throws -> HTTPResponse {
        let client = try HTTPClient(server: try #require(URL(string: dav.base)), credentials: try Credentials(userPassword: String(contentsOfFile: dav.authFile, encoding: .utf8)),
                                    userAgent: "evsync-tests")
        return try client.send(HTTPRequest(method: "PUT", url: try #require(URL(string: dav.base + path)), headers: headers,
                                           body: Array(body.utf8), contentType: type + "; charset=utf-8"))
    }

    static func item(uid: String, summary: String) -> String {
        ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//peer//EN", "BEGIN:VEVENT", "UID:\(uid)", "DTSTAMP:20270101T000000Z",
         "DTSTART;VALUE=DATE:20270301", "SUMMARY:\(summary)", "X-PEER:yes", "END:VEVENT", "END:VCALENDAR", ""].joined(separator: "\r\n")
    }

    @Test("a create sent twice is acknowledged from its first copy; an update against a stale ETag gets the server's item to merge; a UID held at another href is that item, a conflict, not a loop", arguments: ["radicale", "xandikos"])
    func outcomes(server: String) async throws {
        let dav = try await OwnDAV(server)
        let (remote, holiday) = try Self.remote(dav)
        let fields: JSONObject = ["name": "Carnival", "date": "2027-02-08"]
        guard case .applied(let version) = try remote.push([.create(id: "carnival", fields: fields)], of: holiday).first else {
            Issue.record("the create was not applied")
            return
        }
        // Sent again (a lost answer): 412, and the server's copy equals what was sent: the engine acknowledges it.
        let again = try remote.push([.create(id: "carnival", fields: fields)], of: holiday)
        #expect(again == [.preconditionFailed(current: RemoteRecord(id: "carnival", version: version, fields: fields))])

        // Another client changes it; an update based on the old ETag gets the server's item, never overwrites it.
        let home = server == "radicale" ? "evsync/" : "evsync/calendars/"
        #expect((200..<300).contains(try Self.put(dav, home + "holidays/carnival.ics", Self.item(uid: "carnival", summary: "Karneval")).status))
        let stale = try remote.push([.update(id: "carnival", fields: ["name": "Carnaval", "date": "2027-02-08"], version: version)], of: holiday)
        guard case .preconditionFailed(let current?) = stale.first else {
            Issue.record("a stale update gave \(stale)")
            return
        }
        #expect(current.fields == ["name": "Karneval", "date": "2027-03-01"])
        // The merge pushed on the server's version patches the peer's item: its X- line stays.
        let merged = try remote.push([.update(id: "carnival", fields: ["name": "Carnaval", "date": "2027-03-01"], version: current.version)], of: holiday)
        guard case .applied = merged.first else {
            Issue.record("the merge gave \(merged)")
            return
        }
        let stored = try #require(try remote.record("carnival", of: holiday))
        #expect(stored.fields == ["name": "Carnaval", "date": "2027-03-01"])
        let collection = try remote.collection(for: holiday)
        let body = try #require(try remote.fetch(remote.href(forUID: "carnival", in: collection), mapping: HolidayMapping(), collection: collection)).body
        #expect(String(decoding: body, as: UTF8.self).contains("X-PEER:yes"))

        // A UID another item holds at another href.
        #expect((200..<300).contains(try Self.put(dav, home + "holidays/elsewhere.ics", Self.item(uid: "shared", summary: "Theirs")).status))
        let conflict = try remote.push([.create(id: "shared", fields: ["name": "Ours", "date": "2027-03-01"])], of: holiday)
        // Radicale answers 409, Xandikos 412, neither naming the other item: it is found by its UID.
        guard case .preconditionFailed(let theirs?) = conflict.first else {
            Issue.record("a UID conflict gave \(conflict)")
            return
        }
        #expect(theirs.fields?["name"] == "Theirs")
        #expect(DAVVersion(theirs.version).href?.hasSuffix("/holidays/elsewhere.ics") == true)
        // The merge goes to the other item's href, with its ETag.
        let onto = try remote.push([.update(id: "shared", fields: ["name": "Ours", "date": "2027-03-01"], version: theirs.version)], of: holiday)
        guard case .applied(let after) = onto.first else {
            Issue.record("the update of the other item gave \(onto)")
            return
        }
        #expect(DAVVersion(after).href == DAVVersion(theirs.version).href)
    }
}
