import Testing
@testable import EventStore
@testable import KintoAdapter

/// `KintoPull`'s rules as table rows: a cursor and the server's answers in, what
/// the pull does with each out (a trace of lines), with no server. The Kinto
/// suites (KintoSyncTests, ServerLossTests, ConcurrentServerTests, …) run the
/// same rules against a real Kinto.
@Suite("Kinto pull steps")
struct KintoPullTests {
    /// One record of a page, as Kinto lists it.
    enum Record {
        case live(String, Int64)
        case deleted(String, Int64)
        /// One the store cannot hold (its id is not a Kinto id), at this version.
        case unholdable(Int64)

        var json: String {
            switch self {
            case .live(let id, let version): #"{"id":"\#(id)","last_modified":\#(version),"name":"n"}"#
            case .deleted(let id, let version): #"{"id":"\#(id)","last_modified":\#(version),"deleted":true}"#
            case .unholdable(let version): #"{"id":"not an id","last_modified":\#(version)}"#
            }
        }
    }

    /// One answer of the server, in the order the pull reads them.
    struct Answer {
        var status = 200
        var etag: Int64?
        var records: [Record] = []
        var next = false
        /// The server's clock (`Date`), in milliseconds.
        var date: Int64? = 100_000
    }

    /// What the server's history plugin does when read.
    enum History { case readable, unreadable, absent }

    struct Row: CustomTestStringConvertible, Sendable {
        let name: String
        let since: String?
        let answers: [Answer]
        var created = true
        var history = History.readable
        let trace: [String]
        var testDescription: String { name }
    }

    /// Runs the pull as `KintoRemote.changes` drives it, the answers standing in for the server.
    static func run(_ row: Row) throws -> [String] {
        var pull = KintoPull(since: row.since.map(RemoteCursor.init), settleWindow: 10_000)
        var answers = row.answers[...]
        func nextAnswer() throws -> Answer {
            let answer = answers.popFirst()
            return try #require(answer, "the pull asked for more answers than the row has")
        }
        var trace: [String] = []
        var answer = try nextAnswer()
        opening: while true {
            switch pull.open(status: answer.status, etag: answer.etag) {
            case .create:
                trace.append("create")
                pull.created(row.created)
                answer = try nextAnswer()
            case .unchanged:
                trace.append("unchanged")
                return trace
            case .readAgain(let listing):
                trace.append("read again since \(listing.since.map(String.init) ?? "nil")")
                answer = try nextAnswer()
                break opening
            case .read:
                break opening
            }
        }
        if row.history == .absent, pull.historyFloor != nil { pull.withoutHistory() }
        while true {
            guard answer.status == 200 else { trace.append("fails: HTTP \(answer.status)"); return trace }
            let body = #"{"data":["# + answer.records.map(\.json).joined(separator: ",") + "]}"
            let records = try KintoRemote.page(from: Array(body.utf8), collection: "holidays")
            let step = pull.step(records, hasNext: answer.next, serverTime: answer.date)
            if let history = step.history {
                trace.append("history \(history.after)...\(history.upTo)")
                pull.historyRead(upTo: history.upTo, readable: row.history == .readable)
            }
            trace.append(describe(step))
            guard answer.next else {
                #expect(answers.isEmpty, "answers left over")
                return trace
            }
            answer = try nextAnswer()
        }
    }

    /// `page r1@60000 r2@61000(deleted) → 90000:96000 [count]`.
    static func describe(_ step: KintoPull.Step) -> String {
        let page = step.page
        let entries = page.entries.map { "\(page.id(of: $0))@\($0.version)\($0.fields == nil ? "(deleted)" : "")" }
        var marks: [String] = []
        if page.isReread { marks.append("reread") }
        if page.isRecreated { marks.append("recreated") }
        if page.needsVerification != nil { marks.append("verify") }
        if step.countsLiveRecords { marks.append("count") }
        if !page.skipped.isEmpty { marks.append("\(page.skipped.count) skipped") }
        return (["page"] + entries + ["→", page.cursor?.token ?? "nil"]).joined(separator: " ")
            + (marks.isEmpty ? "" : " [" + marks.joined(separator: ", ") + "]")
    }

