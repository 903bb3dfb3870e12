import Foundation
// `struct stat`: with MemberImportVisibility, its members count as declared by whichever of these modules the
// compiler met it in first, which differs between builds (as in Store+Import.swift).
#if canImport(Glibc)
import Glibc
#endif
#if canImport(CDispatch)
import CDispatch
#endif

/// Giving a compacted store's freed pages back to the disk: LMDB reuses free pages but never shortens its
/// file, so the file is rewritten compactly, each database in key order into full pages
/// (`Environment.copyRepacked`), and swapped in.
///
/// The swap is safe only when nobody else has the file open: a process that had mapped the old file would go
/// on reading it, and a write of its would land in a file no longer the store's. So it happens only when no
/// other process has the store open (each holds LMDB's shared lock on the first byte of `lock.mdb`, which
/// `F_GETLK` sees) and no other `Store` of this process is open on it. The copy is of a read snapshot, made
/// while other processes go on writing; the swap runs while this process holds LMDB's write lock and that
/// byte's lock exclusively (so that nobody opens the store in that instant), and only if nothing was
/// committed since the snapshot. Should a process still hold the old file, it cannot write to it: every
/// write checks first that `data.mdb` is still the file its environment has open.
///
/// The new file is written beside the old (an environment in `.data.mdb.shrinking-XXXXXX/`), flushed, then
/// renamed over it and the directory flushed: a crash or a power cut leaves the old file or the new, each a
/// whole store, and perhaps a leftover the next shrink removes.
extension Store {
    /// What `shrinkDataFile(in:)` did.
    public struct Shrink: Sendable, Equatable, Codable {
        /// The data file's size before and after.
        public var bytesBefore: UInt64
        public var bytesAfter: UInt64
        /// A process that has the store open, so that the file was left as it was (-1: one that is gone, or
        /// one that committed while the copy was being made); nil when it was rewritten.
        public var heldOpenBy: Int32?

        /// Whether the file was rewritten.
        public var shrunk: Bool { heldOpenBy == nil }
    }

    /// Rewrites the data file of the store in `directory` compactly, giving its free pages back to the disk,
    /// unless another process has the store open (then `heldOpenBy` names it and nothing changes; try again later).
    /// - Throws: `.failure` when a `Store` of this process is open on `directory` (close it first); as
    ///   `init(directory:configuration:)` when the store cannot be opened; `.diskFull` when the copy does not fit.
    public static func shrinkDataFile(in directory: String, configuration: Configuration = Configuration()) throws(StoreError) -> Shrink {
        guard SharedEnvironments.users(of: directory) == 0 else {
            throw StoreError(.failure, "\(directory) is open in this process: close its stores before shrinking its data file")
        }
        let dataFile = directory + "/data.mdb"
        removeShrinkLeftovers(in: directory)
        // Opened before the store and closed after it: closing a descriptor of `lock.mdb` drops every `fcntl`
        // lock this process holds on it, LMDB's included, and LMDB's must last as long as its environment.
        let lockFile = open(directory + "/lock.mdb", O_RDWR | O_CLOEXEC)
        let lockFileError = lockFile < 0 ? errno : 0  // read now: opening the store below sets errno again
        defer { if lockFile >= 0 { close(lockFile) } }
        let before = fileSize(dataFile)
        var configuration = configuration
        configuration.create = false
        let heldOpenBy = try swapInCompactCopy(in: directory, configuration: configuration, lockFile: lockFile, lockFileError: lockFileError)
        return Shrink(bytesBefore: before, bytesAfter: fileSize(dataFile), heldOpenBy: heldOpenBy)
    }

    /// The pid of another process that has the store open: LMDB keeps a shared lock on the first byte of
    /// `lock.mdb` while an environment is open, and locks of this process never conflict with its own probe.
    private static func otherProcessHoldingOpen(_ lockFile: Int32) -> Int32? {
        var probe = firstByte(F_WRLCK)
        guard fcntl(lockFile, F_GETLK, &probe) == 0 else { return -1 }
        return probe.l_type == Int16(F_UNLCK) ? nil : probe.l_pid
    }

