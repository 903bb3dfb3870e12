import Foundation
import Testing
@testable import EventStore
import TestSupport

@Suite("CLI schema directories")
struct SchemaDirectoryCLITests {
    static let book = """
    {
      "$schema": "https://json-schema.org/draft/2020-12/schema",
      "title": "Book",
      "type": "object",
      "properties": {
        "title": { "type": "string", "minLength": 1 },
        "author": { "type": "string" },
        "pages": { "type": "integer" },
        "published": { "type": "string", "format": "date" }
      },
      "required": ["title"],
      "additionalProperties": false
    }
    """

    enum Way: String, CaseIterable, Sendable {
        case optionBefore, optionAfter, environment
    }

    @Test("a new entity works end to end", arguments: Way.allCases)
    func newEntity(way: Way) throws {
        try withSandbox { sandbox in
            let schemas = sandbox.root.appendingPathComponent("schemas").path
            try sandbox.write("schemas/book.schema.json", Self.book)
            func run(_ arguments: [String], stdin: Data? = nil) throws -> CLIResult {
                switch way {
                case .optionBefore: try sandbox.run(["--schemas", schemas] + arguments, stdin: stdin)
                case .optionAfter: try sandbox.run(arguments + ["--schemas=\(schemas)"], stdin: stdin)
                case .environment: try sandbox.run(arguments, stdin: stdin, environment: ["EVSYNC_SCHEMAS": schemas])
                }
            }
            func succeed(_ arguments: [String], stdin: Data? = nil) throws -> CLIResult {
                let result = try run(arguments, stdin: stdin)
                #expect(result.status == Exit.ok, "\(arguments): \(result)")
                return result
            }

            #expect(try succeed(["add", "Book", "--id", "dune", "title=Dune", "author=Frank Herbert", "pages:=412", "published=1965-08-01"]).stdout == "dune\n")
            #expect(try run(["add", "Book", "title=Half", "pages:=41.5"]).status == Exit.dataError)
            #expect(try run(["add", "Book", "title=X", "published=1965-13-01"]).status == Exit.dataError)
            #expect(try run(["add", "Book", "author=Nobody"]).status == Exit.dataError)
            #expect(try run(["add", "Book", "title=X", "isbn=123"]).status == Exit.dataError)
            _ = try succeed(["edit", "book", "dune", "pages:=896", "--unset", "published"])
            let imported = try succeed(["import", "Book", "-"], stdin: Data("""
            {"id":"lotr","title":"The Lord of the Rings","author":"J. R. R. Tolkien","pages":1178}
            {"title":"Untitled"}
            """.utf8))
            #expect(imported.stdout == "imported 2 Book records\n")

            let list = try #require(try succeed(["list", "Book", "--json"]).json().arrayValue)
            #expect(list.count == 3)
            #expect(list.contains(["id": "dune", "title": "Dune", "author": "Frank Herbert", "pages": 896]), "\(list)")
            #expect(list.contains { $0.objectValue?["title"] == "Untitled" })
            let table = try succeed(["list", "Book"])
            #expect(table.lines.first?.split(separator: " ") == ["id", "title", "author", "pages", "published"])
            #expect(table.stderr == "(3 Book records)\n")

            let history = try #require(try succeed(["history", "dune", "--json"]).json().arrayValue)
            #expect(history.compactMap { $0.objectValue?["kind"] } == ["created", "updated"])
            #expect(history.allSatisfy { $0.objectValue?["entity"] == "Book" })
            #expect(try succeed(["show", "Book", "dune", "--as-of", "1", "--json"]).json().objectValue?["pages"] == 412)
            let status = try #require(try succeed(["status", "--json"]).json().objectValue)
            #expect(status["records"] == ["Book": 3, "Holiday": 0, "Birthday": 0])
            #expect(try succeed(["rebuild-views", "--verify"]).status == Exit.ok)

            // Without the schema directory the entity is unknown…
            for arguments in [["add", "Book", "title=X"], ["list", "Book"], ["show", "Book", "dune"], ["edit", "Book", "dune", "pages:=1"],
                              ["import", "Book", "-"]] {
                let result = try sandbox.run(arguments, stdin: Data(#"{"title":"X"}"#.utf8))
                #expect(result.status == Exit.dataError, "\(arguments): \(result)")
                #expect(result.stderr.contains("unknown entity 'Book'"), "\(result)")
            }
            // …but its events are still in the log and its history readable.
            #expect(try sandbox.eventCount() == 4)
            #expect(try sandbox.succeed(["history", "dune", "--json"]).json().arrayValue?.count == 2)
            #expect(try sandbox.succeed(["rebuild-views", "--verify"]).status == Exit.ok)
        }
    }

    @Test("the repository's Schemas/ directory works, event.schema.json included")
    func repositorySchemas() throws {
        let schemas = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Schemas").path
        try withSandbox { sandbox in
            try sandbox.succeed(["--schemas", schemas, "add", "Holiday", "name=X", "date=2026-01-01"])
            #expect(try sandbox.run(["--schemas", schemas, "add", "Event", "seq:=1"]).status == Exit.dataError)
        }
    }

    @Test("a schema directory may replace a built-in entity")
    func replacesBuiltin() throws {
        try withSandbox { sandbox in
            let schemas = sandbox.root.appendingPathComponent("schemas").path
            try sandbox.write("schemas/holiday.schema.json", #"{"title": "Holiday", "properties": {"name": {"type": "string"}, "country": {"type": "string"}}, "required": ["name"]}"#)
            try sandbox.succeed(["--schemas", schemas, "add", "Holiday", "--id", "h", "name=X", "country=FR"])
            #expect(try sandbox.run(["--schemas", schemas, "add", "Holiday", "name=X", "date=2026-01-01"]).status == Exit.dataError)
            #expect(try sandbox.run(["add", "Holiday", "name=X", "country=FR"]).status == Exit.dataError)
        }
    }

    @Test("a broken schema file is a clear error (65)", arguments: [
        "{ \"title\": \"Book\", ",
        #"{"title": "Book", "properties": {"pages": {"type": "int"}}}"#,
        #"{"properties": {"pages": {"type": "integer"}}}"#,
        #"{"title": "Book", "properties": {"id": {"type": "string"}}}"#,
        // Keywords evsync does not read, or of the wrong type: refused rather than letting anything through.
        ##"{"title": "Book", "properties": {"pages": {"$ref": "#/$defs/pages"}}}"##,
        #"{"title": "Book", "properties": {"pages": {"type": "string", "pattern": "^[0-9]+$"}}}"#,
        #"{"title": "Book", "properties": {"pages": {"type": "object", "properties": {"n": {"type": "integer"}}}}}"#,
        #"{"title": "Book", "properties": {"pages": {"enum": "one"}}}"#,
        #"{"title": "Book", "properties": {"pages": {"type": "string", "maxLength": "5"}}}"#,
        #"{"title": "B\#(String(repeating: "o", count: 600))k", "properties": {}}"#,
        // A remote's keyword no remote reads: a typo of x-evsync-collection, or of x-evsync-dav.
        #"{"title": "Book", "properties": {}, "x-evsync-colection": "books"}"#,
        #"{"title": "Book", "properties": {}, "x-evsync-caldav": {"component": "VTODO"}}"#,
    ])
    func brokenSchema(text: String) throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "--id", "h", "name=X", "date=2026-01-01"])
            let schemas = sandbox.root.appendingPathComponent("schemas").path
            try sandbox.write("schemas/book.schema.json", Self.book)
            try sandbox.write("schemas/broken.schema.json", text)
            for arguments in [["--schemas", schemas, "list", "Holiday"], ["--schemas", schemas, "add", "Book", "title=X"], ["status"]] {
                let result = try sandbox.run(arguments, environment: ["EVSYNC_SCHEMAS": schemas])
                #expect(result.status == Exit.dataError, "\(arguments): \(result)")
                #expect(result.stderr.hasPrefix("evsync: ") && result.stderr.contains("broken.schema.json"), "\(result)")
                for keyword in ["$ref", "pattern", "properties", "enum", "maxLength"] where text.contains("\"\(keyword)\": ") && keyword != "properties" {
                    #expect(result.stderr.contains("'\(keyword)'"), "names the keyword: \(result)")
                }
                for keyword in ["x-evsync-colection", "x-evsync-caldav"] where text.contains(keyword) {
                    #expect(result.stderr.contains("keyword '\(keyword)' is read by no remote (evsync's: x-evsync-dav, x-evsync-kinto, and x-evsync-collection)"), "\(result)")
                }
                #expect(result.stderr.split(separator: "\n").count == 1, "\(result)")
            }
            #expect(try sandbox.eventCount() == 1)
        }
    }

    @Test("a schema's x-evsync-dav is taken and left to the DAV remote: the entity works locally as any other")
    func remoteKeyword() throws {
        try withSandbox { sandbox in
            let schemas = sandbox.root.appendingPathComponent("schemas").path
            try sandbox.write("schemas/chore.schema.json", #"""
                {"title": "Chore", "properties": {"title": {"type": "string"}}, "required": ["title"],
                 "x-evsync-dav": {"component": "VTODO", "properties": {"title": "SUMMARY"}}}
                """#)
            try sandbox.succeed(["--schemas", schemas, "add", "Chore", "--id", "c", "title=Sweep"])
            #expect(try sandbox.succeed(["--schemas", schemas, "show", "Chore", "c", "--json"]).json() == ["id": "c", "title": "Sweep"])
        }
    }

    @Test("a missing schema directory is missing input (66)")
    func missingSchemaDirectory() throws {
        try withSandbox { sandbox in
            let missing = sandbox.root.appendingPathComponent("no-schemas").path
            let result = try sandbox.run(["--schemas", missing, "add", "Holiday", "name=X", "date=2026-01-01"])
            #expect(result.status == Exit.noInput, "\(result)")
            #expect(result.stderr.contains("no-schemas"))
            #expect(!FileManager.default.fileExists(atPath: sandbox.store.path))
            let file = try sandbox.write("file", "x")
            let notDirectory = try sandbox.run(["add", "Holiday", "name=X", "date=2026-01-01"], environment: ["EVSYNC_SCHEMAS": file])
            #expect(notDirectory.status == Exit.noInput, "\(notDirectory)")
            #expect(!FileManager.default.fileExists(atPath: sandbox.store.path))
        }
    }
}