    static let rows: [Row] = [
        // First pulls: the current records only, no history, no count; the cursor ends at the collection's ETag.
        Row(name: "first pull, one page", since: nil,
            answers: [Answer(etag: 50_000, records: [.live("a", 40_000), .live("b", 50_000)])],
            trace: ["page a@40000 b@50000 → 50000"]),
        Row(name: "first pull following Next-Page: the cursor says first until the last page", since: nil,
            answers: [Answer(etag: 30, records: [.live("a", 10), .live("b", 20)], next: true),
                      Answer(records: [.live("c", 30)])],
            trace: ["page a@10 b@20 → 20~first", "page c@30 → 30"]),
        Row(name: "first pull: a deletion newer than every live record moves the cursor to the ETag", since: nil,
            answers: [Answer(etag: 25, records: [.live("a", 10), .live("b", 20)])],
            trace: ["page a@10 b@20 → 25"]),
        Row(name: "first pull of an empty collection: its ETag", since: nil,
            answers: [Answer(etag: 7)],
            trace: ["page → 7"]),
        Row(name: "first pull of an empty collection without an ETag: no cursor", since: nil,
            answers: [Answer()],
            trace: ["page → nil"]),
        Row(name: "first pull in the settle window: the cursor stays 10 s behind the server's clock", since: nil,
            answers: [Answer(etag: 95_000, records: [.live("a", 95_000)])],
            trace: ["page a@95000 → 90000:95000"]),
        Row(name: "a first pull resumed after a crash reads no history and clears the mark", since: "20~first",
            answers: [Answer(etag: 30, records: [.live("c", 30)])],
            trace: ["page c@30 → 30"]),
        Row(name: "a resumed first pull with nothing new still clears the mark", since: "20~first",
            answers: [Answer()],
            trace: ["page → 20"]),

        // Later pulls: history past the last pull's newest, and a count on the last page.
        Row(name: "unchanged: 304", since: "50000",
            answers: [Answer(status: 304)],
            trace: ["unchanged"]),
        Row(name: "a change, settled: history from the last newest, then a count", since: "50000",
            answers: [Answer(etag: 60_000, records: [.live("a", 60_000)])],
            trace: ["history 50000...60000", "page a@60000 → 60000 [count]"]),
        Row(name: "the settle window holds the cursor back", since: "50000",
            answers: [Answer(etag: 95_000, records: [.live("a", 95_000)])],
            trace: ["history 50000...95000", "page a@95000 → 90000:95000"]),
        Row(name: "read again in the window: no history for what was read, the start moves with the clock", since: "90000:95000",
            answers: [Answer(etag: 95_000, records: [.live("a", 95_000)], date: 102_000)],
            trace: ["page a@95000 → 92000:95000"]),
        Row(name: "the clock passes the window: the cursor catches up, and only this pull counts", since: "90000:95000",
            answers: [Answer(etag: 95_000, records: [.live("a", 95_000)], date: 120_000)],
            trace: ["page a@95000 → 95000 [count]"]),
        Row(name: "a page that moves nothing leaves the cursor", since: "92000:99000",
            answers: [Answer(etag: 99_000, records: [.live("a", 95_000)])],
            trace: ["page a@95000 → nil"]),
        Row(name: "a record newer than the server's clock (a client's stamp) is not held back", since: "50000",
            answers: [Answer(etag: 105_000, records: [.live("a", 105_000)])],
            trace: ["history 50000...105000", "page a@105000 → 105000 [count]"]),
        Row(name: "no Date: the cursor is the newest record", since: "50000",
            answers: [Answer(etag: 95_000, records: [.live("a", 95_000)], date: nil)],
            trace: ["history 50000...95000", "page a@95000 → 95000 [count]"]),
        Row(name: "an empty page: nothing moves, the count still runs", since: "50000",
            answers: [Answer(etag: 50_000)],
            trace: ["page → nil [count]"]),
        Row(name: "tombstones move the cursor like records", since: "50000",
            answers: [Answer(etag: 61_000, records: [.live("a", 60_000), .deleted("b", 61_000)])],
            trace: ["history 50000...61000", "page a@60000 b@61000(deleted) → 61000 [count]"]),
        Row(name: "Next-Page: history page by page, the count on the last page only", since: "50000",
            answers: [Answer(etag: 70_000, records: [.live("a", 60_000)], next: true),
                      Answer(records: [.live("b", 70_000)])],
            trace: ["history 50000...60000", "page a@60000 → 60000",
                    "history 60000...70000", "page b@70000 → 70000 [count]"]),
        Row(name: "unreadable history: the rest of the pull goes without it", since: "50000",
            answers: [Answer(etag: 70_000, records: [.live("a", 60_000)], next: true),
                      Answer(records: [.live("b", 70_000)])],
            history: .unreadable,
            trace: ["history 50000...60000", "page a@60000 → 60000", "page b@70000 → 70000 [count]"]),
        Row(name: "no history plugin: records alone", since: "50000",
            answers: [Answer(etag: 60_000, records: [.live("a", 60_000)])],
            history: .absent,
            trace: ["page a@60000 → 60000 [count]"]),

        // Skips: reported once, by the pull that read them first.
        Row(name: "a record the store cannot hold is skipped, and the cursor moves past it", since: "50000",
            answers: [Answer(etag: 60_000, records: [.live("a", 55_000), .unholdable(60_000)])],
            trace: ["history 50000...60000", "page a@55000 → 60000 [count, 1 skipped]"]),
        Row(name: "a skip read again in the settle window is not reported twice", since: "90000:95000",
            answers: [Answer(etag: 96_000, records: [.unholdable(93_000), .unholdable(96_000)])],
            trace: ["history 95000...96000", "page → 90000:96000 [1 skipped]"]),

        // A server that lost what we pulled.
        Row(name: "a purged tombstone: the ETag is past every change listed", since: "50000",
            answers: [Answer(etag: 80_000, records: [.live("a", 60_000)])],
            trace: ["history 50000...60000", "page a@60000 → 80000 [verify, count]"]),
        Row(name: "restored from a backup (ETag below the cursor): read again from the start", since: "50000",
            answers: [Answer(etag: 30_000), Answer(records: [.live("a", 10_000), .live("b", 30_000)])],
            trace: ["read again since nil", "page a@10000 b@30000 → 30000 [reread]"]),
        Row(name: "restored, read again over two pages: only the first is marked", since: "50000",
            answers: [Answer(etag: 30_000), Answer(records: [.live("a", 10_000)], next: true), Answer(records: [.live("b", 30_000)])],
            trace: ["read again since nil", "page a@10000 → 10000~first [reread]", "page b@30000 → 30000"]),
        Row(name: "restored to an empty collection: the next pull starts from its version", since: "50000",
            answers: [Answer(etag: 30_000), Answer()],
            trace: ["read again since nil", "page → 30000 [reread]"]),
        Row(name: "a recreated collection is said so, once", since: "50000",
            answers: [Answer(status: 403), Answer(etag: 70_000)],
            trace: ["create", "page → 70000 [recreated, verify, count]"]),
        Row(name: "recreated, over two pages: only the first is marked", since: "50000",
            answers: [Answer(status: 404), Answer(etag: 70_000, records: [.live("a", 60_000)], next: true),
                      Answer(records: [.live("b", 70_000)])],
            trace: ["create", "history 50000...60000", "page a@60000 → 60000 [recreated]",
                    "history 60000...70000", "page b@70000 → 70000 [count]"]),
        Row(name: "missing on a first pull: created, not recreated", since: nil,
            answers: [Answer(status: 403), Answer(etag: 5)],
            trace: ["create", "page → 5"]),
        Row(name: "created meanwhile by another client (412): not recreated", since: "50000",
            answers: [Answer(status: 403), Answer(etag: 50_000)],
            created: false,
            trace: ["create", "page → nil [count]"]),
        Row(name: "still missing after creating: created once, then the answer fails the pull", since: "50000",
            answers: [Answer(status: 403), Answer(status: 403)],
            trace: ["create", "fails: HTTP 403"]),
        Row(name: "a 304 after creating ends the pull", since: "50000",
            answers: [Answer(status: 404), Answer(status: 304)],
            trace: ["create", "unchanged"]),
    ]

