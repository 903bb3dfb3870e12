import Foundation
import Testing
@testable import EventStore
import TestSupport

@Suite("Schemas")
struct SchemaTests {
    static let schemasDirectory = RepositoryRoot.url.appendingPathComponent("Schemas")

    @Test("the built-in schemas are the files in Schemas/")
    func builtinsMatchFiles() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.schemasDirectory.path)
            .filter { $0.hasSuffix(".schema.json") && $0 != "event.schema.json" }
        #expect(!files.isEmpty)
        #expect(Set(BuiltinSchemas.files.map(\.name)) == Set(files))
        for builtin in BuiltinSchemas.files {
            let file = try String(contentsOf: Self.schemasDirectory.appendingPathComponent(builtin.name), encoding: .utf8)
            func trimmed(_ text: String) -> String {
                var text = text
                while text.hasSuffix("\n") { text.removeLast() }
                return text
            }
            #expect(trimmed(builtin.text) == trimmed(file), "\(builtin.name) differs from Schemas/\(builtin.name)")
        }
    }

    @Test("every schema file parses; the built-ins are Holiday and Birthday")
    func builtinsParse() throws {
        for builtin in BuiltinSchemas.files {
            #expect(throws: Never.self) { try EntitySchema(json: builtin.text, source: builtin.name) }
        }
        let registry = SchemaRegistry()
        #expect(registry.entityNames == ["Birthday", "Holiday"])
        let holiday = try registry.schema(named: "holiday")
        #expect(holiday.name == "Holiday")
        #expect(holiday.remoteName == "holidays")
        #expect(holiday.fieldNames == ["name", "date", "details", "wikipediaLink", "observedBy", "image"])
        #expect(holiday.required == ["name", "date"])
        #expect(try registry.schema(named: "BIRTHDAY").fieldNames == ["name", "date", "giftIdeas", "facebook", "image"])
        // The repository's Schemas/ works as a schema directory: event.schema.json is not an entity.
        let fromDirectory = try SchemaRegistry(directory: Self.schemasDirectory.path)
        #expect(fromDirectory.entityNames == ["Birthday", "Holiday"])
        let error = try #require(throws: SchemaError.self) { try registry.schema(named: "Unicorn") }
        #expect(error.description.contains("Unicorn"))
        #expect(error.description.contains("Holiday"))
    }

    static let book = """
    {
      "title": "Book",
      "type": "object",
      "properties": {
        "title": { "type": "string", "minLength": 1, "maxLength": 20 },
        "author": { "type": "string" },
        "pages": { "type": "integer", "minimum": 1, "maximum": 5000 },
        "published": { "type": "string", "format": "date" },
        "added": { "type": "string", "format": "date-time" },
        "isbnID": { "type": "string", "format": "uuid" },
        "genre": { "enum": ["novel", "essay"] },
        "rating": { "type": ["number", "null"] },
        "tags": { "type": "array", "items": { "type": "string", "minLength": 2 } },
        "extra": { "type": "object" },
        "read": { "type": "boolean" }
      },
      "required": ["title"]
    }
    """

    @Test("a schema directory adds entities")
    func directory() throws {
        try withTemporaryDirectory { directory in
            try Self.book.write(to: directory.appendingPathComponent("book.schema.json"), atomically: true, encoding: .utf8)
            try "not a schema".write(to: directory.appendingPathComponent("README.md"), atomically: true, encoding: .utf8)
            let registry = try SchemaRegistry(directory: directory.path)
            #expect(registry.entityNames == ["Birthday", "Book", "Holiday"])
            let book = try registry.schema(named: "book")
            #expect(book.remoteName == nil, "no x-evsync-collection: each remote names it")
            #expect(book.fieldNames == ["title", "author", "pages", "published", "added", "isbnID", "genre", "rating", "tags", "extra", "read"])

            let valid: [JSONObject] = [
                ["title": "Dune"],
                ["title": "Dune", "author": "Frank Herbert", "pages": 412, "published": "1965-08-01", "added": "2026-01-01T10:00:00Z",
                 "isbnID": "6F9619FF-8B86-D011-B42D-00CF4FC964FF", "genre": "novel", "rating": nil, "tags": ["sf", "classic"],
                 "extra": ["any": ["thing"]], "read": true],
                ["title": "X", "pages": 1.0, "rating": 4.5],
            ]
            for record in valid {
                #expect(throws: Never.self, "\(record)") { try book.validate(record) }
            }
            let invalid: [JSONObject] = [
                [:],
                ["author": "nobody"],
                ["title": ""],
                ["title": "a title that is far too long"],
                ["title": 5],
                ["title": "X", "pages": 41.5],
                ["title": "X", "pages": 0],
                ["title": "X", "pages": 5001],
                ["title": "X", "pages": "412"],
                ["title": "X", "published": "1965-8-1"],
                ["title": "X", "added": "2026-01-01"],
                ["title": "X", "isbnID": "not-a-uuid"],
                ["title": "X", "genre": "poetry"],
                ["title": "X", "rating": "good"],
                ["title": "X", "tags": "sf"],
                ["title": "X", "tags": ["sf", "x"]],
                ["title": "X", "extra": []],
                ["title": "X", "read": "yes"],
                ["title": "X", "colour": "red"],
            ]
            for record in invalid {
                #expect(throws: SchemaError.self, "\(record)") { try book.validate(record) }
            }
        }
    }

    @Test("a schema directory may replace a built-in")
    func replaceBuiltin() throws {
        try withTemporaryDirectory { directory in
            let holiday = #"{"title": "Holiday", "properties": {"name": {"type": "string"}, "country": {"type": "string"}}, "required": ["name"]}"#
            try holiday.write(to: directory.appendingPathComponent("holiday.schema.json"), atomically: true, encoding: .utf8)
            let registry = try SchemaRegistry(directory: directory.path)
            let schema = try registry.schema(named: "Holiday")
            #expect(schema.fieldNames == ["name", "country"])
            #expect(throws: Never.self) { try schema.validate(["name": "x", "country": "FR"]) }
            #expect(throws: SchemaError.self) { try schema.validate(["name": "x", "date": "2026-01-01"]) }
        }
        // Spelled in another case, it replaces the built-in under every spelling (names are looked up as spelled first).
        try withTemporaryDirectory { directory in
            let birthday = #"{"title": "BIRTHDAY", "properties": {"who": {"type": "string"}}}"#
            try birthday.write(to: directory.appendingPathComponent("birthday.schema.json"), atomically: true, encoding: .utf8)
            let registry = try SchemaRegistry(directory: directory.path)
            for spelling in ["Birthday", "BIRTHDAY", "birthday"] { #expect(try registry.schema(named: spelling).fieldNames == ["who"]) }
            #expect(registry.entityNames == ["BIRTHDAY", "Holiday"])
        }
    }

    @Test("broken schemas are refused with a message naming the file", arguments: [
        ("{ not json", "invalid JSON"),
        ("[]", "must be a JSON object"),
        (#"{"properties": {}}"#, "'title'"),
        (#"{"title": "9Lives", "properties": {}}"#, "'title'"),
        (#"{"title": "Book Shelf", "properties": {}}"#, "'title'"),
        (#"{"title": "Book"}"#, "'properties'"),
        (#"{"title": "Book", "properties": {"a": {"type": "text"}}}"#, "unknown type 'text'"),
        (#"{"title": "Book", "properties": {"a": {"type": 3}}}"#, "'type'"),
        (#"{"title": "Book", "properties": {"a": {"type": "string", "format": "email"}}}"#, "unsupported format 'email'"),
        (#"{"title": "Book", "properties": {"a": "string"}}"#, "must be an object"),
        (#"{"title": "Book", "properties": {"id": {"type": "string"}}}"#, "reserved"),
        (#"{"title": "Book", "properties": {"a": {}}, "required": ["b"]}"#, "required field 'b'"),
        (#"{"title": "Book", "properties": {}, "x-evsync-collection": ""}"#, "x-evsync-collection"),
        (#"{"title": "Book", "properties": {"a": {"type": "array", "items": {"type": "nope"}}}}"#, "unknown type 'nope'"),
        // Keywords evsync does not read refuse the schema, rather than letting anything through.
        (##"{"title": "Book", "properties": {"a": {"$ref": "#/$defs/name"}}}"##, "property 'a': keyword '$ref' is not supported"),
        (#"{"title": "Book", "properties": {"a": {"type": "string", "pattern": "^[a-z]+$"}}}"#, "keyword 'pattern' is not supported"),
        (#"{"title": "Book", "properties": {"a": {"type": "object", "properties": {"b": {}}}}}"#, "keyword 'properties' is not supported"),
        (#"{"title": "Book", "properties": {"a": {"type": "array", "items": {"type": "string", "format": "email", "minItems": 1}}}}"#, "keyword 'minItems'"),
        (#"{"title": "Book", "properties": {"a": {"type": "integer", "default": "one"}}}"#, "property 'a': 'default' must be integer"),
        (#"{"title": "Book", "properties": {}, "$defs": {}}"#, "keyword '$defs' is not supported"),
        (#"{"title": "Book", "properties": {}, "allOf": []}"#, "keyword 'allOf' is not supported"),
        (#"{"title": "Book", "properties": {}, "additionalProperties": true}"#, "'additionalProperties' can only be false"),
        (#"{"title": "Book", "type": "array", "properties": {}}"#, "'type' must be \"object\""),
        (#"{"title": "Book", "properties": {}, "required": ["a", 1]}"#, "'required' must be an array of field names"),
        (#"{"title": "Book", "properties": {}, "required": "a"}"#, "'required' must be an array of field names"),
        // Keywords of the wrong type.
        (#"{"title": "Book", "properties": {"a": {"enum": "red"}}}"#, "'enum' must be an array"),
        (#"{"title": "Book", "properties": {"a": {"enum": []}}}"#, "'enum' must be an array"),
        (#"{"title": "Book", "properties": {"a": {"type": "string", "maxLength": "5"}}}"#, "'maxLength' must be a whole number"),
        (#"{"title": "Book", "properties": {"a": {"type": "string", "maxLength": 2.5}}}"#, "'maxLength' must be a whole number"),
        (#"{"title": "Book", "properties": {"a": {"type": "string", "minLength": -1}}}"#, "'minLength' must be a whole number"),
        (#"{"title": "Book", "properties": {"a": {"type": "number", "minimum": "0"}}}"#, "'minimum' must be a number"),
        (#"{"title": "Book", "properties": {"a": {"type": ["string", 1]}}}"#, "'type' must be a string or an array of strings"),
        (#"{"title": "Book", "properties": {"a": {"format": 1}}}"#, "'format' must be a string"),
        (#"{"title": "Book", "properties": {"a": {"contentEncoding": "base32"}}}"#, "'contentEncoding' can only be \"base64\""),
        // A rename names the field's one former name: not a declared one (a chain or a cycle), not twice.
        (#"{"title": "Book", "properties": {"a": {}, "b": {"x-evsync-renamed-from": "a"}}}"#, "property 'b': 'x-evsync-renamed-from' names 'a', which is declared too"),
        (#"{"title": "Book", "properties": {"b": {"x-evsync-renamed-from": "a"}, "c": {"x-evsync-renamed-from": "b"}}}"#, "names 'b', which is declared too (a chain"),
        (#"{"title": "Book", "properties": {"a": {"x-evsync-renamed-from": "b"}, "b": {"x-evsync-renamed-from": "a"}}}"#, "which is declared too (a chain or a cycle"),
        (#"{"title": "Book", "properties": {"a": {"x-evsync-renamed-from": "a"}}}"#, "names 'a', which is declared too"),
        (#"{"title": "Book", "properties": {"b": {"x-evsync-renamed-from": "a"}, "c": {"x-evsync-renamed-from": "a"}}}"#, "property 'c': 'x-evsync-renamed-from' names 'a', which 'b' is renamed from too"),
        (#"{"title": "Book", "properties": {"b": {"x-evsync-renamed-from": 1}}}"#, "'x-evsync-renamed-from' must be the field's former name"),
        (#"{"title": "Book", "properties": {"b": {"x-evsync-renamed-from": "id"}}}"#, "'x-evsync-renamed-from' must be the field's former name"),
        // An entity name goes into LMDB keys: it has a length limit.
        (#"{"title": "B\#(String(repeating: "o", count: 100))k", "properties": {}}"#, "at most 100 characters"),
    ])
    func brokenSchemas(text: String, message: String) throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("broken.schema.json")
            try text.write(to: path, atomically: true, encoding: .utf8)
            let error = try #require(throws: SchemaError.self) { try SchemaRegistry(directory: directory.path) }
            #expect(error.description.contains("broken.schema.json"), "\(error)")
            #expect(error.description.contains(message), "\(error)")
        }
    }

    @Test("a top-level x-evsync-<protocol> is kept unread for the remote of that protocol; one no remote reads, a typo, is refused naming the file")
    func remoteOptions() throws {
        try withTemporaryDirectory { directory in
            let chore = #"""
                {"title": "Chore", "properties": {"title": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}},
                 "x-evsync-collection": "chores",
                 "x-evsync-dav": {"component": "VTODO", "properties": {"title": "SUMMARY", "tags": "CATEGORIES"}}}
                """#
            try chore.write(to: directory.appendingPathComponent("chore.schema.json"), atomically: true, encoding: .utf8)
            // The store reads none of it, whatever it holds: only the remote of that protocol does.
            let schema = try SchemaRegistry(directory: directory.path, remoteProtocols: ["dav"]).schema(named: "Chore")
            #expect(schema.remoteOptions == ["dav": ["component": "VTODO", "properties": ["title": "SUMMARY", "tags": "CATEGORIES"]]])
            #expect(schema.remoteName == "chores")
            #expect(schema.types(of: "tags") == ["array"])
            #expect(schema.itemTypes(of: "tags") == ["string"])
            #expect(schema.itemTypes(of: "title") == nil)
            #expect(try SchemaRegistry().schema(named: "Holiday").remoteOptions.isEmpty)
            // Without a list of protocols (a library user's registry), any is kept.
            #expect(try SchemaRegistry(directory: directory.path).schema(named: "Chore").remoteOptions.keys.sorted() == ["dav"])

            let typo = chore.replacingOccurrences(of: "x-evsync-dav", with: "x-evsync-caldav")
            try typo.write(to: directory.appendingPathComponent("chore.schema.json"), atomically: true, encoding: .utf8)
            let error = try #require(throws: SchemaError.self) { try SchemaRegistry(directory: directory.path, remoteProtocols: ["dav"]) }
            #expect(error.description.contains("chore.schema.json"), "\(error)")
            #expect(error.description.contains("keyword 'x-evsync-caldav' is read by no remote (evsync's: x-evsync-dav"), "\(error)")
            let misspelt = chore.replacingOccurrences(of: "x-evsync-collection", with: "x-evsync-colection")
            try misspelt.write(to: directory.appendingPathComponent("chore.schema.json"), atomically: true, encoding: .utf8)
            let again = try #require(throws: SchemaError.self) { try SchemaRegistry(directory: directory.path, remoteProtocols: ["dav"]) }
            #expect(again.description.contains("keyword 'x-evsync-colection' is read by no remote"), "\(again)")
        }
    }

    @Test("a root x-evsync- keyword that is no protocol word is refused like any unknown keyword", arguments: [
        #"{"title": "Book", "properties": {}, "x-evsync-renamed-from": "Shelf"}"#,
        #"{"title": "Book", "properties": {}, "x-evsync-DAV": {}}"#,
        #"{"title": "Book", "properties": {}, "x-evsync-": {}}"#,
    ])
    func notARemoteKeyword(text: String) throws {
        let error = try #require(throws: SchemaError.self) { try EntitySchema(json: text, source: "book.schema.json") }
        #expect(error.description.contains("is not supported"), "\(error)")
    }

    @Test("numeric bounds and integers are exact, however long the literals")
    func exactBounds() throws {
        let schema = try EntitySchema(json: #"""
        {"title": "Counter", "properties": {
          "n": {"type": "integer", "minimum": 9007199254740993, "maximum": 12345678901234567891},
          "x": {"type": "number", "minimum": 0.1000000000000000000001, "description": "annotations", "$comment": "are fine",
                "examples": [1], "title": "X"}}}
        """#, source: "t")
        for valid in ["9007199254740993", "12345678901234567891", "1.2345678901234567891e19", "9007199254740993.0"] {
            #expect(throws: Never.self, "\(valid)") { try schema.validate(field: "n", value: try JSONParser.parse(valid)) }
        }
        for invalid in ["9007199254740992", "12345678901234567892", "9007199254740993.5", "1e400"] {
            #expect(throws: SchemaError.self, "\(invalid)") { try schema.validate(field: "n", value: try JSONParser.parse(invalid)) }
        }
        #expect(throws: SchemaError.self) { try schema.validate(field: "x", value: try JSONParser.parse("0.1")) }
        #expect(throws: Never.self) { try schema.validate(field: "x", value: try JSONParser.parse("0.10000000000000000000011")) }
    }

    @Test("a missing schema directory is an error")
    func missingDirectory() throws {
        _ = try withTemporaryDirectory { directory in
            #expect(throws: SchemaError.self) { try SchemaRegistry(directory: directory.appendingPathComponent("nope").path) }
        }
    }


    @Test("a field added with a default reads into the records written before it; the log and the views keep what was written")
    func fieldAddedWithADefault() throws {
        try withTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("book.schema.json")
            try #"{"title": "Book", "properties": {"title": {"type": "string"}}}"#.write(to: file, atomically: true, encoding: .utf8)
            let store = directory.appendingPathComponent("store").path
            do {
                let old = try Store(directory: store, configuration: .init(schemas: try SchemaRegistry(directory: directory.path), create: true))
                try old.add("Book", id: "dune", fields: ["title": "Dune"])
            }
            // The next version: `format`, required, with a default, and `pages` optional.
            try #"{"title": "Book", "properties": {"title": {"type": "string"}, "format": {"enum": ["paper", "ebook"], "default": "paper"}, "pages": {"type": "integer"}}, "required": ["title", "format"]}"#
                .write(to: file, atomically: true, encoding: .utf8)
            let new = try Store(directory: store, configuration: .init(schemas: try SchemaRegistry(directory: directory.path)))
            let read: JSONObject = ["title": "Dune", "format": "paper"]
            #expect(try new.record("Book", id: "dune")?.fields == read)
            #expect(try new.records("Book").map(\.fields) == [read])
            #expect(try new.record("Book", id: "dune", asOf: .seq(1))?.fields == read)
            #expect(try new.read { try $0.record("Book", id: "dune")?.fields } == read)
            // As the app's type too: read in place (`JSONMembersInPlace`), the default member by member.
            #expect(try new.record(Book.self, id: "dune") == Book(id: "dune", title: "Dune", format: "paper"))
            #expect(try new.records(Book.self) == [Book(id: "dune", title: "Dune", format: "paper")])
            #expect(try new.checkSchemas("Book").first?.problems == [])
            // Written without it, a record is still whole; the log holds only what each write said.
            try new.add("Book", id: "emma", fields: ["title": "Emma"])
            try new.edit("Book", id: "dune", set: ["pages": 412])
            #expect(try new.record("Book", id: "emma")?.fields == ["title": "Emma", "format": "paper"])
            #expect(try new.lastEvents(3).map(\.set) == [["title": "Dune"], ["title": "Emma"], ["pages": 412]])
            #expect(try new.verifyViews().isEmpty)
            // A value given is kept, and checked.
            try new.edit("Book", id: "emma", set: ["format": "ebook"])
            #expect(try new.record("Book", id: "emma")?.fields["format"] == "ebook")
            #expect(throws: StoreError.self) { try new.edit("Book", id: "emma", set: ["format": "scroll"]) }
        }
    }

    @Test("a renamed field reads under its new name in old events, views, history, blame, diff and --as-of; an edit moves it; nothing is rewritten")
    func fieldRenamed() throws {
        try withTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("book.schema.json")
            try #"{"title": "Book", "properties": {"title": {"type": "string"}, "pages": {"type": "integer"}}}"#.write(to: file, atomically: true, encoding: .utf8)
            let store = directory.appendingPathComponent("store").path
            do {
                let old = try Store(directory: store, configuration: .init(schemas: try SchemaRegistry(directory: directory.path), create: true))
                try old.add("Book", id: "dune", fields: ["title": "Dune", "pages": 412])
                try old.add("Book", id: "emma", fields: ["title": "Emma", "pages": 474])
                try old.edit("Book", id: "dune", set: ["pages": 896])
            }
            // The next version: `pages` is `pageCount`, now required.
            try #"{"title": "Book", "properties": {"title": {"type": "string"}, "pageCount": {"type": "integer", "x-evsync-renamed-from": "pages"}}, "required": ["title", "pageCount"]}"#
                .write(to: file, atomically: true, encoding: .utf8)
            let new = try Store(directory: store, configuration: .init(schemas: try SchemaRegistry(directory: directory.path)))
            #expect(try new.record("Book", id: "dune")?.fields == ["title": "Dune", "pageCount": 896])
            #expect(try new.record(RenamedBook.self, id: "dune") == RenamedBook(id: "dune", title: "Dune", pageCount: 896))
            #expect(try new.records("Book").map(\.fields) == [["title": "Dune", "pageCount": 896], ["title": "Emma", "pageCount": 474]])
            #expect(try new.record("Book", id: "dune", asOf: .seq(1))?.fields == ["title": "Dune", "pageCount": 412])
            #expect(try new.history(of: "dune").map(\.set) == [["title": "Dune", "pageCount": 412], ["pageCount": 896]])
            #expect(try new.blame("Book", id: "dune")?.fields.map(\.field) == ["pageCount", "title"])
            var diffs: [RecordDiff] = []
            try new.diff(from: .seq(0)) { diffs.append($0) }
            #expect(diffs.count == 2 && "\(diffs)".contains("pageCount") && !"\(diffs)".contains("\"pages\""), "\(diffs)")
            let check = try #require(try new.checkSchemas("Book").first)
            #expect(check.problems == [] && check.undeclared == [:], "a renamed field is neither missing nor undeclared")
            #expect(check.renamed.map(\.id) == ["dune", "emma"] && check.renamed.allSatisfy { $0.field == "pageCount" && $0.from == "pages" })

            // An edit of a record holding the old name writes the new one and unsets the old; the other stays as written.
            try new.edit("Book", id: "dune", set: ["pageCount": 900])
            let written = try #require(try new.lastEvents(1).first)
            #expect(written.set == ["pageCount": 900] && written.unset == ["pages"])
            #expect(try new.record("Book", id: "dune")?.fields == ["title": "Dune", "pageCount": 900])
            let read = try #require(try new.history(of: "dune").last)
            #expect(read.set == ["pageCount": 900] && read.unset == [], "history reads it as one field's change")
            #expect(try new.checkSchemas("Book").first?.renamed.map(\.id) == ["emma"])
            // The same value under the new name is no change; an edit of another field leaves the old name as it is.
            #expect(try new.edit("Book", id: "emma", set: ["pageCount": 474]) == nil)
            try new.edit("Book", id: "emma", set: ["title": "Emma."])
            #expect(try new.record("Book", id: "emma")?.fields == ["title": "Emma.", "pageCount": 474])
            #expect(throws: StoreError.self) { try new.edit("Book", id: "emma", set: ["pages": 1]) }
            // revert reads both sides through the schema: back to the first version, under the new name.
            let reverted = try new.revert("Book", id: "dune", to: .seq(1))
            #expect(reverted.changes.map(\.field) == ["pageCount"] && reverted.event?.set == ["pageCount": 412], "\(reverted)")
            #expect(try new.revert("Book", id: "emma", to: .seq(2)).event?.set == ["title": "Emma"])
            #expect(try new.records("Book").map(\.fields) == [["title": "Dune", "pageCount": 412], ["title": "Emma", "pageCount": 474]])
            try new.edit("Book", id: "dune", set: ["pageCount": 900])
            try new.edit("Book", id: "emma", set: ["title": "Emma."])
            #expect(try new.verifyViews().isEmpty)
            try new.rebuildViews()
            #expect(try new.records("Book").map(\.fields) == [["title": "Dune", "pageCount": 900], ["title": "Emma.", "pageCount": 474]])
        }
    }

    @Test("a store with a directory schema stores the new entity")
    func storeWithDirectorySchema() throws {
        try withTemporaryDirectory { directory in
            try Self.book.write(to: directory.appendingPathComponent("book.schema.json"), atomically: true, encoding: .utf8)
            let registry = try SchemaRegistry(directory: directory.path)
            try withTemporaryStore(schemas: registry) { store, _ in
                try store.add("book", id: "dune", fields: ["title": "Dune", "pages": 412])
                #expect(try store.record("Book", id: "dune")?.entity == "Book")
                #expect(try store.status().records == ["Book": 1, "Holiday": 0, "Birthday": 0])
                #expect(try store.lastEvents(1).first?.entity == "Book")
                #expect(try store.verifyViews().isEmpty)
            }
        }
    }
}

@Suite("The uri format")
struct URIFormatTests {
    @Test(arguments: [
        "https://en.wikipedia.org/wiki/Christmas", "http://user@example.org:8080/a?b#c", "http://[::1]:8080/",
        "mailto:someone@example.org", "urn:isbn:0451450523", "https://de.wikipedia.org/wiki/Fête_nationale", "HTTPS://EXAMPLE.ORG",
    ])
    func accepts(_ link: String) throws {
        #expect(throws: Never.self) { try SchemaRegistry().schema(named: "Holiday").validate(field: "wikipediaLink", value: .string(link)) }
    }

    @Test(arguments: [
        "not a url", "wiki/Christmas", "http://", "http://:80/x", "http://user@/x", "1http://example.org", "mailto:",
        "https://exa mple.org", "://example.org", "ftp:relative/path", "https://example.org/\t",
    ])
    func rejects(_ link: String) throws {
        let error = try #require(throws: SchemaError.self) {
            try SchemaRegistry().schema(named: "Holiday").validate(field: "wikipediaLink", value: .string(link))
        }
        #expect(error.description.contains("must be an absolute URL"))
    }
}

/// The Book of `fieldAddedWithADefault`'s second schema, as an app declares it.
private struct Book: EntityRecord, Equatable {
    static let entityName = "Book"
    var id: String
    var title: String
    var format: String
    var pages: Int?
}

/// The Book of `fieldRenamed`'s second schema, as an app declares it.
private struct RenamedBook: EntityRecord, Equatable {
    static let entityName = "Book"
    var id: String
    var title: String
    var pageCount: Int
}
