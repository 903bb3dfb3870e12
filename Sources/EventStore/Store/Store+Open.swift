import Foundation
import Storage

/// Opening a store: its directory, the environment with the largest map the address space allows,
/// its databases (created for a new store, upgraded from layout 1, views replayed when repairing),
/// and the check that its log ends where the last commit left it.
extension Store {
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

    /// Checks that `directory` is one, or creates it (with `create`); without `create`, it must hold a data file.
    /// - Returns: the directories whose entries a new store adds (`flushNames`), none for a store already there.
    static func prepareDirectory(_ directory: String, create: Bool) throws(StoreError) -> [String] {
        var isDirectory: ObjCBool = false
        var changed: [String] = []
        if !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
            guard create else { throw StoreError(.notFound, "no store at \(directory)") }
            // The store's directory, and the parent of each directory made for it.
            var made = directory
            while !FileManager.default.fileExists(atPath: made), made != "/", !made.isEmpty {
                made = (made as NSString).deletingLastPathComponent
                changed.append(made.isEmpty ? "." : made)
            }
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
        let isNew = !FileManager.default.fileExists(atPath: directory + "/data.mdb")
        if !create, isNew {
            throw StoreError(.notFound, "no store at \(directory)")
        }
        return isNew ? [directory] + changed : []
    }

    /// Flushes the directories a new store added entries to, once LMDB made its files and before any write is
    /// acknowledged: until then a power cut may take the store's names, and with them its flushed pages, away
    /// (found by CrashStateTests).
    /// A directory this process may not read (only write and search), or a file system that cannot flush one
    /// (`EINVAL`), is left as it is, as SQLite does: the store works there as before, without this guarantee.
    static func flushNames(_ directories: [String]) throws {
        for directory in directories {
            let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if descriptor < 0, errno == EACCES { continue }
            guard descriptor >= 0 else { throw StorageError(code: errno, operation: "opening \(directory)") }
            defer { close(descriptor) }
            guard fsync(descriptor) == 0 || errno == EINVAL else { throw StorageError(code: errno, operation: "flushing \(directory)") }
        }
    }

    /// The map sizes tried, largest first. The map is address space, not
    /// memory: ask for 64 GiB, and settle for less where the address space
    /// is limited (32-bit, `ulimit -v`, valgrind). `Configuration.mapSize` asks for less.
    static let mapSizes = [1 << 36, 1 << 33, 1 << 30]

