import Foundation
import Testing
@testable import EventStore
@testable import ParseAdapter

/// `ParsePull`'s rules as table rows: the queries a pull sends and the pages its
/// results make, with no server. ParseSyncTests run them against Tools/parse-standin.
@Suite("Parse pull steps")
struct ParsePullTests {
    static let holiday = try? SchemaRegistry().schema(named: "Holiday")

    /// The `where` of the pull's next request, as it is sent.
    static func condition(_ pull: ParsePull) -> String? {
        pull.query(pageSize: 1000).first { $0.name == "where" }?.value
    }

    static func object(_ id: String?, _ updatedAt: String?, unreadable: String? = nil) -> ParseRemote.FoundObject {
        var fields: JSONObject = ["name": "n", "date": ["__type": "Date", "iso": "2026-05-01T00:00:00.000Z"]]
        fields["objectId"] = id.map(JSONValue.string)
        fields["updatedAt"] = updatedAt.map(JSONValue.string)
        return ParseRemote.FoundObject(fields: fields, unreadable: unreadable)
    }

    @Test("a first pull asks for everything, oldest first, a page at a time")
    func firstQuery() {
        let pull = ParsePull(since: nil, reReadWindow: 60)
        #expect(pull.query(pageSize: 500).map(\.name) == ["order", "limit"])
        #expect(pull.query(pageSize: 500).map(\.value) == ["updatedAt,objectId", "500"])
    }

    @Test("a pull with a cursor starts the re-read window behind its updatedAt", arguments: [
        ("2026-05-01T10:00:00.000Z abc", 60.0, #"{"updatedAt":{"$gte":{"__type":"Date","iso":"2026-05-01T09:59:00.000Z"}}}"#),
        ("2026-05-01T10:00:00.500Z abc", 0.25, #"{"updatedAt":{"$gte":{"__type":"Date","iso":"2026-05-01T10:00:00.250Z"}}}"#),
        ("not a date", 60.0, nil),
    ] as [(String, Double, String?)])
    func resumedQuery(cursor: String, window: Double, condition: String?) {
        #expect(Self.condition(ParsePull(since: RemoteCursor(cursor), reReadWindow: window)) == condition)
    }

    @Test("each page's cursor is its last object; the next asks for what sorts after it by (updatedAt, objectId)")
    func paging() throws {
        let schema = try #require(Self.holiday)
        var pull = ParsePull(since: nil, reReadWindow: 60)
        let read = pull.page(of: [Self.object("a1", "2026-05-01T10:00:00.000Z"), Self.object("b2", "2026-05-01T10:00:01.000Z")], schema: schema)
        let page = try #require(read)
        #expect(page.entries.map(page.id(of:)) == ["a1", "b2"])
        #expect(page.entries.map(\.version) == [RemoteVersion("2026-05-01T10:00:00.000Z"), RemoteVersion("2026-05-01T10:00:01.000Z")])
        #expect(page.cursor == RemoteCursor("2026-05-01T10:00:01.000Z b2"))
        #expect(try page.record(page.entries[0]).fields == ["name": "n", "date": "2026-05-01"], "Parse's members dropped, its Date a day")
        #expect(Self.condition(pull) == #"{"$or":[{"updatedAt":{"$gt":{"__type":"Date","iso":"2026-05-01T10:00:01.000Z"}}},"#
                + #"{"objectId":{"$gt":"b2"},"updatedAt":{"__type":"Date","iso":"2026-05-01T10:00:01.000Z"}}]}"#)
    }

    /// One page's results, and what the pull makes of them.
    struct Row: CustomTestStringConvertible, Sendable {
        let name: String
        let results: [(id: String?, updatedAt: String?, unreadable: String?)]
        /// The record ids of the page, nil when the pull ends.
        let records: [String]?
        let skipped: [String?]
        let cursor: String?
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "no results: the pull is over", results: [], records: nil, skipped: [], cursor: nil),
        Row(name: "an object without objectId is skipped, and paging goes on after the last one with both",
            results: [("a1", "2026-05-01T10:00:00.000Z", nil), (nil, "2026-05-01T10:00:01.000Z", nil)],
            records: ["a1"], skipped: [nil], cursor: "2026-05-01T10:00:00.000Z a1"),
        Row(name: "only objects that cannot be paged past: the pull is over, reporting none",
            results: [(nil, "2026-05-01T10:00:00.000Z", nil), ("a1", nil, nil)], records: nil, skipped: [], cursor: nil),
        Row(name: "an unreadable object is skipped under its id, and the cursor moves past it",
            results: [("a1", "2026-05-01T10:00:00.000Z", nil), ("b2", "2026-05-01T10:00:01.000Z", "a key given twice")],
            records: ["a1"], skipped: ["b2"], cursor: "2026-05-01T10:00:01.000Z b2"),
        Row(name: "an objectId evsync cannot hold is skipped",
            results: [("a.b", "2026-05-01T10:00:00.000Z", nil)], records: [], skipped: ["a.b"], cursor: "2026-05-01T10:00:00.000Z a.b"),
    ]

    @Test("a page of results", arguments: rows)
    func page(row: Row) throws {
        let schema = try #require(Self.holiday)
        var pull = ParsePull(since: nil, reReadWindow: 60)
        let page = pull.page(of: row.results.map { Self.object($0.id, $0.updatedAt, unreadable: $0.unreadable) }, schema: schema)
        #expect(page.map { page in page.entries.map(page.id(of:)) } == row.records)
        #expect((page?.skipped.map(\.id) ?? []) == row.skipped)
        #expect(page?.cursor?.token == row.cursor)
        if page == nil { #expect(Self.condition(pull) == nil, "a pull that is over moves nothing") }
    }
}