    /// Turns this process's shared lock on the first byte of `lock.mdb` (its environment's) into an exclusive
    /// one, if no other process has the store open; false if one has. Until `releaseOpeners` turns it back, a
    /// process opening the store waits: LMDB takes that shared lock before it opens `data.mdb`, so nobody can
    /// open the file that is about to be replaced.
    private static func holdOffOpeners(_ lockFile: Int32) -> Bool {
        var lock = firstByte(F_WRLCK)
        return fcntl(lockFile, F_SETLK, &lock) == 0
    }

    private static func releaseOpeners(_ lockFile: Int32) {
        var lock = firstByte(F_RDLCK)
        _ = fcntl(lockFile, F_SETLK, &lock)
    }

    private static func firstByte(_ type: Int32) -> flock {
        var lock = flock()
        lock.l_type = Int16(type)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = 0
        lock.l_len = 1
        return lock
    }

    /// Opens the store, writes a compact copy of a snapshot of it beside the data file, and swaps it in unless
    /// another process has the store open or something was committed since the snapshot (then returns that
    /// process, or -1 when it is gone); the store closes on return, before the caller closes `lockFile`.
    ///
    /// The copy is made without the write lock, so that writers in other processes go on meanwhile; the lock
    /// is held only to see that nothing changed, for the rename and the directory's flush.
    private static func swapInCompactCopy(in directory: String, configuration: Configuration, lockFile: Int32, lockFileError: Int32) throws(StoreError) -> Int32? {
        let store = try Store(directory: directory, configuration: configuration)
        do {
            guard lockFile >= 0 else { throw StorageError(code: lockFileError, operation: "opening \(directory)/lock.mdb") }
            if let other = otherProcessHoldingOpen(lockFile) { return other }
            let copy = try writeCompactCopy(of: store.environment, in: directory)
            defer { removeCopy(copy.directory) }
            return try store.environment.writeAndDiscard { transaction throws -> Int32? in
                guard holdOffOpeners(lockFile) else { return otherProcessHoldingOpen(lockFile) ?? -1 }
                defer { releaseOpeners(lockFile) }
                // A write transaction's id is one past the last commit's.
                guard transaction.id == copy.snapshot + 1 else { return -1 }
                guard rename(copy.directory + "/data.mdb", directory + "/data.mdb") == 0 else {
                    throw StorageError(code: errno, operation: "renaming \(copy.directory)/data.mdb to \(directory)/data.mdb")
                }
                try flush(directory: directory)
                return nil
            }
        } catch {
            throw store.wrap(error)
        }
    }

    /// Writes a compact copy of a snapshot of `environment` into a new environment beside the data file, flushed;
    /// returns its directory and the id of the snapshot's transaction.
    private static func writeCompactCopy(of environment: Environment, in directory: String) throws -> (directory: String, snapshot: Int) {
        var template = Array("\(directory)/\(shrinkPrefix)XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { $0.baseAddress.map(mkdtemp) ?? nil }
        guard created != nil else { throw StorageError(code: errno, operation: "creating a directory in \(directory)") }
        let temporary = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        do {
            let snapshot = try {
                let copy = try Environment(directory: temporary, mapSize: environment.mapSize, maxDatabases: 16)
                defer { copy.close() }
                return try environment.copyRepacked(into: copy)
            }()
            try MetaPages.stamp(temporary + "/data.mdb", asCommit: UInt64(snapshot))
            return (temporary, snapshot)
        } catch {
            removeCopy(temporary)
            throw error
        }
    }

    /// Removes a copy's environment directory (what is left of it after the rename, or all of it).
    private static func removeCopy(_ path: String) {
        for file in ["data.mdb", "lock.mdb"] { unlink(path + "/" + file) }
        rmdir(path)
    }

    private static let shrinkPrefix = ".data.mdb.shrinking-"

    /// Removes copies a shrink cut off by a crash left behind.
    private static func removeShrinkLeftovers(in directory: String) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        // A file from evsync before the copies were environments of their own, or such a directory.
        for name in names where name.hasPrefix(shrinkPrefix) {
            if unlink(directory + "/" + name) != 0 { removeCopy(directory + "/" + name) }
        }
    }

    private static func fileSize(_ path: String) -> UInt64 {
        var status = stat()
        return stat(path, &status) == 0 ? UInt64(status.st_size) : 0
    }
}
