import Foundation
import Testing
@testable import EventStore

/// `Store.backup(to:)`: the copy is a store holding what the store held, meta included.
@Suite("Store backups")
struct StoreBackupTests {
    @Test func theBackupOpensAsTheStoreItWasWithItsRemoteAndLastSync() throws {
        try withTemporaryStore { store, directory in
            let id = try store.add("Holiday", fields: ["name": "New Year", "date": "2027-01-01"]).recordID
            try store.edit("Holiday", id: id, set: ["details": "Fireworks"])
            try store.rememberRemote("http://127.0.0.1:1/v1/buckets/x")
            try store.recordLastSync(.noData, startedAfter: 2)
            let destination = directory.deletingLastPathComponent().appendingPathComponent("backup").path
            let backup = try store.backup(to: destination)
            #expect(backup.directory == destination && backup.events == 2)
            try store.delete("Holiday", id: id)

            let restored = try Store(directory: destination)
            #expect(try restored.recordMap("Holiday") == [id: ["name": "New Year", "date": "2027-01-01", "details": "Fireworks"]])
            #expect(try restored.rememberedRemote() == "http://127.0.0.1:1/v1/buckets/x")
            #expect(try restored.lastSync() == store.lastSync())
            #expect(try restored.verifyViews().isEmpty)
            #expect(try restored.lastSeq() == 2 && store.lastSeq() == 3)
        }
    }

    @Test func aDestinationThatHoldsSomethingOrHasNoParentIsRefused() throws {
        try withTemporaryStore { store, directory in
            try store.add("Holiday", fields: ["name": "New Year", "date": "2027-01-01"])
            let error = #expect(throws: StoreError.self) { try store.backup(to: directory.path) }
            #expect(error?.code == .invalidData && error?.message.contains("is not empty") == true, "\(String(describing: error))")
            let orphan = directory.deletingLastPathComponent().appendingPathComponent("none/backup").path
            #expect(throws: StoreError.self) { try store.backup(to: orphan) }
            #expect(!FileManager.default.fileExists(atPath: directory.deletingLastPathComponent().appendingPathComponent("none").path))
        }
    }
}
