import Foundation
import Storage

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
    /// Who local events are attributed to: the configuration's `author`, else `user@host`.
    public let author: String
    /// When events happen, in milliseconds since 1970 (UTC): the system clock
    /// unless the store was opened with another (tests set the time they check).
    public let clock: @Sendable () -> Int64
    /// Whether the app's own writes (`write`, `add`, `edit`, `delete`, …) are on disk before they return.
    public let durability: Durability

    let environment: Environment
    let log: EventLog
    let meta: Database
    /// What errors say about this store: its directory, its map, why it is read-only.
    let errorContext: StoreError.Context
    /// How many events were replayed into the views as the store opened (missing views repaired, a
    /// layout-1 store upgraded); nil if none were. `rebuildViews` does not replay them again.
    let replayedAtOpening: UInt64?

    /// Version of the store's database layout, kept in `meta`. Layout 1 kept
    /// each record's row and shadow in two databases, `rows` and `shadow`;
    /// its log is the same, so its views are replayed into layout 2 on opening.
    /// Layout 3 is layout 2 whose log may hold events of format 2
    /// (`EventCoding`): a layout-2 store is marked 3 by the first write that
    /// appends events, so that an evsync which reads only format 1 refuses
    /// it as "written by a newer evsync" instead of finding its events damaged.
    /// Layout 4 is layout 3 whose `records` may hold rows stored by reference
    /// to the event that set them (`RecordEntry`), marked likewise by the first write.
    /// Layout 5 (`compactedLayout`) is layout 4 that a compaction marked.
    /// Layout 6 is layout 4 or 5 written with a journal beside it, marked likewise by the first
    /// write: an evsync without the journal would flush and restore it wrongly.
    /// Layout 7 is layout 6 whose journal entries may hold images of the pages LMDB freed, marked
    /// likewise: an evsync that restores entries without them would restore pages LMDB had reused.
    /// Layout 8 is layout 7 without the journal: durability is LMDB's own (`LegacyJournal` migrates layouts 6
    /// and 7 as they are opened), marked likewise, so that an evsync of the journal design, which would open it
    /// with `MDB_NOSYNC` and start a journal of its own, refuses it as written by a newer evsync. It is the
    /// newest this evsync reads.
    static let layoutVersion = "8"

    /// This store's share of the environment, which other `Store`s on the same file in this process
    /// use too (`SharedEnvironments`); the environment closes when the last of them goes.
    private let lease: EnvironmentLease

    // Opening, upgrading and repairing a store are in Store+Open.swift; only the initializer that
    // sets the stored properties is here, since a class's designated initializer cannot be in an extension.
    /// Opens the store with the first map size of `mapSizes` that the address space allows (tests fill a small one).
    init(directory: String, schemas: SchemaRegistry = SchemaRegistry(), create: Bool = false, mapSizes: [Int],
         repairingViews: Bool = false, writesInPlace: Bool = false, author: String? = nil,
         clock: @escaping @Sendable () -> Int64 = Timestamp.now, durability: Durability = .full) throws(StoreError) {
        let newNames = try Self.prepareDirectory(directory, create: create)
        var context = StoreError.Context(directory: directory, mapSize: nil, mapReduced: false, readOnlyBecause: nil)
        do {
            let lease = try SharedEnvironments.lease(directory) {
                try Self.openEnvironment(directory, mapSizes: mapSizes, writesInPlace: writesInPlace)
            }
            let environment = lease.environment
            context = StoreError.Context(directory: directory, mapSize: environment.mapSize, mapReduced: lease.opened.mapReduced,
                                         readOnlyBecause: lease.opened.readOnlyBecause)
            let (opened, meta, replayed) = try Self.openDatabases(in: environment, directory: directory, create: create,
                                                                  repairingViews: repairingViews)
            let log = try Self.prepareIndexes(opened, declared: IndexDefinition.declared(by: schemas), environment: environment,
                                              writable: lease.opened.readOnlyBecause == nil)
            try environment.read { try Self.checkLogEnd(log, meta: meta, directory: directory, in: $0) }
            try Self.flushNames(newNames)
            (self.log, self.meta, self.replayedAtOpening) = (log, meta, replayed)
            self.environment = environment
            self.lease = lease
        } catch {
            throw StoreError.wrap(error, in: context)
        }
        self.errorContext = context
        self.directory = directory
        self.schemas = schemas
        self.author = author ?? Self.defaultAuthor
        self.clock = clock
        self.durability = durability
    }

    /// `user@host`: who this process runs as, on which machine.
    static var defaultAuthor: String {
        let user = getpwuid(getuid()).flatMap { $0.pointee.pw_name.map { String(cString: $0) } } ?? String(getuid())
        return "\(user)@\(ProcessInfo.processInfo.hostName)"
    }

    // MARK: Transactions

    /// `error` as a `StoreError` that names this store (see `StoreError.wrap`).
    func wrap(_ error: any Error) -> StoreError {
        StoreError.wrap(error, in: errorContext)
    }

    func snapshot<T>(_ body: (Transaction) throws -> T) throws(StoreError) -> T {
        do { return try environment.read(body) } catch { throw wrap(error) }
    }

    /// One write transaction; the appender numbers events as they are added. Nothing is written if `body` throws.
    /// `local`: an app's own change, flushed as `durability` says; anything else (sync, import, restore) always is.
    func writeLog<T>(local: Bool = false, _ body: (inout EventLog.Appender) throws -> T) throws(StoreError) -> T {
        do {
            return try environment.groupWrite(durable: !local || durability == .full) { try appending(in: $0, body) }
        } catch {
            throw wrap(error)
        }
    }

    /// Runs `body` with an appender on `transaction` (a write transaction), and records where the log then ends.
    func appending<T>(in transaction: Transaction, _ body: (inout EventLog.Appender) throws -> T) throws -> T {
        try markLayout(in: transaction)
        var appender = try EventLog.Appender(log: log, transaction: transaction)
        let first = appender.nextSeq
        let result = try body(&appender)
        // Where the log ends, committed with it: see `checkLogEnd`.
        if appender.nextSeq != first {
            try setMeta(MetaKey.logEnd, String(appender.nextSeq - 1), in: transaction)
            try log.views.indexes.noteKept(through: appender.nextSeq - 1, in: transaction)
        }
        return result
    }

    /// Marks a store of an older layout as the current one before events of format 2 or rows by reference
    /// are written to it, or a write made durable by LMDB alone (see `layoutVersion`).
    func markLayout(in transaction: Transaction) throws {
        let key = Array("layout".utf8)
        let layout = Array(Self.layoutVersion.utf8)
        let current = try transaction.get(key, in: meta).map(Array.init)
        if current != layout { try transaction.put(key, layout, in: meta) }
    }

    func localEvent(_ kind: Event.Kind, entity: String, id: String, set: JSONObject = [:], unset: [String] = []) -> Event {
        Event(eventID: RecordID.generate(), at: clock(), entity: entity, recordID: id, kind: kind, origin: .local,
              author: author, set: set, unset: unset)
    }

    // MARK: Local changes

    // Each change is a transaction of one (`StoreTransaction` has the same changes, for many in one).

    /// Creates a record. `id` defaults to a new UUID.
    /// - Throws: `.invalidData` for an unknown entity, a bad id, an existing id or fields that break the schema.
    @discardableResult
    public func add(_ entityName: String, id: String? = nil, fields: JSONObject) throws(StoreError) -> Event {
        try added(entityName, id: id, fields: fields).event
    }

    /// `add`, also returning the record it made: what `evsync add --json` prints, without reading it again.
    /// `overridingReadOnly`: made even if the entity is read-only for this account (`refuseIfReadOnly`).
    package func added(_ entityName: String, id: String? = nil, fields: JSONObject,
                       overridingReadOnly: Bool = false) throws(StoreError) -> (event: Event, record: Record) {
        let schema = try entity(entityName)
        return try writeLog(local: true) { appender in
            try add(schema, id: id, fields: fields, overridingReadOnly: overridingReadOnly, with: &appender)
        }
    }

    /// Changes fields of a record. Returns nil, writing nothing, when the values are already those.
    @discardableResult
    public func edit(_ entityName: String, id: String, set: JSONObject = [:], unset: [String] = []) throws(StoreError) -> Event? {
        try edited(entityName, id: id, set: set, unset: unset).event
    }

    /// `edit`, also returning the record as it now is: what `evsync edit --json` prints, without reading it again.
    package func edited(_ entityName: String, id: String, set: JSONObject = [:], unset: [String] = [],
                        overridingReadOnly: Bool = false) throws(StoreError) -> (event: Event?, record: Record) {
        let schema = try entity(entityName)
        return try writeLog(local: true) { appender in
            try edit(schema, id: id, set: set, unset: unset, overridingReadOnly: overridingReadOnly, with: &appender)
        }
    }

    /// Deletes a record.
    @discardableResult
    public func delete(_ entityName: String, id: String) throws(StoreError) -> Event {
        try deleted(entityName, id: id)
    }

    /// `delete`; `overridingReadOnly` as `added`'s.
    package func deleted(_ entityName: String, id: String, overridingReadOnly: Bool = false) throws(StoreError) -> Event {
        let schema = try entity(entityName)
        return try writeLog(local: true) { appender in try delete(schema, id: id, overridingReadOnly: overridingReadOnly, with: &appender) }
    }

    func add(_ schema: EntitySchema, id: String?, fields: JSONObject, overridingReadOnly: Bool,
             with appender: inout EventLog.Appender) throws -> (event: Event, record: Record) {
        let id = id ?? RecordID.generate()
        try Self.checkID(id)
        do { try schema.validate(fields) } catch { throw StoreError.wrap(error) }
        if !overridingReadOnly { try refuseIfReadOnly(schema, in: appender.transaction) }
        let current = try log.views.projection(entity: schema.name, id: id, in: appender.transaction)
        if current.row != nil {
            throw StoreError(.invalidData, "\(schema.name) '\(id)' already exists")
        }
        // A creation's row is its fields (`RecordProjection.apply`).
        return (try appender.append(localEvent(.created, entity: schema.name, id: id, set: fields), current: current),
                schema.record(id: id, fields: fields))
    }

    func edit(_ schema: EntitySchema, id: String, set: JSONObject, unset: [String], overridingReadOnly: Bool,
              with appender: inout EventLog.Appender) throws -> (event: Event?, record: Record) {
        try Self.checkID(id, fromServer: true)
        if !overridingReadOnly { try refuseIfReadOnly(schema, in: appender.transaction) }
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
        let current = try log.views.projection(entity: schema.name, id: id, in: appender.transaction)
        guard let stored = current.row else {
            throw StoreError(.notFound, "no \(schema.name) with id '\(id)'")
        }
        // A field still stored under its former name is edited under its new one, and the old name goes.
        let row = schema.upcast(stored)
        let changed = set.filter { row[$0.key] != $0.value }
        let removed = unset.filter { row[$0] != nil }
        guard !changed.isEmpty || !removed.isEmpty else { return (nil, schema.record(id: id, fields: row)) }
        let formerNames = schema.formerNames(of: Array(changed.keys) + removed, in: stored)
        var result = row
        for (field, value) in changed { result[field] = value }
        for field in removed { result[field] = nil }
        // Fields the schema does not declare can only be carried ones (a newer app's, through the server, or an
        // older schema's): `set` was checked above. They are kept as they are; the declared ones must still hold.
        do { try schema.validate(result.filter { schema.hasField($0.key) }) } catch { throw StoreError.wrap(error) }
        let event = try appender.append(localEvent(.updated, entity: schema.name, id: id, set: changed,
                                                   unset: (removed + formerNames).sorted()),
                                        current: current)
        return (event, schema.record(id: id, fields: result))
    }

    func delete(_ schema: EntitySchema, id: String, overridingReadOnly: Bool, with appender: inout EventLog.Appender) throws -> Event {
        try Self.checkID(id, fromServer: true)
        if !overridingReadOnly { try refuseIfReadOnly(schema, in: appender.transaction) }
        let current = try log.views.projection(entity: schema.name, id: id, in: appender.transaction)
        guard current.row != nil else {
            throw StoreError(.notFound, "no \(schema.name) with id '\(id)'")
        }
        return try appender.append(localEvent(.deleted, entity: schema.name, id: id), current: current)
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