    /// Opens the environment with the largest map of `mapSizes` the address space allows.
    /// A store this process may not write (read-only media, another user's
    /// files, an immutable file) is opened read-only: it can be read, and a
    /// write fails with `.readOnly`.
    /// - Returns: the environment, whether its map is smaller than the first
    ///   size tried, and why it was opened read-only (an `errno`), if it was.
    static func openEnvironment(_ directory: String, mapSizes: [Int],
                                writesInPlace: Bool = false) throws(StorageError) -> SharedEnvironments.Opened {
        var readOnlyBecause: Int32?
        var failure = StorageError(code: EINVAL, operation: "opening \(directory)")
        for (index, mapSize) in mapSizes.enumerated() {
            do {
                let environment = try Environment(directory: directory, mapSize: mapSize, maxDatabases: 16,
                                                  readOnly: readOnlyBecause != nil, writesInPlace: writesInPlace)
                return SharedEnvironments.Opened(environment: environment, mapReduced: index > 0, readOnlyBecause: readOnlyBecause)
            } catch where readOnlyBecause == nil && error.kind == .readOnly
                            && FileManager.default.fileExists(atPath: directory + "/data.mdb") {
                readOnlyBecause = error.code
                do {
                    let environment = try Environment(directory: directory, mapSize: mapSize, maxDatabases: 16, readOnly: true)
                    return SharedEnvironments.Opened(environment: environment, mapReduced: index > 0, readOnlyBecause: error.code)
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

    /// Layouts opened as they are: a store of layout 2 to 7 becomes layout 8 when it is next written.
    private static let currentLayouts: Set<String> = ["2", "3", "4", compactedLayout, "6", "7", layoutVersion]

    /// - Returns: the log, `meta`, and how many events were replayed into the views (upgraded or repaired), if they were.
    static func openDatabases(in environment: Environment, directory: String, create: Bool,
                              repairingViews: Bool) throws -> (log: EventLog, meta: Database, replayed: UInt64?) {
        func open(_ transaction: Transaction, create: Bool) throws -> (log: EventLog, meta: Database, replayed: UInt64?) {
            let flag = create ? MDBFlags.create : 0
            let meta = try environment.openDatabase("meta", flags: flag, in: transaction)
            let layout = try transaction.get(Array("layout".utf8), in: meta).map { String(decoding: $0, as: UTF8.self) }
            if let layout, !currentLayouts.contains(layout) {
                guard layout == "1" else {
                    let store = "the store at \(directory)"
                    if let number = Int(layout), number > Int(layoutVersion) ?? 8 {
                        throw StoreError(.corrupt, "\(store) was written by a newer evsync (layout \(layout); this one reads \(layoutVersion))",
                                         remedy: .useNewerVersion, directory: directory)
                    }
                    throw StoreError(.corrupt, "\(store) is damaged (its layout mark is '\(layout)', not one of an evsync store)",
                                     remedy: .restoreFromBackup, directory: directory)
                }
                guard create else { throw LayoutNeedsUpgrade() }
            }
            let events = try environment.openDatabase("events", flags: flag, in: transaction)
            // The indexes' database is in stores made since; `prepareIndexes` adds it to the others.
            let indexes = RecordIndexes(database: create ? try environment.openDatabase(RecordIndexes.databaseName, flags: flag | RecordIndexes.flags, in: transaction)
                                            : try environment.existingDatabase(RecordIndexes.databaseName, flags: RecordIndexes.flags, in: transaction),
                                        meta: meta)
            let log = EventLog(events: events, views: try ViewDatabases.open(in: environment, transaction: transaction, create: create,
                                                                            events: events, indexes: indexes),
                               meta: meta)
            let replayed = layout == "1" ? try upgradeLayout1(log, environment: environment, in: transaction) : nil
            if create, layout != layoutVersion {
                try transaction.put(Array("layout".utf8), Array(layoutVersion.utf8), in: meta)
            }
            // A new store's events are all stamped in order; an older store's may not be (`seq(at:in:)`).
            if create, layout == nil, try log.lastSeq(in: transaction) == 0 {
                try transaction.put(Array(MetaKey.stampsInOrder.utf8), Array("yes".utf8), in: meta)
            }
            return (log, meta, replayed)
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
                                 + "database\(missing.count > 1 ? "s are" : " is") missing)", remedy: .rebuildViews, directory: directory)
            }
            // The views are created and filled in one transaction: a replay that fails leaves them missing, not empty.
            return try environment.write { transaction in
                var opened = try open(transaction, create: true)
                for database in opened.log.views.all { try transaction.empty(database) }
                opened.replayed = try replay(opened.log, into: opened.log.views, environment: environment, in: transaction)
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
    /// number agree (less the events compactions moved out, which the commits that moved them count in
    /// `meta`), and every commit that appends records the last number in `meta`.
    static func checkLogEnd(_ log: EventLog, meta: Database, directory: String, in transaction: Transaction) throws {
        let last = try log.lastSeq(in: transaction)
        let count = try transaction.entries(of: log.events)
        func damaged(_ reason: String) -> StorageError {
            StorageError(code: MDBErrors.corrupted, operation: "opening \(directory)", reason: reason)
        }
        let moved = try transaction.get(Array(MetaKey.movedEvents.utf8), in: meta).flatMap { UInt64(String(decoding: $0, as: UTF8.self)) } ?? 0
        guard UInt64(count) + moved == last else {
            throw damaged("its log holds \(count) events\(moved > 0 ? " and \(moved) archived" : ""), but its last is event \(last)")
        }
        // A store written by an older evsync has no mark, or one left behind by the events it appended since.
        if let recorded = try transaction.get(Array(MetaKey.logEnd.utf8), in: meta) {
            guard let end = UInt64(String(decoding: recorded, as: UTF8.self)) else { throw damaged("its log's end mark is unreadable") }
            guard end <= last else { throw damaged("its log ends at event \(last), but events up to \(end) were committed") }
        }
    }

    /// Replaces layout 1's `rows` and `shadow` with the `records` view, replayed from the log; returns the events replayed.
    private static func upgradeLayout1(_ log: EventLog, environment: Environment, in transaction: Transaction) throws -> UInt64 {
        for name in ["rows", "shadow"] {
            if let database = try environment.existingDatabase(name, in: transaction) { try transaction.drop(database) }
        }
        for database in log.views.all { try transaction.empty(database) }
        return try replay(log, into: log.views, environment: environment, in: transaction)
    }
}

/// Thrown in a read transaction when the store's layout needs upgrading, which only a write transaction can do.
private struct LayoutNeedsUpgrade: Error {}
