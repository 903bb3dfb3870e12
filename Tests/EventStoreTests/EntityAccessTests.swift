import Foundation
import Testing
@testable import EventStore
import TestSupport

/// A change to an entity the last sync learned this account may only read is refused before it is written,
/// in every way a change is made, unless forced; other entities and other access are not touched.
@Suite("Entity access")
struct EntityAccessTests {
    @Test("a read-only entity refuses add, edit, delete, a transaction's changes and import, writing nothing; forced, they are made")
    func readOnlyRefusesUpFrontUnlessForced() throws {
        try withTemporaryStore { store, directory in
            try store.add("Holiday", id: "kept", fields: StoreWriteTests.holiday("Kept"))
            try store.recordAccess(.readOnly, of: "Holiday")
            #expect(try store.access(of: "holiday") == .readOnly)
            #expect(try store.accessByEntity() == ["Holiday": .readOnly])
            let before = try store.lastSeq()

            let refused: [(String, () throws -> Void)] = [
                ("add", { _ = try store.add("Holiday", fields: StoreWriteTests.holiday("New")) }),
                ("edit", { _ = try store.edit("Holiday", id: "kept", set: ["details": "x"]) }),
                ("delete", { _ = try store.delete("Holiday", id: "kept") }),
                ("write", { try store.write { _ = try $0.add("Holiday", fields: StoreWriteTests.holiday("New")) } }),
                ("import", {
                    let file = directory.deletingLastPathComponent().appendingPathComponent("one.jsonl")
                    try Data(#"{"name":"New","date":"2027-01-01"}"#.utf8).write(to: file)
                    _ = try StoreTests.withDescriptor(file) { try store.importRecords("Holiday", from: $0) }
                }),
            ]
            for (name, change) in refused {
                let error = try #require(throws: StoreError.self, "\(name)") { try change() }
                #expect(error.code == .readOnly, "\(name)")
                #expect(error.message.hasPrefix("Holiday is read-only for this account, as the server said at the last sync: "
                    + "it would refuse the change, so it was not made"), "\(name): \(error.message)")
            }
            #expect(try store.lastSeq() == before, "nothing written")

            // Another entity is not touched; forced, the change is made.
            try store.add("Birthday", id: "mum", fields: ["name": "Mum", "date": "1960-04-02"])
            try store.write(overridingReadOnly: true) { try $0.edit("Holiday", id: "kept", set: ["details": "forced"]) }
            #expect(try store.record("Holiday", id: "kept")?.fields["details"] == "forced")

            // Access granted (or no longer known): changes are made again.
            try store.recordAccess(.readWrite, of: "Holiday")
            try store.edit("Holiday", id: "kept", set: ["details": "granted"])
            try store.recordAccess(nil, of: "Holiday")
            #expect(try store.access(of: "Holiday") == nil)
            try store.delete("Holiday", id: "kept")
        }
    }

    @Test("create-only, read-and-create and read-write entities refuse nothing up front: the server decides each change")
    func otherAccessRefusesNothing() throws {
        try withTemporaryStore { store, _ in
            for access in [EntityAccess.createOnly, .readAndCreate, .readWrite] {
                try store.recordAccess(access, of: "Holiday")
                let id = try store.add("Holiday", fields: StoreWriteTests.holiday("\(access)")).recordID
                try store.edit("Holiday", id: id, set: ["details": "edited"])
                try store.delete("Holiday", id: id)
            }
        }
    }
}
