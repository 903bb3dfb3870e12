@testable import DAVAdapter
import EventStore
import HTTPTransport
import TestSupport
import Foundation
import Testing

/// The DAV mapping against independent implementations: Python's `icalendar` and `vobject` must read every item
/// it writes as it meant them (Tools/dav-read-items), and real servers (Tools/dav) must take a mapped holiday and
/// give it back. The adapter's own integration tests come with the adapter (docs/dav.md).
@Suite("DAV interop")
struct DAVInteropTests {
    static let repository = ServerTool.repository
    static let python = repository.appendingPathComponent(".tools/venv/bin/python").path

    /// Whether .tools/venv has both parsers (Tools/python-env installs them; Tools/test runs it).
    static let parsersInstalled: Bool = {
        let lib = repository.appendingPathComponent(".tools/venv/lib")
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: lib.path)) ?? []
        return FileManager.default.isExecutableFile(atPath: python) && versions.contains { version in
            ["icalendar", "vobject"].allSatisfy {
                FileManager.default.fileExists(atPath: lib.appendingPathComponent("\(version)/site-packages/\($0)/__init__.py").path)
            }
        }
    }()

    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

    /// One item the mapping writes: a new one, or another client's item patched.
    struct Item {
        let file: String
        let mapping: any DAVMapping
        let uid: String
        let fields: JSONObject
        var base: String?

        func written() throws -> String {
            try mapping.write(uid: uid, fields: fields, onto: base.map { try VDocument(parsing: $0) }, now: DAVInteropTests.now).serialized()
        }
    }

    static let items: [Item] = {
        let holidays = HolidayMapping(), birthdays = BirthdayMapping()
        func patched(_ sample: String, _ mapping: any DAVMapping, _ change: (inout JSONObject) -> Void) -> (String, JSONObject, String) {
            let read = (try? mapping.read(text: sample)) ?? DAVMappedItem(uid: "unreadable", fields: [:])
            var fields = read.fields
            change(&fields)
            return (read.uid, fields, sample)
        }
        var items = [
            Item(file: "new-full.ics", mapping: holidays, uid: "evsync-1", fields: [
                "name": "Koningsdag", "date": "2027-04-27", "details": "King's Day; orange, everywhere\nand a free market",
                "wikipediaLink": "https://en.wikipedia.org/wiki/King%27s_Day", "observedBy": ["NL", "Aruba, Curaçao"], "image": .string(png),
            ]),
            Item(file: "new-minimal.ics", mapping: holidays, uid: "evsync-2", fields: ["name": "New Year", "date": "2027-01-01"]),
            Item(file: "new-long.ics", mapping: holidays, uid: "evsync-3@example.com", fields: [
                "name": .string(String(repeating: "建国記念の日 — Fête nationale; ", count: 6)), "date": "2028-02-29",
                "details": .string(String(repeating: "Ünïcödé, \\ back\\slash; and a\nnewline. ", count: 12)), "observedBy": ["a,b", "c;d", "e\\f"],
            ]),
            Item(file: "new-full.vcf", mapping: birthdays, uid: "evsync-4", fields: [
                "name": "Ada Lovelace", "date": "1815-12-10", "giftIdeas": "Notes; a loom, punched cards\nand tea",
                "facebook": "https://www.facebook.com/ada", "image": .string(png),
            ]),
            Item(file: "new-yearless.vcf", mapping: birthdays, uid: "evsync-5", fields: ["name": "Grace Hopper", "date": "1604-12-09", "facebook": "grace"]),
        ]
        for (file, sample, mapping, change) in [
            ("apple.ics", DAVSamples.appleHoliday, holidays as any DAVMapping, { (f: inout JSONObject) in f["name"] = "Liberation Day"; f["details"] = "Every 5 years" }),
            ("google.ics", DAVSamples.googleYearly, holidays, { $0["date"] = "2027-12-26" }),
            ("thunderbird.ics", DAVSamples.thunderbirdHoliday, holidays, { $0["observedBy"] = ["FR", "Bastille, Paris"] }),
            ("nextcloud.ics", DAVSamples.nextcloudHoliday, holidays, { $0["image"] = "R0lGODlhAQABAAAAACw=" }),
            ("apple.vcf", DAVSamples.appleCard, birthdays, { $0["name"] = "Augusta Ada King"; $0["date"] = "1604-12-11" }),
            ("nextcloud.vcf", DAVSamples.nextcloudCard, birthdays, { $0["giftIdeas"] = "A chess clock, a marathon"; $0["date"] = "1912-06-24" }),
            ("thunderbird.vcf", DAVSamples.thunderbirdCard, birthdays, { $0["date"] = "1604-12-11"; $0["facebook"] = "ada"; $0["image"] = .string(png) }),
        ] as [(String, String, any DAVMapping, (inout JSONObject) -> Void)] {
            let (uid, fields, base) = patched(sample, mapping, change)
            items.append(Item(file: "patched-" + file, mapping: mapping, uid: uid, fields: fields, base: base))
        }
        return items
    }()

    /// What each parser should read from an item with these fields, property by property.
    static func expected(_ item: Item, written: String, parser: String) throws -> JSONObject {
        let f = item.fields
        if item.file.hasSuffix(".ics") {
            let date = try #require(f["date"]?.stringValue.flatMap { DAVDate($0) })
            var values: JSONObject = ["UID": .string(item.uid), "SUMMARY": f["name"] ?? .null, "DTSTART": .string(date.description),
                                      "DTEND": .string(try #require(date.next).description), "DTSTAMP": "2027-01-15T08:00:00+00:00"]
            values["DESCRIPTION"] = f["details"]
            values["URL"] = f["wikipediaLink"]
            values["CATEGORIES"] = f["observedBy"]
            values["ATTACH"] = f["image"]
            return values
        }
        let version = written.contains("VERSION:4.0") ? "4.0" : "3.0"
        guard parser == "vobject" else {
            var values: JSONObject = ["UID": .string(item.uid), "FN": f["name"] ?? .null]
            values["PHOTO"] = f["image"]
            return values
        }
        let date = try #require(f["date"]?.stringValue.flatMap { DAVDate($0) })
        let bday = version == "4.0" ? (date.isYearless ? date.yearlessBasic : date.basic) : date.description
        var values: JSONObject = ["VERSION": .string(version), "UID": .string(item.uid), "FN": f["name"] ?? .null, "BDAY": .string(bday)]
        let n = try #require(VDocument(parsing: written).components.first?.line(named: "N")).value
        values["N"] = .array(VText.structured(n).map { .string($0.joined(separator: ",")) })
        values["NOTE"] = f["giftIdeas"]
        values["SOCIALPROFILE"] = f["facebook"]
        // vobject reads vCard 3 only, and cuts vCard 4's data: URI at its comma: icalendar's reading checks it.
        values["PHOTO"] = version == "4.0" ? nil : f["image"]
        return values
    }

    @Test("every item the mapping writes parses with icalendar and vobject, which read what evsync meant",
          .enabled(if: parsersInstalled, "needs icalendar and vobject in .tools/venv (Tools/python-env installs them)"))
    func parsers() async throws {
        let directory = try TemporaryDirectory("dav-interop")
        var written: [String: String] = [:]
        for item in Self.items {
            let text = try item.written()
            written[item.file] = text
            try Data(text.utf8).write(to: URL(fileURLWithPath: directory.file(item.file)))
        }
        let output = try await ProcessRunner.run(Self.python, [Self.repository.appendingPathComponent("Tools/dav-read-items").path]
                                                 + Self.items.map { directory.file($0.file) }, environment: ProcessInfo.processInfo.environment)
        #expect(output.status == 0, "\(output)")
        var seen = 0
        for line in output.stdoutLines {
            let answer = try #require(JSONParser.parse(line).objectValue)
            let file = try #require(answer["file"]?.stringValue.map { ($0 as NSString).lastPathComponent })
            let parser = try #require(answer["parser"]?.stringValue)
            let item = try #require(Self.items.first { $0.file == file })
            #expect(answer["error"] == nil, "\(parser) could not read \(file): \(answer["error"].map(JSONWriter.string) ?? "")")
            #expect(answer["values"]?.objectValue == (try Self.expected(item, written: written[file] ?? "", parser: parser)), "\(parser) read \(file)")
            seen += 1
        }
        #expect(seen == Self.items.count * 2)
    }
}

/// `Tools/dav` against the mapping: a real Radicale and a real Xandikos take a mapped holiday, created with
/// `If-None-Match: *` once only, and give it back in a calendar-multiget, rewritten in their own ways but the same
/// holiday; and `stop` leaves no process behind. HTTP through evsync's own HTTPTransport (any method, any type).
@Suite("DAV servers")
struct DAVServerTests {
    static let holiday: JSONObject = [
        "name": "Koningsdag", "date": "2027-04-27", "details": "King's Day; orange, everywhere",
        "observedBy": ["NL", "Aruba, Curaçao"], "image": .string(DAVInteropTests.png),
    ]

    /// The text of the first `name` element in a multistatus (any namespace prefix), XML entities decoded.
    static func element(_ name: String, in xml: String) throws -> String {
        let pattern = try Regex("<(?:[A-Za-z0-9_]+:)?\(name)(?:\\s[^>]*)?>(.*?)</(?:[A-Za-z0-9_]+:)?\(name)>").dotMatchesNewlines()
        let match = try #require(xml.firstMatch(of: pattern), "no \(name) in \(xml.prefix(300))")
        let text = try #require(match.output[1].substring.map(String.init))
        var decoded = text
        for (entity, character) in [("&lt;", "<"), ("&gt;", ">"), ("&quot;", "\""), ("&apos;", "'"), ("&#13;", "\r"), ("&#xD;", "\r"), ("&#xd;", "\r"), ("&amp;", "&")] {
            decoded = decoded.replacingOccurrences(of: entity, with: character)
        }
        return decoded
    }

    static func request(_ client: HTTPClient, _ method: String, _ url: String, type: String? = nil, headers: [(String, String)] = [],
                        body: String? = nil) throws -> HTTPResponse {
        try client.send(HTTPRequest(method: method, url: try #require(URL(string: url)), headers: headers, body: body.map { Array($0.utf8) },
                                    contentType: type))
    }

    @Test("the server takes a mapped holiday with If-None-Match: * once, gives it back in a calendar-multiget, and stops",
          arguments: ["radicale", "xandikos"])
    func putAndMultiget(server: String) async throws {
        let dav = try await OwnDAV(server)
        #expect(try dav.status() == "running \(server) \(dav.base)")
        let client = try HTTPClient(server: try #require(URL(string: dav.base)), credentials: try Credentials(userPassword: String(contentsOfFile: dav.authFile, encoding: .utf8)),
                                    userAgent: "evsync-tests")
        let xml = "application/xml; charset=utf-8"
        let principal = try Self.request(client, "PROPFIND", dav.base + "evsync/", type: xml, headers: [("Depth", "0")], body: """
            <propfind xmlns="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><prop><C:calendar-home-set/></prop></propfind>
            """)
        #expect(principal.status == 207)
        let home = try Self.element("href", in: Self.element("calendar-home-set", in: String(decoding: principal.body, as: UTF8.self)))
        let collection = home + "holidays-\(UUID().uuidString.lowercased())/"
        #expect(try Self.request(client, "MKCALENDAR", dav.base + collection.dropFirst()).status == 201)

        let uid = "evsync-\(UUID().uuidString.lowercased())"
        let mapping = HolidayMapping()
        let item = try mapping.write(uid: uid, fields: Self.holiday, onto: nil, now: Date())
        let href = collection + uid + ".ics"
        let calendar = "text/calendar; charset=utf-8"
        let created = try Self.request(client, "PUT", dav.base + href.dropFirst(), type: calendar, headers: [("If-None-Match", "*")], body: item.serialized())
        #expect(created.status == 201)
        // A create retried (after a crash, a lost answer) can never make a second copy.
        let again = try Self.request(client, "PUT", dav.base + href.dropFirst(), type: calendar, headers: [("If-None-Match", "*")], body: item.serialized())
        #expect(again.status == 412)

        let multiget = try Self.request(client, "REPORT", dav.base + collection.dropFirst(), type: xml, headers: [("Depth", "0")], body: """
            <C:calendar-multiget xmlns="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><prop><getetag/><C:calendar-data/></prop>\
            <href>\(href)</href></C:calendar-multiget>
            """)
        #expect(multiget.status == 207)
        let answer = String(decoding: multiget.body, as: UTF8.self)
        if let etag = created.headers["etag"] { #expect(try Self.element("getetag", in: answer) == etag) }
        let served = try VDocument(parsing: Self.element("calendar-data", in: answer))
        #expect(try mapping.read(served) == DAVMappedItem(uid: uid, fields: Self.holiday))
        // The server's rewriting (its order, its folds, its PRODID) is not an edit.
        #expect(!mapping.isEdit(from: item, to: served))

        let pid = try #require(dav.pid())
        #expect(try dav.stop() == 0)
        #expect(try dav.status() == "stopped")
        // Gone, or a zombie its parent has not reaped yet: either way not running.
        let state = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8))?.split(separator: ")").last?.split(separator: " ").first
        #expect(state == nil || state == "Z" || state == "X", "process \(pid) still \(state.map(String.init) ?? "")")
    }

    @Test("Tools/dav start --max-sync-token-age: Radicale answers a sync token older than that 403 DAV:valid-sync-token")
    func expiredToken() async throws {
        let dav = try await OwnDAV("radicale", ["--max-sync-token-age", "1"])
        let client = try HTTPClient(server: try #require(URL(string: dav.base)), credentials: try Credentials(userPassword: String(contentsOfFile: dav.authFile, encoding: .utf8)),
                                    userAgent: "evsync-tests")
        let collection = dav.base + "evsync/holidays/"
        #expect(try Self.request(client, "MKCALENDAR", collection).status == 201)
        func put(_ number: Int) throws {
            let item = try HolidayMapping().write(uid: "h\(number)", fields: ["name": "H", "date": "2027-01-01"], onto: nil, now: Date())
            #expect(try Self.request(client, "PUT", collection + "h\(number).ics", type: "text/calendar", body: item.serialized()).status == 201)
        }
        func sync(_ token: String) throws -> HTTPResponse {
            try Self.request(client, "REPORT", collection, type: "application/xml", headers: [("Depth", "1")], body: """
                <sync-collection xmlns="DAV:"><sync-token>\(token)</sync-token><sync-level>1</sync-level><prop><getetag/></prop></sync-collection>
                """)
        }
        try put(0)
        let first = try sync("")
        #expect(first.status == 207)
        let token = try Self.element("sync-token", in: String(decoding: first.body, as: UTF8.self))
        #expect(try sync(token).status == 207)
        // Radicale deletes old tokens when it makes a new one (a change, then a sync): until the token is a
        // second old, it stays valid. Bounded: 20 rounds.
        var refused: HTTPResponse?
        for round in 1...20 where refused == nil {
            try await Task.sleep(for: .milliseconds(500))
            try put(round)
            _ = try sync("")
            let answer = try sync(token)
            if answer.status != 207 { refused = answer }
        }
        let answer = try #require(refused, "the token never expired")
        #expect(answer.status == 403)
        #expect(String(decoding: answer.body, as: UTF8.self).contains("valid-sync-token"))
    }
}
