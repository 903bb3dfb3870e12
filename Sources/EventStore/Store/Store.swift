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
    /// When events happen, in milliseconds since 1970 (UTC): the system clock
    /// unless the store was opened with another (tests set the time they check).
    public let clock: @Sendable () -> Int64

    let environment: Environment
    let log: EventLog
    let meta: Database
    /// What errors say about this store: its directory, its map, why it is read-only.
    let errorContext: StoreError.Context

    /// Version of the store's database layout, kept in `meta`. Layout 1 kept
    /// each record's row and shadow in two databases, `rows` and `shadow`;
    /// its log is the same, so its views are replayed into layout 2 on opening.
    /// Layout 3 is layout 2 whose log may hold events of format 2
    /// (`EventCoding`): a layout-2 store is marked 3 by the first write that
    /// appends events, so that an evsync which reads only format 1 refuses
    /// it as "written by a newer evsync" instead of finding its events damaged.
    /// Layout 4 is layout 3 whose `records` may hold rows stored by reference
    /// to the event that set them (`RecordEntry`), marked likewise by the first write.
    static let layoutVersion = "4"
    /// Layouts opened as they are: a layout-2 or -3 store becomes layout 4 when it is next written.
    private static let currentLayouts: Set<String> = ["2", "3", layoutVersion]

    /// Opens the store in `directory`.
    ///
    /// Only a missing directory, or one without a data file, becomes a new
    /// store (with `create`). An existing store is never initialised again:
    /// an empty data file, a log or meta database that is missing, or a log
    /// that ends before the last event committed is `.corrupt`, and so are
    /// missing views (which `rebuildViews` can replay: see `repairingViews`).
    /// - Parameters:
    ///   - directory: the store's directory (the CLI's `--store`, default `.evsync`).
    ///   - schemas: the entities it holds (the built-in Holiday and Birthday unless given).
    ///   - create: make the directory and databases if missing; otherwise a missing store is a `.notFound` error.
    ///   - clock: the time events are stamped with, in milliseconds since 1970.
    /// - Throws: `.notFound`; `.corrupt` for a damaged store or one of a newer evsync; `.readOnly` when it
    ///   cannot be opened even for reading (a store only this user cannot write is opened read-only).
    public convenience init(directory: String, schemas: SchemaRegistry = SchemaRegistry(), create: Bool = false,
                            clock: @escaping @Sendable () -> Int64 = Timestamp.now) throws(StoreError) {
        try self.init(directory: directory, schemas: schemas, create: create, mapSizes: Self.mapSizes, clock: clock)
    }

    /// Opens the store to rebuild its views: as `init(directory:schemas:create:)`, except that views
    /// found missing are not an error but are created and replayed from the log, in one transaction.
    public convenience init(repairingViews directory: String, schemas: SchemaRegistry = SchemaRegistry()) throws(StoreError) {
        try self.init(directory: directory, schemas: schemas, mapSizes: Self.mapSizes, repairingViews: true)
    }

    /// Opens the store for a large `importRecords`, creating it if missing: as `init(directory:schemas:create:)`,
    /// except that its write transactions build their pages in the data file's own pages in the page cache,
    /// which the kernel writes back and the import unmaps as it goes, rather than as copies in this process's
    /// memory (LMDB holds up to 512 MiB of those). Importing a million records then peaks at about 200 MiB.
    ///
    /// While such a store is open its data file is as long as its map (64 GiB, sparse: only the pages in use
    /// take disk space), and an import reserves disk blocks ahead of what it writes. `importRecords` cuts the
    /// file back to its used pages when it ends, whether or not it succeeded. Stores opened the usual way,
    /// in other processes, can be open at the same time.
    public convenience init(importingInto directory: String, schemas: SchemaRegistry = SchemaRegistry(),
                            clock: @escaping @Sendable () -> Int64 = Timestamp.now) throws(StoreError) {
        try self.init(directory: directory, schemas: schemas, create: true, mapSizes: Self.mapSizes,
                      writesInPlace: true, clock: clock)
    }

    /// Opens the store with the first map size of `mapSizes` that the address space allows (tests fill a small one).
    init(directory: String, schemas: SchemaRegistry = SchemaRegistry(), create: Bool = false, mapSizes: [Int],
         repairingViews: Bool = false, writesInPlace: Bool = false,
         clock: @escaping @Sendable () -> Int64 = Timestamp.now) throws(StoreError) {
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
            guard create else { throw StoreError(.notFound, "no store at \(directory)") }
            do {
                // The store's directory is its owner's only: the log holds every value ever stored.
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                throw StoreError(.failure, "cannot create the store directory \(directory): \(error.localizedDescription)")
            }
        } else if !isDirectory.boolValue {
            throw StoreError(.invalidData, "\(directory) is not a directory")
        }
        if !create, !FileManager.default.fileExists(atPath: directory + "/data.mdb") {
            throw StoreError(.notFound, "no store at \(directory)")
        }
        var context = StoreError.Context(directory: directory, mapSize: nil, mapReduced: false, readOnlyBecause: nil)
        do {
            let (environment, mapReduced, readOnlyBecause) = try Self.openEnvironment(directory, mapSizes: mapSizes, writesInPlace: writesInPlace)
            context = StoreError.Context(directory: directory, mapSize: environment.mapSize, mapReduced: mapReduced,
                                         readOnlyBecause: readOnlyBecause)
            let (log, meta) = try Self.openDatabases(in: environment, directory: directory, create: create,
                                                     repairingViews: repairingViews)
            try environment.read { try Self.checkLogEnd(log, meta: meta, directory: directory, in: $0) }
            (self.log, self.meta) = (log, meta)
            self.environment = environment
        } catch {
            throw StoreError.wrap(error, in: context)
        }
        self.errorContext = context
        self.directory = directory
        self.schemas = schemas
        self.author = Self.defaultAuthor()
        self.clock = clock
    }

    /// The map sizes tried, largest first. The map is address space, not
    /// memory: ask for 64 GiB, and settle for less where the address space
    /// is limited (32-bit, `ulimit -v`, valgrind). Debug builds take one size
    /// from `EVSYNC_MAP_SIZE` (bytes), for tests that fill a small map through the CLI.
    static var mapSizes: [Int] {
        #if DEBUG
        if let text = ProcessInfo.processInfo.environment["EVSYNC_MAP_SIZE"], let size = Int(text), size > 0 { return [size] }
        #endif
        return [1 << 36, 1 << 33, 1 << 30]
    }

    /// Opens the environment with the largest map of `mapSizes` the address space allows.
    /// A store this process may not write (read-only media, another user's
    /// files, an immutable file) is opened read-only: it can be read, and a
    /// write fails with `.readOnly`.
    /// - Returns: the environment, whether its map is smaller than the first
    ///   size tried, and why it was opened read-only (an `errno`), if it was.
    static func openEnvironment(_ directory: String, mapSizes: [Int],
                                writesInPlace: Bool = false) throws(StorageError) -> (Environment, Bool, Int32?) {
        var readOnlyBecause: Int32?
        var failure = StorageError(code: EINVAL, operation: "opening \(directory)")
        for (index, mapSize) in mapSizes.enumerated() {
            do {
                let environment = try Environment(directory: directory, mapSize: mapSize, maxDatabases: 16,
                                                  readOnly: readOnlyBecause != nil, writesInPlace: writesInPlace)
                return (environment, index > 0, readOnlyBecause)
            } catch where readOnlyBecause == nil && error.kind == .readOnly
                            && FileManager.default.fileExists(atPath: directory + "/data.mdb") {
                readOnlyBecause = error.code
                do {
                    return (try Environment(directory: directory, mapSize: mapSize, maxDatabases: 16, readOnly: true), index > 0, error.code)
                } catch {
                    failure = error
                }
            } catch {
                failure = error
            }
            // Damage is not a matter of the map's size.
            if failure.kind == .damaged { break }
        }
        throw failure
    }

    private static func openDatabases(in environment: Environment, directory: String, create: Bool,
                                      repairingViews: Bool) throws -> (EventLog, Database) {
        func open(_ transaction: Transaction, create: Bool) throws -> (EventLog, Database) {
            let flag = create ? MDBFlags.create : 0
            let meta = try environment.openDatabase("meta", flags: flag, in: transaction)
            let layout = try transaction.get(Array("layout".utf8), in: meta).map { String(decoding: $0, as: UTF8.self) }
            if let layout, !currentLayouts.contains(layout) {
                guard layout == "1" else {
                    let store = "the store at \(directory)"
                    if let number = Int(layout), number > Int(layoutVersion)! {
                        throw StoreError(.corrupt, "\(store) was written by a newer evsync (layout \(layout); this one reads \(layoutVersion)): "
                                         + "use that evsync or a newer one", directory: directory)
                    }
                    throw StoreError(.corrupt, "\(store) is damaged (its layout mark is '\(layout)', not one of an evsync store): "
                                     + "rebuild-views cannot help; restore it from a backup", directory: directory)
                }
                guard create else { throw LayoutNeedsUpgrade() }
            }
            let events = try environment.openDatabase("events", flags: flag, in: transaction)
            let log = EventLog(events: events, views: try ViewDatabases.open(in: environment, transaction: transaction, create: create, events: events))
            if layout == "1" {
                try upgradeLayout1(log, environment: environment, in: transaction)
            }
            if create, layout != layoutVersion {
                try transaction.put(Array("layout".utf8), Array(layoutVersion.utf8), in: meta)
            }
            return (log, meta)
        }
        // Readers must not wait for the write lock, so open without creating first.
        do {
            return try environment.read { try open($0, create: false) }
        } catch let error as StorageError where error.code == MDBErrors.notFound {
            // Only a store nothing was ever committed to may be given its databases. Any other
            // store that lacks one has lost it: creating it would build an empty store on the damage.
            // One snapshot for both: another process may be creating this store right now.
            let (missing, neverCommitted) = try environment.read { transaction in
                (try (["meta", "events"] + ViewDatabases.names).filter { try environment.existingDatabase($0, in: transaction) == nil },
                 transaction.id == 0)
            }
            if neverCommitted {
                guard create else { throw StoreError(.notFound, "no store at \(directory)") }
                return try environment.write { try open($0, create: true) }
            }
            let lost = missing.filter { !ViewDatabases.names.contains($0) }
            if !lost.isEmpty {
                throw StorageError(code: MDBErrors.corrupted, operation: "opening \(directory)",
                                   reason: "its \(lost.joined(separator: " and ")) database\(lost.count > 1 ? "s are" : " is") missing")
            }
            // Created by another process since the first look.
            if missing.isEmpty { return try environment.read { try open($0, create: false) } }
            guard repairingViews else {
                throw StoreError(.corrupt, "the views of the store at \(directory) are damaged (its \(missing.joined(separator: " and ")) "
                                 + "database\(missing.count > 1 ? "s are" : " is") missing): run evsync rebuild-views to replay them from the log",
                                 directory: directory)
            }
            // The views are created and filled in one transaction: a replay that fails leaves them missing, not empty.
            return try environment.write { transaction in
                let opened = try open(transaction, create: true)
                for database in opened.0.views.all { try transaction.empty(database) }
                try replay(opened.0.events, into: opened.0.views, environment: environment, in: transaction)
                return opened
            }
        } catch is LayoutNeedsUpgrade {
            return try environment.write { try open($0, create: true) }
        }
    }

    /// Checks that the log ends where the last commit left it. A store whose
    /// newest meta page was lost can open on an older tree whose pages later
    /// transactions reused: its databases are then found, but hold other pages' contents.
    /// Events are numbered from 1 without a gap, so the log's count and its last
    /// number agree, and every commit that appends records the last number in `meta`.
    private static func checkLogEnd(_ log: EventLog, meta: Database, directory: String, in transaction: Transaction) throws {
        let last = try log.lastSeq(in: transaction)
        let count = try transaction.entries(of: log.events)
        func damaged(_ reason: String) -> StorageError {
            StorageError(code: MDBErrors.corrupted, operation: "opening \(directory)", reason: reason)
        }
        guard count == last else { throw damaged("its log holds \(count) events, but its last is event \(last)") }
        // A store written by an older evsync has no mark, or one left behind by the events it appended since.
        if let recorded = try transaction.get(Array(MetaKey.logEnd.utf8), in: meta) {
            guard let end = UInt64(String(decoding: recorded, as: UTF8.self)) else { throw damaged("its log's end mark is unreadable") }
            guard end <= last else { throw damaged("its log ends at event \(last), but events up to \(end) were committed") }
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

    /// `error` as a `StoreError` that names this store (see `StoreError.wrap`).
    func wrap(_ error: any Error) -> StoreError {
        StoreError.wrap(error, in: errorContext)
    }

    func read<T>(_ body: (Transaction) throws -> T) throws(StoreError) -> T {
        do { return try environment.read(body) } catch { throw wrap(error) }
    }

    /// One write transaction; the appender numbers events as they are added. Nothing is written if `body` throws.
    func write<T>(_ body: (inout EventLog.Appender) throws -> T) throws(StoreError) -> T {
        do {
            return try environment.write { transaction in
                try markLayout(in: transaction)
                var appender = try EventLog.Appender(log: log, transaction: transaction)
                let first = appender.nextSeq
                let result = try body(&appender)
                // Where the log ends, committed with it: see `checkLogEnd`.
                if appender.nextSeq != first { try setMeta(MetaKey.logEnd, String(appender.nextSeq - 1), in: transaction) }
                return result
            }
        } catch {
            throw wrap(error)
        }
    }

    /// Marks a layout-2 or -3 store as layout 4 before events of format 2, or rows by reference, are written to it (see `layoutVersion`).
    func markLayout(in transaction: Transaction) throws {
        let key = Array("layout".utf8)
        let layout = Array(Self.layoutVersion.utf8)
        if try transaction.get(key, in: meta) != layout { try transaction.put(key, layout, in: meta) }
    }

    func localEvent(_ kind: Event.Kind, entity: String, id: String, set: JSONObject = [:], unset: [String] = []) -> Event {
        Event(eventID: RecordID.generate(), at: clock(), entity: entity, recordID: id, kind: kind, origin: .local,
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
        try Self.checkID(id, fromServer: true)
        do {
            for (field, value) in set { try schema.validate(field: field, value: value) }
            if let unknown = unset.first(where: { !schema.hasField($0) }) { throw schema.unknownField(unknown) }
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
        try Self.checkID(id, fromServer: true)
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

    /// - Parameter fromServer: the id names a record that may have come from a server, whose ids may be longer
    ///   (`RecordID.isValidServerID`); a new id must keep the store's own rule.
    static func checkID(_ id: String, fromServer: Bool = false) throws(StoreError) {
        guard fromServer ? RecordID.isValidServerID(id) : RecordID.isValid(id) else {
            let shown = id.count > 40 ? String(id.prefix(40)) + "…" : id
            throw StoreError(.invalidData, "invalid record id '\(shown)': use letters, digits, '_' and '-', starting with a letter or digit, at most \(fromServer ? RecordID.maxServerLength : RecordID.maxLength) characters")
        }
    }
}

/// Thrown in a read transaction when the store's layout needs upgrading, which only a write transaction can do.
private struct LayoutNeedsUpgrade: Error {}
