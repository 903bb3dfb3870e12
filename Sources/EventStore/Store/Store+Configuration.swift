import Foundation
import Storage

extension Store {
    /// When a write of the app's own is on disk, as SQLite's `synchronous` settings in WAL mode.
    public enum Durability: String, Sendable, Codable {
        /// On disk before the write returns (or its awaiting task resumes): a power cut keeps every
        /// write the app was told succeeded. LMDB's two ordered flushes per commit (its pages, then the
        /// meta page that points to them), shared by writes from several threads or tasks that are
        /// committed together (group commit); see docs/store.md.
        case full
        /// Committed and visible before it returns, on disk with the next flushed commit, or
        /// within the kernel's writeback (about 30 s): a power cut may take back the last writes, all or
        /// nothing each, in order, and never damages the store. No flush of its own. SQLite's
        /// `synchronous=NORMAL` in WAL mode.
        case normal
    }

    /// How a store is opened: everything the library would otherwise take from
    /// its surroundings. The library reads no environment variable; the CLI
    /// fills this from `EVSYNC_*`.
    ///
    /// ```swift
    /// var configuration = Store.Configuration(create: true)
    /// configuration.author = "ann@phone"
    /// let store = try Store(directory: path, configuration: configuration)
    /// ```
    public struct Configuration: Sendable {
        /// The entities the store holds (the built-in Holiday and Birthday unless given).
        public var schemas: SchemaRegistry
        /// Make the directory and databases if missing; otherwise a missing store is `.notFound`.
        public var create: Bool
        /// Who local events are attributed to; nil for `user@host` of this process.
        public var author: String?
        /// The time events are stamped with, in milliseconds since 1970 (UTC).
        public var clock: @Sendable () -> Int64
        /// The largest map (address space, not memory) to ask for, in bytes; nil for 64 GiB, or less where
        /// the address space is limited. A store whose data outgrows its map fails writes with `.full`.
        public var mapSize: Int?
        /// Turn LMDB's faults on a damaged data file into `.corrupt` errors rather than a crash, by installing
        /// SIGSEGV and SIGBUS handlers for the whole process (see docs/library.md). Off by default: the
        /// library installs no signal handler unless the app asks.
        public var crashGuard: Bool
        /// Whether the app's own writes are on disk before they return (`.full`, the default) or may be
        /// lost to a power cut, never corrupted (`.normal`). Sync, import and restore are always `.full`.
        public var durability: Durability

        public init(schemas: SchemaRegistry = SchemaRegistry(), create: Bool = false, author: String? = nil,
                    clock: @escaping @Sendable () -> Int64 = Timestamp.now, mapSize: Int? = nil, crashGuard: Bool = false,
                    durability: Durability = .full) {
            (self.schemas, self.create, self.author, self.clock, self.mapSize, self.crashGuard, self.durability)
                = (schemas, create, author, clock, mapSize, crashGuard, durability)
        }

        /// The map sizes to try, largest first.
        var mapSizes: [Int] {
            guard let mapSize, mapSize > 0 else { return Store.mapSizes }
            return [mapSize] + Store.mapSizes.filter { $0 < mapSize }
        }
    }

    /// Opens the store in `directory` as `configuration` says. Any number of `Store`s, from any thread,
    /// may open one directory: they share one open environment (`SharedEnvironments`).
    /// - Throws: as `init(directory:schemas:create:clock:)`.
    public convenience init(directory: String, configuration: Configuration) throws(StoreError) {
        if configuration.crashGuard { CrashGuard.install() }
        try self.init(directory: directory, schemas: configuration.schemas, create: configuration.create,
                      mapSizes: configuration.mapSizes, author: configuration.author, clock: configuration.clock,
                      durability: configuration.durability)
    }

    /// Opens the store for a large `importRecords` (see `init(importingInto:schemas:clock:)`), as `configuration` says;
    /// it is created if missing, whatever `configuration.create` says.
    public convenience init(importingInto directory: String, configuration: Configuration) throws(StoreError) {
        if configuration.crashGuard { CrashGuard.install() }
        try self.init(directory: directory, schemas: configuration.schemas, create: true, mapSizes: configuration.mapSizes,
                      writesInPlace: true, author: configuration.author, clock: configuration.clock)
    }

    /// Opens the store to rebuild its views (see `init(repairingViews:schemas:)`), as `configuration` says.
    public convenience init(repairingViews directory: String, configuration: Configuration) throws(StoreError) {
        if configuration.crashGuard { CrashGuard.install() }
        try self.init(directory: directory, schemas: configuration.schemas, mapSizes: configuration.mapSizes,
                      repairingViews: true, author: configuration.author, clock: configuration.clock)
    }
}
