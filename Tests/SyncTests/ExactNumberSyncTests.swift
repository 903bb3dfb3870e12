@testable import EventStore
import TestSupport
import Foundation
import Testing

/// Numbers another client wrote to Kinto come back to it exactly as they
/// were after evsync pulled them, renamed the record and pushed it: evsync
/// never turns a number nobody edited into a float.
@Suite(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .deletesTestBuckets)
struct ExactNumberSyncTests {
    static let schema = """
    {
      "title": "Measurement",
      "x-evsync-collection": "measurements",
      "properties": {
        "name": { "type": "string" },
        "n": { "type": "integer" }, "x": { "type": "integer" }, "t": { "type": "integer" }, "big": { "type": "number" },
        "f": { "type": "number" }, "one": { "type": "number" }, "k": { "type": "number" }, "pi": { "type": "number" }, "deep": {}
      }
    }
    """

    /// The numbers as the web app sends them. Kinto (python-rapidjson) keeps
    /// integers up to 64 bits exactly and writes floats its own way (`1e3` as
    /// `1000.0`, a float with more digits than a double as 16 of them, an
    /// integer past 64 bits as a float): what "kept" means is that the server
    /// hands back, after evsync's push, what it held before it.
    static let numbers = #"""
    {"name": "probe", "n": 9007199254740993, "x": 12345678901234567891, "t": 1733011200123456,
     "big": 123456789012345678901234567890, "f": 1.2345678901234567891e19, "one": 1.0, "k": 1e3,
     "pi": 3.14159265358979323846264338327950288}
    """#

    @Test func numbersPulledRenamedAndPushedReachTheServerUnchanged() async throws {
        let fx = try SyncFixture()
        let schemas = try TemporaryDirectory("synctests-schemas")
        try Self.schema.write(toFile: schemas.file("measurement.schema.json"), atomically: true, encoding: .utf8)
        let environment = ["EVSYNC_SCHEMAS": schemas.path]
        try await fx.web.createBucket(collections: ["holidays", "birthdays", "measurements"])
        guard case .object(let fields) = try JSONParser.parse(Self.numbers) else { throw KintoWebApp.Failure(description: "bad fixture") }
        try await fx.web.put("m1", fields, in: "measurements")
        let before = try #require(try await fx.web.get("m1", in: "measurements")).fields
        #expect(before["n"].map(JSONWriter.string) == "9007199254740993", "Kinto keeps 64-bit integers: \(before)")

        func sync() async throws {
            let output = try await fx.cli.run(["sync", "--remote", fx.remote, "--auth-file", fx.authFile, "--json"], environment: environment)
            #expect(output.status == 0, "\(output)")
        }
        try await sync()
        // Pulled, the literals are in the log and the views as the server wrote them.
        let shown = try JSONParser.parse(try await fx.cli.ok(["show", "Measurement", "m1", "--json"], environment: environment))
        var expected = before
        expected["id"] = .string("m1")
        #expect(JSONWriter.string(shown) == JSONWriter.string(.object(expected)))

        try await fx.cli.ok(["edit", "Measurement", "m1", "name=renamed"], environment: environment)
        try await sync()
        let after = try #require(try await fx.web.get("m1", in: "measurements")).fields
        #expect(after["name"] == "renamed")
        for (field, value) in before where field != "name" {
            // Compared as text: 1.0 and 1 are different literals.
            #expect(after[field].map(JSONWriter.string) == JSONWriter.string(value), "\(field)")
        }
    }

    /// Kinto takes values nested 300 deep (479 in a single PUT, fewer through its batch endpoint, which evsync pushes with): such a record pulls, shows and pushes.
    @Test func aRecordNestedAsDeepAsKintoTakesSyncsBothWays() async throws {
        let fx = try SyncFixture()
        let schemas = try TemporaryDirectory("synctests-schemas")
        try Self.schema.write(toFile: schemas.file("measurement.schema.json"), atomically: true, encoding: .utf8)
        let environment = ["EVSYNC_SCHEMAS": schemas.path]
        try await fx.web.createBucket(collections: ["holidays", "birthdays", "measurements"])
        let deep = (0..<300).reduce(JSONValue.number(1)) { inner, level in level % 2 == 0 ? [inner] : ["k": inner] }
        try await fx.web.put("d1", ["name": "deep", "deep": deep], in: "measurements")

        let first = try await fx.cli.run(["sync", "--remote", fx.remote, "--auth-file", fx.authFile, "--json"], environment: environment)
        #expect(first.status == 0, "\(first)")
        let shown = try JSONParser.parse(try await fx.cli.ok(["show", "Measurement", "d1", "--json"], environment: environment))
        #expect(shown.objectValue?["deep"] == deep)
        for command in [["history", "d1"], ["log", "tail"], ["list", "Measurement"], ["rebuild-views", "--verify"]] {
            try await fx.cli.ok(command, environment: environment)
        }
        try await fx.cli.ok(["edit", "Measurement", "d1", "name=renamed"], environment: environment)
        let second = try await fx.cli.run(["sync", "--remote", fx.remote, "--auth-file", fx.authFile, "--json"], environment: environment)
        #expect(second.status == 0, "\(second)")
        let after = try #require(try await fx.web.get("d1", in: "measurements")).fields
        #expect(after["name"] == "renamed" && after["deep"] == deep)
    }
}
