import CFileStatus
import CLMDB
import CLMDBGuard
import Foundation
import Synchronization

/// One LMDB environment: a memory-mapped file holding named databases.
///
/// Every use goes through `read` or `write`, which own their transaction for
/// exactly the closure's scope: commit on return, abort on throw. The
/// environment is opened with `MDB_NOTLS`, so a read transaction is not tied
/// to a thread (Swift tasks hop threads); write transactions never outlive
/// their synchronous closure, so they never cross an `await`.
package final class Environment: @unchecked Sendable {
    // LMDB's environment handle is thread-safe; the class only hands it to
    // transactions, which are confined to one closure on one thread.
    // State is internal, not private, for Environment+MappedPages.swift and Environment+FileSize.swift.
    let handle: OpaquePointer
    /// Where the data file is mapped: the range `releaseMappedPages` drops.
    let mapRange: (UInt, Int)?
    /// The data file this environment has open: its device and inode.
    private let dataFile: (device: UInt64, inode: UInt64)?
    /// The store's directory, where `data.mdb` should still be that file.
    private let directory: String
    /// File-backed resident bytes right after the last `releaseMappedPages`.
    let residentFloor = Atomic<Int>(0)
    /// Whether write transactions build their pages in the map itself
    /// (`MDB_WRITEMAP`) rather than in memory: see `init(writesInPlace:)`.
    package let writesInPlace: Bool
    /// How far into the data file disk blocks were reserved (`reserveFile`), in bytes.
    let reservedEnd = Atomic<Int>(0)

    /// Opens (creating if needed) the environment in `directory`. An
    /// existing data file is checked first for pages cut off its end (see
    /// `DataFileCheck`): LMDB would fault on them rather than fail. Its files
    /// are created readable and writable by their owner only.
    ///
    /// With `writesInPlace`, a write transaction writes its pages straight
    /// into the data file's pages in the page cache (`MDB_WRITEMAP`), which
    /// the kernel writes back and `releaseMappedPages` unmaps; without it,
    /// LMDB 0.9 holds up to 131,071 dirtied pages (512 MiB) as copies in the
    /// process's memory until the transaction commits. For one transaction
    /// larger than that (an import); see `reserveFile`, `trimFile` and
    /// `keepingMappedPages` for what it asks of its caller.
    ///
    /// LMDB's documentation says not to mix processes with and without it on
    /// one store, without saying why; in `mdb.c` the two differ in how a
    /// commit writes and flushes. On Linux the page cache is one, so the
    /// writes of either are what the other's map sees, and each commit syncs
    /// its own pages before its meta page (`msync` of the whole map with it,
    /// `fdatasync` without): mixing keeps both coherent and durable.
    package init(directory: String, mapSize: Int, maxDatabases: UInt32, readOnly: Bool = false,
         writesInPlace: Bool = false) throws(StorageError) {
        // Before anything reads the data file: a store of the former journal design is migrated first (`LegacyJournal`).
        if readOnly {
            try LegacyJournal.refuseIfCutOff(directory)
        } else {
            try LegacyJournal.migrate(directory, mapSize: mapSize, maxDatabases: maxDatabases)
            try Self.createDataFileIfMissing(in: directory, mapSize: mapSize)
        }
        try Self.refuseEmptyDataFile(in: directory)
        try DataFileCheck.check(directory + "/data.mdb")
        let handle = try Self.openHandle(directory: directory, mapSize: mapSize, maxDatabases: maxDatabases, readOnly: readOnly,
                                         writesInPlace: writesInPlace)
        self.handle = handle
        self.directory = directory
        self.commits = CommitSignal(directory: directory)
        self.writesInPlace = writesInPlace && !readOnly
        self.mapRange = Self.mapRange(of: directory)
        var descriptor: Int32 = -1
        self.dataFile = mdb_env_get_fd(handle, &descriptor) == MDB_SUCCESS
            ? Self.identity(of: "", in: descriptor).map { ($0.device, $0.inode) } : nil
        // Only this process's own reads (`DataFile`) go through the descriptor: LMDB reads through its map.
        if dataFile != nil { evsync_skip_access_times(descriptor) }
        // Reader slots of processes that were killed stay taken until someone clears them.
        var stale: Int32 = 0
        mdb_reader_check(handle, &stale)
    }

    /// An LMDB environment opened on `directory`, its handle guarded (`CrashGuard`).
    private static func openHandle(directory: String, mapSize: Int, maxDatabases: UInt32, readOnly: Bool,
                                   writesInPlace: Bool) throws(StorageError) -> OpaquePointer {
        var handle: OpaquePointer?
        try StorageError.check(mdb_env_create(&handle), "creating the environment")
        guard let handle else { throw StorageError(code: MDB_PANIC, operation: "creating the environment") }
        evsync_mdb_guard_env(handle)
        do throws(StorageError) {
            try StorageError.check(mdb_env_set_mapsize(handle, mapSize), "setting the map size")
            try StorageError.check(mdb_env_set_maxdbs(handle, maxDatabases), "setting the database count")
            try StorageError.check(mdb_env_set_maxreaders(handle, 512), "setting the reader count")
            // The meta page of a commit is written without a flush of its own (LMDB still flushes the data pages
            // before writing it); `write(durable:)` flushes it after the commit, unless the write may be lost.
            var flags = UInt32(MDB_NOTLS) | UInt32(MDB_NOMETASYNC)
            if readOnly { flags |= UInt32(MDB_RDONLY) }
            // Without read-ahead: pages the kernel reads around each fault of the map count in the process's
            // memory too (importing 1M records peaked ~28 MiB higher with it), and an import touches pages at random.
            if writesInPlace && !readOnly { flags |= UInt32(MDB_WRITEMAP) | UInt32(MDB_NORDAHEAD) }
            try StorageError.check(mdb_env_open(handle, directory, flags, Self.fileMode), "opening \(directory)")
        } catch {
            mdb_env_close(handle)
            throw error
        }
        return handle
    }

    /// Makes a new store's `data.mdb` whole before its name appears: LMDB writes a new file's two meta pages
    /// without flushing them, and a power cut could leave a `data.mdb` that is empty or half written, which is
    /// damage to every later opening (`refuseEmptyDataFile`, `DataFileCheck`), though nothing was acknowledged.
    /// So LMDB makes the file in a directory of its own beside it, flushed, and it is linked in under its name
    /// (`link`, which fails rather than replace a `data.mdb` another process made meanwhile), then the directory
    /// is flushed. A cut before the link leaves no store; after it, an empty store.
    private static func createDataFileIfMissing(in directory: String, mapSize: Int) throws(StorageError) {
        let path = directory + "/data.mdb"
        guard access(path, F_OK) != 0, errno == ENOENT else { return }
        var template = Array("\(directory)/.data.mdb.creating-XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ $0.baseAddress.map(mkdtemp) ?? nil }) != nil else {
            // A directory this process may not write: LMDB's own opening says what is wrong.
            return
        }
        let scratch = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        defer {
            for name in ["data.mdb", "lock.mdb"] { unlink(scratch + "/" + name) }
            rmdir(scratch)
        }
        var handle: OpaquePointer?
        try StorageError.check(mdb_env_create(&handle), "creating the environment")
        guard let handle else { throw StorageError(code: MDB_PANIC, operation: "creating the environment") }
        defer { mdb_env_close(handle) }
        try StorageError.check(mdb_env_set_mapsize(handle, mapSize), "setting the map size")
        try StorageError.check(mdb_env_open(handle, scratch, UInt32(MDB_NOTLS), fileMode), "creating \(path)")
        try StorageError.check(mdb_env_sync(handle, 1), "flushing \(path)")
        // Another process making the store at the same moment may have linked its file first, and then removed
        // this one's scratch directory as a leftover: either way the store has its data.mdb.
        guard link(scratch + "/data.mdb", path) == 0 || access(path, F_OK) == 0 else {
            throw StorageError(code: errno, operation: "creating \(path)")
        }
        try DirectoryFlush.flush(directory)
        // What a process killed while making the store left: nobody makes it any more, since it has its data.mdb.
        removeLeftovers(in: directory, prefix: ".data.mdb.creating-")
    }

    /// Removes the scratch directories named `prefix…` in `directory`, with what they hold.
    package static func removeLeftovers(in directory: String, prefix: String) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        for name in names where name.hasPrefix(prefix) { try? FileManager.default.removeItem(atPath: directory + "/" + name) }
    }

    /// The writes awaited through `Store.write`'s async overload, committed together.
    package let groupCommit = GroupCommit()
    /// Told of every commit, here and (once watched) in other processes: what observation waits on.
    package let commits: CommitSignal
    /// The thread in a write transaction of this environment, if any: a second write on it would wait
    /// for itself for ever (LMDB's write lock is not recursive).
    private let writingThread = Atomic<UInt>(0)
    /// Whether this thread is inside a write transaction of this environment.
    package var isWritingOnThisThread: Bool { writingThread.load(ordering: .relaxed) == UInt(pthread_self()) }
    /// Whether a fault cut one of LMDB's write calls short in this process (see `commit`).
    private let writesRefused = Atomic<Bool>(false)
    /// Whether `close` ran: the handle is then gone.
    private let closed = Atomic<Bool>(false)

    deinit {
        close()
    }

    /// Closes the environment. `SharedEnvironments` calls it under its lock, so that
    /// no other environment on the same file opens while this one is closing.
    package func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        commits.stopWatching()
        // Whatever way an import ended (a failure before it began included), its extension of the file goes.
        if writesInPlace { try? trimFile() }
        mdb_env_close(handle)
    }

    /// Where `directory/data.mdb` stands now: the file this environment has
    /// open, another file (the store was replaced), or nothing (it was removed).
    /// An open environment keeps reading its file after it is unlinked, so
    /// only this tells a long reader that the store it reads is gone.
    package func dataFileState(in directory: String) -> DataFileState { dataFileStatus(in: directory).state }

    /// `dataFileState`, and the file's size when it is this environment's: one look tells both, and a
    /// write needs both (a syscall fewer per commit counts where a single write is a flush and a few syscalls).
    private func dataFileStatus(in directory: String) -> (state: DataFileState, size: Int?) {
        guard let dataFile else { return (.inPlace, nil) }
        guard let file = Self.identity(of: directory + "/data.mdb") else {
            return (errno == ENOENT || errno == ENOTDIR ? .removed : .inPlace, nil)
        }
        guard file.device == dataFile.device && file.inode == dataFile.inode else { return (.replaced, nil) }
        return (.inPlace, file.size)
    }

    /// The device, inode and size of `path`, or of the open file `descriptor` when `path` is empty, read without
    /// the file's times: on Linux 6.13 and later, a `stat` at every commit costs every commit two inode writes
    /// (see CFileStatus.h). Nil with `errno` set if the file cannot be looked at.
    package static func identity(of path: String, in descriptor: Int32 = AT_FDCWD) -> (device: UInt64, inode: UInt64, size: Int)? {
        var (device, inode, size): (UInt64, UInt64, UInt64) = (0, 0, 0)
        guard evsync_file_identity(descriptor, path, &device, &inode, &size) == 0 else { return nil }
        return (device, inode, Int(clamping: size))
    }

    package enum DataFileState {
        case inPlace, removed, replaced
    }

    /// `data.mdb` and `lock.mdb`: the owner's only (LMDB applies the umask on top, which can only take more away).
    package static let fileMode: UInt32 = 0o600

    /// Throws `MDB_CORRUPTED` if `directory` holds a data file of 0 bytes.
    /// LMDB takes an empty data file for a new store and writes a fresh, empty
    /// one into it: every event of a store whose file was emptied (a crash of
    /// the file system, a copy that failed) would be silently gone.
    ///
    /// A process creating a store holds LMDB's lock while it writes the first
    /// pages, so an empty file may also be one being created this instant. A
    /// read-only open waits for that lock and writes nothing (LMDB's attempt to
    /// set up the empty file fails on the read-only descriptor); after it, a
    /// file still empty is not being created by anybody.
    /// The probe's closing drops this process's `fcntl` locks on `lock.mdb`,
    /// which LMDB uses only to tell whether it is the first to open the store;
    /// it runs only on an empty file, which no other environment of this process can be using.
    private static func refuseEmptyDataFile(in directory: String) throws(StorageError) {
        let path = directory + "/data.mdb"
        func isEmpty() -> Bool {
            var status = stat()
            return stat(path, &status) == 0 && status.st_size == 0
        }
        guard isEmpty() else { return }
        var probe: OpaquePointer?
        if mdb_env_create(&probe) == MDB_SUCCESS, let probe {
            _ = mdb_env_open(probe, directory, UInt32(MDB_RDONLY | MDB_NOTLS), fileMode)
            mdb_env_close(probe)
        }
        guard isEmpty() else { return }
        throw StorageError(code: MDB_CORRUPTED, operation: "opening \(directory)", reason: "data.mdb is empty: it holds not even LMDB's header")
    }

    /// Writes a copy of the environment to `descriptor` (an empty file), as one read snapshot: writers
    /// in any process go on meanwhile. Compacted: free pages are left out and the pages renumbered.
    package func copyCompacted(to descriptor: Int32) throws(StorageError) {
        try StorageError.check(mdb_env_copyfd2(handle, descriptor, UInt32(MDB_CP_COMPACT)), "copying the store")
    }

    /// The size of the map in bytes: the most the data file can grow to.
    package var mapSize: Int {
        var info = MDB_envinfo()
        mdb_env_info(handle, &info)
        return info.me_mapsize
    }

    /// The number of the last page the store uses or holds free (pages run from 0).
    package var lastPage: Int {
        var info = MDB_envinfo()
        mdb_env_info(handle, &info)
        return info.me_last_pgno
    }

    /// The data file's descriptor.
    package var descriptor: Int32 {
        var descriptor: Int32 = -1
        _ = mdb_env_get_fd(handle, &descriptor)
        return descriptor
    }

    /// The size of a page in bytes.
    package var pageSize: Int {
        var stat = MDB_stat()
        mdb_env_stat(handle, &stat)
        return Int(stat.ms_psize)
    }

    /// Bytes of the data file that its last committed page ends at.
    package var usedFileBytes: Int {
        var info = MDB_envinfo()
        mdb_env_info(handle, &info)
        return (info.me_last_pgno + 1) * pageSize
    }

    /// Opens (or, in a write transaction, creates) a named database.
    package func openDatabase(_ name: String, flags: Int32 = 0, in transaction: Transaction) throws(StorageError) -> Database {
        var dbi: MDB_dbi = 0
        try StorageError.check(evsync_mdb_dbi_open(transaction.handle, name, UInt32(flags), &dbi), "opening database \(name)")
        return Database(dbi: dbi, name: name)
    }

    /// The database called `name`, or nil if there is none.
    package func existingDatabase(_ name: String, flags: Int32 = 0, in transaction: Transaction) throws(StorageError) -> Database? {
        do {
            return try openDatabase(name, flags: flags, in: transaction)
        } catch where error.code == MDBErrors.notFound {
            return nil
        }
    }

    /// Runs `body` in a read-only snapshot of the store.
    package func read<T>(_ body: (Transaction) throws -> T) throws -> T {
        let transaction = try Transaction(environment: handle, readOnly: true)
        defer { transaction.discard() }
        let result = try body(transaction)
        // Committing (not aborting) a read transaction keeps database handles it opened.
        try transaction.commit()
        return result
    }

    /// Runs `body` in the single write transaction: committed (and, if `durable`, on disk)
    /// when `body` returns, aborted (leaving the store exactly as it was) when
    /// it throws. A durable commit is flushed: a power cut must not take back what
    /// a user or the server was told is stored.
    ///
    /// The environment is opened with `MDB_NOMETASYNC`: LMDB's commit writes the transaction's pages, flushes
    /// them (`fdatasync`, or `msync` with `MDB_WRITEMAP`), and only then writes the meta page that points to
    /// them, unflushed. A durable write flushes it here (`flush`), after the write lock is released, so that
    /// the next writer need not wait for it. Without the flush a power cut may take back the last commits,
    /// whole and in order (the meta page is flushed with the next commit's pages, or by the kernel), and never
    /// leaves a meta page pointing to pages not on disk: LMDB's "integrity, not durability" (`MDB_NOMETASYNC`
    /// in lmdb.h), the guarantee of SQLite's `synchronous=NORMAL` in WAL.
    package func write<T>(durable: Bool = true, _ body: (Transaction) throws -> T) throws -> T {
        let result = try commit(body)
        if durable { try flush() }
        commits.notify()
        return result
    }

    /// Runs `body` in the write transaction and commits it, unflushed (see `write`); the caller flushes
    /// if the commit must be durable, then tells observers (`commits.notify`).
    package func commit<T>(_ body: (Transaction) throws -> T) throws -> T {
        let thread = UInt(pthread_self())
        guard !isWritingOnThisThread else {
            throw StorageError.misuse("a store write was started inside another on the same thread: use the transaction at hand")
        }
        if writesRefused.load(ordering: .relaxed) {
            throw StorageError(code: EVSYNC_MDB_FAULT, operation: "writing to \(directory)", reason: Self.refusedReason)
        }
        let faultsBefore = evsync_mdb_guard_thread_faults()
        // A fault inside one of LMDB's write calls jumped out of it (`CrashGuard`): what LMDB holds in memory for
        // this environment is unknown from then on, so this process writes no more to it.
        defer { if evsync_mdb_guard_thread_faults() != faultsBefore { writesRefused.store(true, ordering: .relaxed) } }
        let transaction = try Transaction(environment: handle, readOnly: false)
        // A shrink (`Store.shrinkDataFile`) swaps in a new file only when no process has the store open; a
        // process that opened it before and held it since would still see the old file here.
        let file = dataFileStatus(in: directory)
        guard file.state != .replaced else {
            transaction.discard()
            throw StorageError.misuse("the data file of \(directory) was replaced since this process opened it (a shrink, or a restore): open the store again")
        }
        writingThread.store(thread, ordering: .relaxed)
        defer { writingThread.store(0, ordering: .relaxed) }
        let result: T
        do {
            try fitFileForWriting(size: file.size)
            result = try body(transaction)
            try transaction.commit()
        } catch {
            transaction.discard()
            throw error
        }
        // Pages written through the map (`MDB_WRITEMAP`) change no file time, which is what
        // other processes' observers watch (`CommitSignal`): mark the commit on the file.
        if writesInPlace { futimens(descriptor, nil) }
        return result
    }

    /// Makes every commit so far durable: flushes the data file, and with it the meta page of the last
    /// commit (`mdb_env_sync`). If it fails, what was committed is visible but its durability unknown,
    /// and the write reports the failure, as fsync's caller must.
    package func flush() throws(StorageError) {
        try StorageError.check(mdb_env_sync(handle, 1), "flushing the commit to disk")
    }

    private static let refusedReason = "an earlier write of this process met a page LMDB cannot follow, and LMDB was stopped "
        + "inside that write: this process writes no more to the store (open it again in a new process; `evsync log verify` checks it)"
}

extension Environment {
    /// Runs `body` in a write transaction that is then aborted, whatever
    /// `body` does: for scratch work (a scratch environment's replayed views)
    /// that is read and dropped, never flushed.
    package func writeAndDiscard<T>(_ body: (Transaction) throws -> T) throws -> T {
        let transaction = try Transaction(environment: handle, readOnly: false)
        defer { transaction.discard() }
        return try body(transaction)
    }

    /// The names of the environment's named databases: the keys of LMDB's main database.
    package func databaseNames(in transaction: Transaction) throws -> [String] {
        var dbi: MDB_dbi = 0
        try StorageError.check(mdb_dbi_open(transaction.handle, nil, 0, &dbi), "opening the main database")
        let cursor = try transaction.cursor(Database(dbi: dbi, name: "(main)"))
        var names: [String] = []
        var entry = try cursor.first()
        while let current = entry {
            names.append(String(decoding: current.key, as: UTF8.self))
            entry = try cursor.next()
        }
        return names
    }
}

/// A named database inside an environment.
package struct Database: Sendable {
    let dbi: MDB_dbi
    package let name: String
}
