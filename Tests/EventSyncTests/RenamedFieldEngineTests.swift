@testable import EventStore
@testable import EventSync
import Foundation
import Testing
import TestSupport

/// The engine's edges with a renamed field (`x-evsync-renamed-from`), against `InMemoryRemote`: what the
/// server holds under the former name is merged as the field, and pushes write the former name.
@Suite struct RenamedFieldEngineTests {
    @Test func aFieldRenamedHereIsMergedAsOneFieldAndPushedUnderItsFormerName() async throws {
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.file("schemas"), withIntermediateDirectories: true)
        try #"{"title": "Book", "properties": {"title": {"type": "string"}, "pageCount": {"type": "integer", "x-evsync-renamed-from": "pages"}}}"#
            .write(toFile: directory.file("schemas/book.schema.json"), atomically: true, encoding: .utf8)
        let store = try Store(directory: directory.file("store"),
                              configuration: .init(schemas: try SchemaRegistry(directory: directory.file("schemas")), create: true))
        let remote = InMemoryRemote(pageSize: 2)
        remote.put("dune", ["title": "Dune", "pages": 412], in: "Book")
        remote.put("emma", ["title": "Emma", "pages": 474], in: "Book")
        let engine = SyncEngine(store: store) { remote }
        #expect(try await engine.sync().pulled == 2)
        #expect(try store.record("Book", id: "dune")?.fields == ["title": "Dune", "pageCount": 412])

        // Here the title, there the page count under its old name: one merge, no conflict.
        try store.edit("Book", id: "dune", set: ["title": "Dune (1965)"])
        remote.put("dune", ["title": "Dune", "pages": 896], in: "Book")
        // Here the page count of a record pulled under the old name.
        try store.edit("Book", id: "emma", set: ["pageCount": 475])
        try store.add("Book", id: "lent", fields: ["title": "Lent", "pageCount": 10])
        let report = try await engine.sync()
        #expect(report.conflicts == 0 && report.pushed == 3, "\(report)")
        #expect(remote.records(in: "Book") == ["dune": ["title": "Dune (1965)", "pages": 896], "emma": ["title": "Emma", "pages": 475],
                                               "lent": ["title": "Lent", "pages": 10]])
        #expect(try store.records("Book").map(\.fields) == [["title": "Dune (1965)", "pageCount": 896], ["title": "Emma", "pageCount": 475],
                                                              ["title": "Lent", "pageCount": 10]])
        #expect(try store.pendingCount(entity: "Book") == 0)

        // Both sides change it: a conflict on the one field.
        try store.edit("Book", id: "dune", set: ["pageCount": 900])
        remote.put("dune", ["title": "Dune (1965)", "pages": 901], in: "Book")
        #expect(try await engine.sync().conflicts == 1)
        #expect(try await engine.sync().result == .noData)
        let pages = remote.records(in: "Book")["dune"]?["pages"]
        #expect(pages != nil && remote.records(in: "Book")["dune"]?["pageCount"] == nil)
        #expect(try store.record("Book", id: "dune")?.fields["pageCount"] == pages)
        #expect(try store.verifyViews().isEmpty)
    }
}
