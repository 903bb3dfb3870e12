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

    @Test("a repacked copy holds every entry of every database, in fewer pages than LMDB's compacting copy")
    func repackedCopy() throws {
        try withTemporaryDirectory { directory in
            let paths = ["source", "repacked", "compacted"].map { directory.appendingPathComponent($0).path }
            for path in paths { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
            let source = try Environment(directory: paths[0], mapSize: 1 << 30, maxDatabases: 4)
            var random = SplitMix64(seed: 27)
            // Written in random order, then two keys in three deleted: what a compaction leaves of the views.
            let names = ["plain", "duplicates", "empty"]
            let databases = try source.write { transaction in
                let databases = [try source.openDatabase("plain", flags: MDBFlags.create, in: transaction),
                                 try source.openDatabase("duplicates", flags: MDBFlags.create | MDBFlags.dupSort | MDBFlags.dupFixed, in: transaction),
                                 try source.openDatabase("empty", flags: MDBFlags.create, in: transaction)]
                let keys = (0..<6_000).map { _ in Array("record-\(UInt64.random(in: 0..<UInt64.max, using: &random))".utf8) }
                for key in keys {
                    try transaction.put(key, Array(repeating: UInt8.random(in: 0...255, using: &random), count: Int.random(in: 20..<200, using: &random)), in: databases[0])
                    for _ in 0..<Int.random(in: 1...12, using: &random) {
                        try transaction.put(key, (0..<9).map { _ in UInt8.random(in: 0...255, using: &random) }, in: databases[1])
                    }
                }
                for key in keys.indices where key % 3 != 0 {
                    _ = try transaction.delete(keys[key], in: databases[0])
                    _ = try transaction.delete(keys[key], in: databases[1])
                }
                return databases
            }
            let repacked = try Environment(directory: paths[1], mapSize: 1 << 30, maxDatabases: 4)
            // Small commits, so that the copy goes on across many of them.
            try source.copyRepacked(into: repacked, bytesPerCommit: 16_384)
            let descriptor = open(paths[2] + "/data.mdb", O_RDWR | O_CREAT, 0o600)
            try #require(descriptor >= 0)
            try source.copyCompacted(to: descriptor)
            close(descriptor)
            let compacted = try Environment(directory: paths[2], mapSize: 1 << 30, maxDatabases: 4)

            let original = try source.read { try Self.contents(of: databases, in: $0) }
            #expect(original[0].count == 2_000 && original[2].isEmpty)
            func pages(_ environment: Environment) throws -> (contents: [[[UInt8]: [[UInt8]]]], pages: Int) {
                try environment.read { transaction in
                    #expect(try environment.databaseNames(in: transaction) == names.sorted())
                    let copied = try names.map { try environment.openDatabase($0, in: transaction) }
                    return (try Self.contents(of: copied, in: transaction),
                            try copied.reduce(0) { total, database in let pages = try transaction.pages(of: database); return total + pages.leaves + pages.branches })
                }
            }
            let (repackedContents, repackedPages) = try pages(repacked)
            let (compactedContents, compactedPages) = try pages(compacted)
            #expect(repackedContents == original && compactedContents == original)
            #expect(Double(repackedPages) <= 0.8 * Double(compactedPages), "\(repackedPages) pages repacked, \(compactedPages) compacted")
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
