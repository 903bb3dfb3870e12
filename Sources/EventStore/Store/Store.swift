import Foundation

/// An evsync store: the event log and the views projected from it, in one
/// LMDB environment in a directory.
///
/// ```swift
/// let store = try Store(directory: ".evsync", create: true)
/// let id = try store.add("Holiday", fields: ["name": "New Year", "date": "2027-01-01"]).recordID
/// try store.edit("Holiday", id: id, set: ["details": "Fireworks"])
/// let holidays = try store.records("Holiday")
/// ```
///
/// Any number of `Store`s, in any number of processes, may use one directory
/// at once: LMDB serializes writers and never blocks readers.
public final class Store: Sendable {
    public let directory: String
    public let schemas: SchemaRegistry
    /// Who local events are attributed to: `EVSYNC_AUTHOR`, else `user@host`.
    public let author: String

    let environment: Environment
    let log: EventLog
    let meta: Database

    /// Version of the store's database layout, kept in `meta`. Layout 1 kept
    /// each record's row and shadow in two databases, `rows` and `shadow`;
    /// its log is the same, so its views are replayed into layout 2 on opening.
    static let layoutVersion = "2"

    /// Opens the store in `directory`.
    /// - Parameter create: make the directory and databases if missing; otherwise a missing store is a `.notFound` error.
    public init(directory: String, schemas: SchemaRegistry = SchemaRegistry(), create: Bool = false) throws(StoreError) {
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
            guard create else { throw StoreError(.notFound, "no store at \(directory)") }
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                throw StoreError(.failure, "cannot create the store directory \(directory): \(error.localizedDescription)")
            }
        } else if !isDirectory.boolValue {
            throw StoreError(.invalidData, "\(directory) is not a directory")
        }
        if !create, !FileManager.default.fileExists(atPath: directory + "/data.mdb") {
            throw StoreError(.notFound, "no store at \(directory)")
        }
        do {
            let environment = try Self.openEnvironment(directory)
            (self.log, self.meta) = try Self.openDatabases(in: environment)
            self.environment = environment
        } catch {
            throw StoreError.wrap(error)
        }
        self.directory = directory
        self.schemas = schemas
        self.author = Self.defaultAuthor()
    }

    /// The map is address space, not memory: ask for 64 GiB, and settle for
    /// less where the address space is limited (32-bit, `ulimit -v`, valgrind).
    static func openEnvironment(_ directory: String, maxDatabases: UInt32 = 16) throws -> Environment {
        var failure: (any Error)?
        for mapSize in [1 << 36, 1 << 33, 1 << 30] {
            do {
                return try Environment(directory: directory, mapSize: mapSize, maxDatabases: maxDatabases)
            } catch {
                failure = error
            }
        }
        throw failure ?? StoreError(.failure, "cannot open the store at \(directory)")
    }

    private static func openDatabases(in environment: Environment) throws -> (EventLog, Database) {
        func open(_ transaction: Transaction, create: Bool) throws -> (EventLog, Database) {
            let flag = create ? MDBFlags.create : 0
            let meta = try environment.openDatabase("meta", flags: flag, in: transaction)
            let layout = try transaction.get(Array("layout".utf8), in: meta).map { String(decoding: $0, as: UTF8.self) }
            if let layout, layout != layoutVersion {
                guard layout == "1" else {
                    throw StoreError(.corrupt, "the store's layout \(layout) is not one this evsync reads (\(layoutVersion))")
                }
                guard create else { throw LayoutNeedsUpgrade() }
            }
            let log = EventLog(
                events: try environment.openDatabase("events", flags: flag, in: transaction),
                views: try ViewDatabases.open(in: environment, transaction: transaction, create: create)
            )
            if layout == "1" {
                try upgradeLayout1(log, environment: environment, in: transaction)
            }
            if create, layout != layoutVersion {
                try transaction.put(Array("layout".utf8), Array(layoutVersion.utf8), in: meta)
            }
            return (log, meta)
        }
        // Readers must not wait for the write lock, so try without creating first.
        do {
            return try environment.read { try open($0, create: false) }
        } catch let error as StorageError where error.code == MDBErrors.notFound {
            return try environment.write { try open($0, create: true) }
        } catch is LayoutNeedsUpgrade {
            return try environment.write { try open($0, create: true) }
        }
    }

    /// Replaces layout 1's `rows` and `shadow` with the `records` view, replayed from the log.
    private static func upgradeLayout1(_ log: EventLog, environment: Environment, in transaction: Transaction) throws {
        for name in ["rows", "shadow"] {
            if let database = try environment.existingDatabase(name, in: transaction) { try transaction.drop(database) }
        }
        for database in log.views.all { try transaction.empty(database) }
        try replay(log.events, into: log.views, environment: environment, in: transaction)
    }

    private static func defaultAuthor() -> String {
        if let author = ProcessInfo.processInfo.environment["EVSYNC_AUTHOR"], !author.isEmpty { return author }
        let user = ProcessInfo.processInfo.environment["USER"] ?? ProcessInfo.processInfo.userName
        return "\(user)@\(ProcessInfo.processInfo.hostName)"
    }

    // MARK: Transactions

    func read<T>(_ body: (Transaction) throws -> T) throws(StoreError) -> T {
        do { return try environment.read(body) } catch { throw StoreError.wrap(error) }
    }

    /// One write transaction; the appender numbers events as they are added. Nothing is written if `body` throws.
    func write<T>(_ body: (inout EventLog.Appender) throws -> T) throws(StoreError) -> T {
        do {
            return try environment.write { transaction in
                var appender = try EventLog.Appender(log: log, transaction: transaction)
                return try body(&appender)
            }
        } catch {
            throw StoreError.wrap(error)
        }
    }

    func localEvent(_ kind: Event.Kind, entity: String, id: String, set: JSONObject = [:], unset: [String] = []) -> Event {
        Event(eventID: RecordID.generate(), at: Timestamp.now(), entity: entity, recordID: id, kind: kind, origin: .local,
              author: author, set: set, unset: unset)
    }

    // MARK: Local changes

    /// Creates a record. `id` defaults to a new UUID.
    /// - Throws: `.invalidData` for an unknown entity, a bad id, an existing id or fields that break the schema.
    @discardableResult
    public func add(_ entityName: String, id: String? = nil, fields: JSONObject) throws(StoreError) -> Event {
        let schema = try entity(entityName)
        let id = id ?? RecordID.generate()
        try Self.checkID(id)
        do { try schema.validate(fields) } catch { throw StoreError.wrap(error) }
        return try write { appender in
            if try log.views.projection(entity: schema.name, id: id, in: appender.transaction).row != nil {
                throw StoreError(.invalidData, "\(schema.name) '\(id)' already exists")
            }
            return try appender.append(localEvent(.created, entity: schema.name, id: id, set: fields))
        }
    }

    /// Changes fields of a record. Returns nil, writing nothing, when the values are already those.
    @discardableResult
    public func edit(_ entityName: String, id: String, set: JSONObject = [:], unset: [String] = []) throws(StoreError) -> Event? {
        let schema = try entity(entityName)
        try Self.checkID(id)
        do {
            for (field, value) in set { try schema.validate(field: field, value: value) }
            if let unknown = unset.first(where: { !schema.hasField($0) }) {
                throw SchemaError("\(schema.name) has no field '\(unknown)'")
            }
            // Otherwise the outcome would depend on whether the field is there now.
            if let both = unset.first(where: { set[$0] != nil }) {
                throw SchemaError("\(schema.name).\(both) cannot be both set and unset in one edit")
            }
        } catch {
            throw StoreError.wrap(error)
        }
        return try write { appender in
            guard let row = try log.views.projection(entity: schema.name, id: id, in: appender.transaction).row else {
                throw StoreError(.notFound, "no \(schema.name) with id '\(id)'")
            }
            let changed = set.filter { row[$0.key] != $0.value }
            let removed = unset.filter { row[$0] != nil }
            guard !changed.isEmpty || !removed.isEmpty else { return nil }
            var result = row
            for (field, value) in changed { result[field] = value }
            for field in removed { result[field] = nil }
            try schema.validate(result)
            return try appender.append(localEvent(.updated, entity: schema.name, id: id, set: changed, unset: removed.sorted()))
        }
    }

    /// Deletes a record.
    @discardableResult
    public func delete(_ entityName: String, id: String) throws(StoreError) -> Event {
        let schema = try entity(entityName)
        try Self.checkID(id)
        return try write { appender in
            guard try log.views.projection(entity: schema.name, id: id, in: appender.transaction).row != nil else {
                throw StoreError(.notFound, "no \(schema.name) with id '\(id)'")
            }
            return try appender.append(localEvent(.deleted, entity: schema.name, id: id))
        }
    }

    /// The schema of an entity, by name (any case).
    public func entity(_ name: String) throws(StoreError) -> EntitySchema {
        do { return try schemas.schema(named: name) } catch { throw StoreError.wrap(error) }
    }

    static func checkID(_ id: String) throws(StoreError) {
        guard RecordID.isValid(id) else {
            throw StoreError(.invalidData, "invalid record id '\(id)': use letters, digits, '_' and '-', starting with a letter or digit, at most 128 characters")
        }
    }
}

/// Thrown in a read transaction when the store's layout needs upgrading, which only a write transaction can do.
private struct LayoutNeedsUpgrade: Error {}
