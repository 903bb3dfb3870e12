import Foundation
@testable import EventStore
import TestSupport

/// Runs `body` with a fresh, empty directory that is removed afterwards.
/// Every test gets its own, so tests can run in parallel and share nothing.
func withTemporaryDirectory<T>(_ body: (URL) throws -> T) throws -> T {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("evsync-tests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: url) }
    return try body(url)
}

/// Runs `body` with a new store (built-in schemas unless given) in a fresh directory.
///
/// The store is released before the directory is removed. LMDB must not have
/// one environment open twice in one process, so a test that reopens the
/// store must let go of the first `Store` first.
func withTemporaryStore<T>(schemas: SchemaRegistry = SchemaRegistry(), clock: @escaping @Sendable () -> Int64 = Timestamp.now,
                           _ body: (Store, URL) throws -> T) throws -> T {
    try withTemporaryDirectory { directory in
        let storeDirectory = directory.appendingPathComponent("store", isDirectory: true)
        return try body(try Store(directory: storeDirectory.path, schemas: schemas, create: true, clock: clock), storeDirectory)
    }
}

extension Store {
    /// The records of an entity as `id → fields`.
    func recordMap(_ entity: String, asOf point: LogPoint? = nil) throws -> [String: JSONObject] {
        Dictionary(uniqueKeysWithValues: try records(entity, asOf: point).map { ($0.id, $0.fields) })
    }
}

/// The package's root directory, found from this source file's path.
enum RepositoryRoot {
    static let url: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // Support
        .deletingLastPathComponent()  // EventStoreTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()
}

extension Store {
    /// Appends `events` as an evsync of format 1 stored them (JSON; the
    /// store marked layout 2), numbered on from the last event: a store as
    /// older evsyncs left it, which must stay readable.
    /// - Returns: the events as stored.
    @discardableResult
    func appendAsFormat1(_ events: [Event]) throws -> [Event] {
        try environment.write { transaction in
            var seq = try log.lastSeq(in: transaction)
            let stored = try events.map { event in
                var event = event
                seq += 1
                event.seq = seq
                try transaction.put(Keys.sequence(seq), EventJSON.encode(event), in: log.events, append: true)
                try log.views.apply(event, in: transaction)
                // Layout 2 holds every row as a copy, never by reference to its event.
                let key = Keys.record(entity: event.entity, id: event.recordID)
                if let entry = RecordEntry.encode(try log.views.projection(key: key, in: transaction)) {
                    try transaction.put(key, entry, in: log.views.records)
                }
                return event
            }
            try transaction.put(Array("layout".utf8), Array("2".utf8), in: meta)
            return stored
        }
    }

    /// The stored bytes of event `seq`.
    func storedEvent(_ seq: UInt64) throws -> [UInt8]? {
        try environment.read { try $0.get(Keys.sequence(seq), in: log.events) }
    }
}
