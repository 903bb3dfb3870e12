import Foundation
import Testing
@testable import EventStore
import TestSupport

/// The LMDB wrapper's writes go through one cursor per database, left where
/// the last write or read put it. These tests hold it to a plain dictionary
/// model, in the orders the views use (sorted sweeps) and in random order.
@Suite("Transaction")
struct TransactionTests {
    @Test("random puts, inserts, deletes, reads and empties in one transaction match a model, before and after commit")
    func randomOperationsMatchAModel() throws {
        try withTemporaryDirectory { directory in
            let environment = try Environment(directory: directory.path, mapSize: 1 << 30, maxDatabases: 4)
            var random = SplitMix64(seed: 0xC0_FFEE)
            // Each key's values in stored order: one, except in the sorted-duplicates database (as `history` is).
            var models: [[[UInt8]: [[UInt8]]]] = [[:], [:], [:]]
            let duplicates = 2
            // Keys from a small space, so that writes land on keys already there as often as not.
            func randomKey() -> [UInt8] { Array("key-\(Int.random(in: 0..<3_000, using: &random))".utf8) }
            func randomValue(for which: Int) -> [UInt8] {
                // Duplicates are fixed-size, like history entries.
                guard which == duplicates else {
                    return Array(repeating: UInt8.random(in: 0...255, using: &random), count: Int.random(in: 0..<300, using: &random))
                }
                return (0..<10).map { _ in UInt8.random(in: 0...3, using: &random) }
            }
            func storeInModel(_ value: [UInt8], _ key: [UInt8], _ which: Int) {
                guard which == duplicates else { models[which][key] = [value]; return }
                models[which][key] = Array(Set((models[which][key] ?? []) + [value])).sorted { $0.lexicographicallyPrecedes($1) }
            }

            let databases = try environment.write { transaction in
                let databases = [try environment.openDatabase("first", flags: MDBFlags.create, in: transaction),
                                 try environment.openDatabase("second", flags: MDBFlags.create, in: transaction),
                                 try environment.openDatabase("duplicates", flags: MDBFlags.create | MDBFlags.dupSort | MDBFlags.dupFixed,
                                                              in: transaction)]
                for step in 0..<20_000 {
                    let which = Int.random(in: 0..<3, using: &random)
                    let (database, key) = (databases[which], randomKey())
                    switch Int.random(in: 0..<100, using: &random) {
                    case 0..<35:
                        let value = randomValue(for: which)
                        try transaction.put(key, value, in: database)
                        storeInModel(value, key, which)
                    case 35..<55:
                        let value = randomValue(for: which)
                        let stored = try key.withUnsafeBytes { key in
                            try value.withUnsafeBytes { try transaction.insert(key, $0, in: database) }
                        }
                        #expect(stored == (models[which][key] == nil), "step \(step): insert of an existing key")
                        if stored { storeInModel(value, key, which) }
                    case 55..<70:
                        let deleted = try transaction.delete(key, in: database)
                        #expect(deleted == (models[which].removeValue(forKey: key) != nil), "step \(step): delete")
                    case 70..<99:
                        #expect(try transaction.get(key, in: database) == models[which][key]?.first, "step \(step): read")
                    default:
                        // A sorted sweep of new values, as the views are written; then empty the database now and then.
                        for key in (0..<200).map({ _ in randomKey() }).sorted(by: { $0.lexicographicallyPrecedes($1) }) {
                            let value = randomValue(for: which)
                            try transaction.put(key, value, in: database)
                            storeInModel(value, key, which)
                        }
                        if Int.random(in: 0..<4, using: &random) == 0 {
                            try transaction.empty(database)
                            models[which] = [:]
                        }
                    }
                }
                try #require(try Self.contents(of: databases, in: transaction) == models)
                return databases
            }
            #expect(try environment.read { try Self.contents(of: databases, in: $0) } == models)
        }
    }

    /// Every entry of each database, read with a fresh cursor.
    private static func contents(of databases: [Database], in transaction: Transaction) throws -> [[[UInt8]: [[UInt8]]]] {
        try databases.map { database in
            var contents: [[UInt8]: [[UInt8]]] = [:]
            let cursor = try transaction.cursor(database)
            var entry = try cursor.first()
            while let current = entry {
                contents[Array(current.key), default: []].append(Array(current.value))
                entry = try cursor.next()
            }
            return contents
        }
    }
}
