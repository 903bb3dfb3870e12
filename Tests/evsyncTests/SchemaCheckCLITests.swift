import Foundation
import Testing
@testable import EventStore
import TestSupport

/// `evsync schema check`: a schema file tightened after records were written names the records it no longer
/// describes, and changes nothing.
@Suite("CLI schema check")
struct SchemaCheckCLITests {
    static let book = #"""
        {"title": "Book", "properties": {"title": {"type": "string", "minLength": 1}, "pages": {"type": "integer"}, "isbn": {"type": "string"}},
         "required": ["title"]}
        """#

    @Test("a field made required, a rule tightened and a field removed, each reported; exit 1 only for the first two")
    func tightenedSchema() throws {
        try withSandbox { sandbox in
            let schemas = sandbox.root.appendingPathComponent("schemas").path
            let environment = ["EVSYNC_SCHEMAS": schemas]
            try sandbox.write("schemas/book.schema.json", Self.book)
            for words in [["--id", "dune", "title=Dune", "pages:=412", "isbn=0441013597"], ["--id", "emma", "title=Emma"]] {
                #expect(try sandbox.run(["add", "Book"] + words, environment: environment).status == Exit.ok)
            }
            let fits = try sandbox.run(["schema", "check", "Book"], environment: environment)
            #expect(fits.status == Exit.ok && fits.stdout == "Book: 2 records, all fit\n", "\(fits)")

            // The next version of the schema: `pages` required and at most 300, `isbn` gone.
            try sandbox.write("schemas/book.schema.json", #"""
                {"title": "Book", "properties": {"title": {"type": "string", "minLength": 1}, "pages": {"type": "integer", "maximum": 300}},
                 "required": ["title", "pages"]}
                """#)
            let events = try sandbox.run(["status", "--json"], environment: environment).json().objectValue?["events"]
            let check = try sandbox.run(["schema", "check", "Book"], environment: environment)
            #expect(check.status == Exit.failure, "\(check)")
            #expect(check.stdout.contains("Book: 2 records, 2 problems:"), "\(check)")
            #expect(check.stdout.contains("dune") && check.stdout.contains("Book.pages"), "\(check)")
            #expect(check.stdout.contains("emma") && check.stdout.contains("required field 'pages' is missing"), "\(check)")
            #expect(check.stdout.contains("carried, not declared: isbn (1 record)"), "\(check)")
            #expect(check.stderr.hasPrefix("evsync: 2 values the schemas refuse"), "\(check)")

            let json = try sandbox.run(["schema", "check", "--json"], environment: environment)
            #expect(json.status == Exit.failure)
            let book = try #require(try json.json().arrayValue?.first { $0.objectValue?["entity"] == "Book" }?.objectValue)
            #expect(book["records"] == 2 && book["undeclared"] == ["isbn": 1], "\(book)")
            let problems = book["problems"]?.arrayValue?.compactMap { $0.objectValue.map { [$0["id"], $0["field"]] } }
            #expect(problems == [["dune", "pages"], ["emma", "pages"]], "\(book)")

            // Nothing was written, and every record still reads as it was written.
            #expect(try sandbox.run(["status", "--json"], environment: environment).json().objectValue?["events"] == events)
            #expect(try sandbox.run(["show", "Book", "dune", "--json"], environment: environment).json().objectValue?["isbn"] == "0441013597")
            // The record without the field now required is still read and listed.
            #expect(try sandbox.run(["show", "Book", "emma", "--json"], environment: environment).json() == ["id": "emma", "title": "Emma"])
            let listed = try sandbox.run(["list", "Book", "--json"], environment: environment).json().arrayValue?.compactMap { $0.objectValue?["id"] }
            #expect(listed == ["dune", "emma"])
            #expect(try sandbox.run(["schema", "check", "Nope"], environment: environment).status == Exit.dataError)
        }
    }
}