    @Test("a pull's steps", arguments: rows)
    func steps(row: Row) throws {
        #expect(try Self.run(row) == row.trace)
    }

    @Test("the first request: _since from the cursor's start, If-None-Match only once it has settled", arguments: [
        (nil, nil, nil),
        ("50000", 50_000, 50_000),
        ("90000:95000", 90_000, nil),
        ("20~first", 20, 20),
        ("10:20~first", 10, nil),
        ("not ours", nil, nil),
    ] as [(String?, Int64?, Int64?)])
    func listing(cursor: String?, since: Int64?, ifNoneMatch: Int64?) {
        let listing = KintoPull.Listing(from: cursor.map(RemoteCursor.init))
        #expect(listing == KintoPull.Listing(since: since, ifNoneMatch: ifNoneMatch))
        #expect(KintoPull(since: cursor.map(RemoteCursor.init), settleWindow: 10_000).listing == listing)
    }

    @Test("reading again asks for everything, with no ETag")
    func readAgainListing() {
        var pull = KintoPull(since: RemoteCursor("50000"), settleWindow: 10_000)
        #expect(pull.open(status: 200, etag: 30_000) == .readAgain(KintoPull.Listing(since: nil, ifNoneMatch: nil)))
        #expect(pull.listing == KintoPull.Listing(since: nil, ifNoneMatch: nil))
        #expect(pull.historyFloor == nil)
    }

