import EventStore
@testable import EventSync
import Testing

/// `RemoteFold`'s rules, one row each: what the log knows of a record (the
/// shadow the server last held, the local row, the version), what the server
/// now says, the policy → the one event to append, or none.
struct RemoteFoldTests {
    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        var base: JSONObject?
        var local: JSONObject?
        var known: RemoteVersion? = RemoteVersion("v1")
        var server: JSONObject?
        var policy: ConflictPolicy = .serverWins
        var checkVersion = true
        /// Our states since the server last spoke, oldest first; nil: the fold must not ask for them.
        var past: [JSONObject?]?
        let expected: RemoteFold.Outcome?

        var testDescription: String { name }
    }

    private static let v2 = RemoteVersion("v2")
    private static let a: JSONObject = ["name": "A", "date": "1"]

    static let rows: [Row] = [
        // Nothing pending here: the server's change is taken as it is, as a difference from the shadow.
        Row(name: "server changed a field, nothing pending", base: a, local: a, server: ["name": "B", "date": "1"],
            expected: .remote(kind: .updated, set: ["name": "B"], unset: [], version: v2)),
        Row(name: "server removed a field, nothing pending", base: a, local: a, server: ["name": "A"],
            expected: .remote(kind: .updated, set: [:], unset: ["date"], version: v2)),
        Row(name: "a record new to the log", known: nil, server: a,
            expected: .remote(kind: .created, set: a, unset: [], version: v2)),
        Row(name: "server deleted it, nothing pending", base: a, local: a, server: nil,
            expected: .remote(kind: .deleted, set: [:], unset: [], version: v2)),
        Row(name: "a tombstone of a record never seen", known: nil, server: nil, expected: nil),
        Row(name: "a version the log already has", base: a, local: ["name": "L", "date": "1"], known: v2,
            server: ["name": "S", "date": "1"], expected: nil),

        // Pending here, the other field changed there: merged without a conflict.
        Row(name: "local and server changed different fields", base: a, local: ["name": "A", "date": "2"],
            server: ["name": "B", "date": "1"], past: [],
            expected: .remote(kind: .updated, set: ["name": "B"], unset: [], version: v2)),
        Row(name: "local and server made the same change", base: a, local: ["name": "B", "date": "1"],
            server: ["name": "B", "date": "1"],
            expected: .remote(kind: .updated, set: ["name": "B"], unset: [], version: v2)),
        Row(name: "created here and there alike", local: a, known: nil, server: a,
            expected: .remote(kind: .created, set: a, unset: [], version: v2)),

        // The same field changed on both sides: the policy settles it, other fields still merge.
        Row(name: "same field, serverWins", base: a, local: ["name": "L", "date": "2"], server: ["name": "S", "date": "1"], past: [],
            expected: .conflict(local: .present(["name": "L", "date": "2"]), server: .present(["name": "S", "date": "1"]),
                                resolved: .present(["name": "S", "date": "2"]), version: v2)),
        Row(name: "same field, clientWins", base: a, local: ["name": "L", "date": "2"], server: ["name": "S", "date": "1"],
            policy: .clientWins, past: [],
            expected: .conflict(local: .present(["name": "L", "date": "2"]), server: .present(["name": "S", "date": "1"]),
                                resolved: .present(["name": "L", "date": "2"]), version: v2)),
        Row(name: "created here and there differently, serverWins", local: ["name": "L"], known: nil, server: ["name": "S"], past: [],
            expected: .conflict(local: .present(["name": "L"]), server: .present(["name": "S"]),
                                resolved: .present(["name": "S"]), version: v2)),

        // Update against delete, both ways.
        Row(name: "updated here, deleted there, serverWins", base: a, local: ["name": "L", "date": "1"], server: nil, past: [],
            expected: .conflict(local: .present(["name": "L", "date": "1"]), server: .absent, resolved: .absent, version: v2)),
        Row(name: "updated here, deleted there, clientWins", base: a, local: ["name": "L", "date": "1"], server: nil,
            policy: .clientWins, past: [],
            expected: .conflict(local: .present(["name": "L", "date": "1"]), server: .absent,
                                resolved: .present(["name": "L", "date": "1"]), version: v2)),
        Row(name: "deleted here, updated there, serverWins", base: a, local: nil, server: ["name": "S", "date": "1"], past: [],
            expected: .conflict(local: .absent, server: .present(["name": "S", "date": "1"]),
                                resolved: .present(["name": "S", "date": "1"]), version: v2)),
        Row(name: "deleted here, updated there, clientWins", base: a, local: nil, server: ["name": "S", "date": "1"],
            policy: .clientWins, past: [],
            expected: .conflict(local: .absent, server: .present(["name": "S", "date": "1"]), resolved: .absent, version: v2)),
        // A new version with nothing changed there: the delete stays pending, nothing to settle.
        Row(name: "deleted here, unchanged there", base: a, local: nil, server: a, past: [],
            expected: .remote(kind: .updated, set: [:], unset: [], version: v2)),
        Row(name: "deleted here and there", base: a, local: nil, server: nil,
            expected: .remote(kind: .deleted, set: [:], unset: [], version: v2)),

        // The server holds one of our earlier pushes (a sync died before logging its acknowledgement).
        Row(name: "server holds an earlier push of ours", base: a, local: ["name": "C", "date": "1"],
            server: ["name": "B", "date": "1"], past: [["name": "B", "date": "1"], ["name": "C", "date": "1"]],
            expected: .acknowledged(server: .present(["name": "B", "date": "1"]), version: v2)),
        Row(name: "server holds our earlier delete", base: a, local: ["name": "C", "date": "1"], server: nil,
            past: [nil, ["name": "C", "date": "1"]],
            expected: .acknowledged(server: .absent, version: v2)),
        Row(name: "our earlier states do not include the server's", base: a, local: ["name": "C", "date": "1"],
            server: ["name": "B", "date": "1"], past: [["name": "D", "date": "1"]],
            expected: .conflict(local: .present(["name": "C", "date": "1"]), server: .present(["name": "B", "date": "1"]),
                                resolved: .present(["name": "B", "date": "1"]), version: v2)),

        // From a failed precondition: the version is news even if the log has it.
        Row(name: "checkVersion false folds a known version", base: a, local: ["name": "L", "date": "1"], known: v2,
            server: ["name": "S", "date": "1"], checkVersion: false, past: [],
            expected: .conflict(local: .present(["name": "L", "date": "1"]), server: .present(["name": "S", "date": "1"]),
                                resolved: .present(["name": "S", "date": "1"]), version: v2)),
    ]

    struct NotToBeAsked: Error {}

    @Test(arguments: rows)
    func fold(_ row: Row) throws {
        let projection = RecordProjection(row: row.local, shadow: row.base, version: row.known)
        let remote = RemoteRecord(id: "r1", version: Self.v2, fields: row.server)
        let outcome = try RemoteFold.fold(remote, into: projection, policy: row.policy, checkVersion: row.checkVersion) {
            guard let past = row.past else { throw NotToBeAsked() }
            return past
        }
        #expect(outcome == row.expected)
    }

    struct MergeRow: Sendable, CustomTestStringConvertible {
        let name: String
        let base: JSONObject
        let local: JSONObject
        let server: JSONObject
        let merged: JSONObject
        let conflicting: [String]
        var testDescription: String { name }
    }

    static let mergeRows: [MergeRow] = [
        MergeRow(name: "a field added on each side", base: [:], local: ["x": "1"], server: ["y": "2"],
                 merged: ["x": "1", "y": "2"], conflicting: []),
        MergeRow(name: "removed here, unchanged there", base: ["x": "1", "y": "2"], local: ["y": "2"], server: ["x": "1", "y": "2"],
                 merged: ["y": "2"], conflicting: []),
        MergeRow(name: "removed there, unchanged here", base: ["x": "1", "y": "2"], local: ["x": "1", "y": "2"], server: ["y": "2"],
                 merged: ["y": "2"], conflicting: []),
        MergeRow(name: "removed here, changed there", base: ["x": "1"], local: [:], server: ["x": "2"],
                 merged: ["x": "2"], conflicting: ["x"]),
        MergeRow(name: "two fields changed on both sides, listed in order", base: ["a": "0", "b": "0"],
                 local: ["a": "L", "b": "L"], server: ["a": "S", "b": "S"], merged: ["a": "S", "b": "S"], conflicting: ["a", "b"]),
    ]

    /// Under serverWins; the policy's other side is in the fold rows.
    @Test(arguments: mergeRows)
    func merge(_ row: MergeRow) {
        let (merged, conflicting) = RemoteFold.merge(base: row.base, local: row.local, server: row.server, policy: .serverWins)
        #expect(merged == row.merged)
        #expect(conflicting == row.conflicting)
    }

    @Test func differenceSetsWhatChangedAndUnsetsWhatWentInOrder() {
        let (set, unset) = RemoteFold.difference(from: ["a": "1", "b": "2", "z": "3", "c": "4"], to: ["a": "1", "b": "9", "n": "5"])
        #expect(set == ["b": "9", "n": "5"])
        #expect(unset == ["c", "z"])
    }
}