    @Test("a page without the versions its history brought keeps its marks and cursor")
    func removingHistoryVersions() {
        var page = RemotePage(records: [RemoteRecord(id: "a", version: RemoteVersion(1), fields: ["name": "n"]),
                                        RemoteRecord(id: "b", version: RemoteVersion(2), fields: nil)],
                              skipped: [SkippedRecord(id: nil, reason: "r")], cursor: RemoteCursor("2"), total: 9)
        (page.isRecreated, page.isReread, page.needsVerification, page.liveRecords) = (true, true, "why", 3)
        let kept = page.removing { id, _ in id == "a" }
        #expect(kept.entries.map(kept.id(of:)) == ["b"] && kept.entries.first?.fields == nil)
        #expect(kept.isRecreated && kept.isReread && kept.needsVerification == "why" && kept.liveRecords == 3)
        #expect(kept.cursor == RemoteCursor("2") && kept.total == 9 && kept.skipped == page.skipped)
    }

    @Test("a count is compared only when the collection's ETag is still the one the last page was listed at", arguments: [
        ("7", 95_000, 95_000, 7),
        ("7", 96_000, 95_000, nil),  // another device's write committed between the last page and the count
        ("7", nil, 95_000, nil),
        ("7", 95_000, nil, nil),
        (nil, 95_000, 95_000, nil),
        ("many", 95_000, 95_000, nil),
    ] as [(String?, Int64?, Int64?, Int?)])
    func liveRecords(total: String?, countETag: Int64?, pageETag: Int64?, live: Int?) {
        #expect(KintoPull.liveRecords(total: total, countETag: countETag, pageETag: pageETag) == live)
    }

    @Test("an ETag as Kinto spells it", arguments: [(#""1796093009071""#, 1_796_093_009_071), ("12", 12), (#""x""#, nil)] as [(String, Int64?)])
    func etag(text: String, timestamp: Int64?) {
        #expect(KintoPull.timestamp(fromETag: text) == timestamp)
    }
}
