import Foundation
import Synchronization

/// Giving a compacted store's freed pages back to the disk (`Store.shrinkDataFile`): LMDB reuses free pages but never shortens its
/// file, so the file is rewritten compactly, each database in key order into full pages
/// (`Environment.copyRepacked`), and swapped in.
///
/// Everything is done through LMDB's API: the new file is an environment of its own that LMDB writes, and
/// nothing but liblmdb writes `data.mdb` or `lock.mdb`. The swap is safe only when no process has the store
/// open: one that had mapped the old file would go on reading it, and `lock.mdb` holds the old file's commit
/// number, which LMDB resets only when it opens the store with nobody else there. So:
/// 1. The copy is made from a read snapshot of the store, while other processes go on writing.
/// 2. This process closes the store, then takes the lock on `lock.mdb`'s first byte exclusively: LMDB holds
///    it shared in every process that has the store open, and waits for it as it opens one. Failing that,
///    another process has the store open, and nothing changes.
/// 3. Holding it, and only if the data file's newest commit is still the snapshot's, the copy is renamed over
///    `data.mdb` and the directory flushed.
/// 4. Still holding it, this process opens the store again: LMDB, finding itself alone, sets `lock.mdb` up
///    anew from the new file's meta pages (`mdb_env_setup_locks`, `mdb_env_share_locks` in mdb.c), and only
///    then lets the processes that waited in. Whoever opens the store next sees the new file, whole.
///
/// A crash or a power cut leaves the old file or the new, each a whole store flushed by LMDB, and perhaps a
/// leftover copy that the next shrink removes. Should a process still hold the old file, it cannot write to
/// it: every write checks first that `data.mdb` is still the file its environment has open.
package enum DataFileShrink {
    package struct Outcome {
        /// The data file's size before and after.
        package var bytesBefore: UInt64
        package var bytesAfter: UInt64
        /// A process that has the store open, so that the file was left as it was (-1: one that is gone, or
        /// one that committed while the copy was being made); nil when it was rewritten.
        package var heldOpenBy: Int32?
    }

    /// Rewrites the data file of the store in `directory` compactly, unless another process has it open.
    /// - Parameters:
    ///   - withStoreOpen: opens the store as its `Store` does, runs the body with its environment, and closes it.
    ///   - reopen: opens the store once more and closes it (step 4).
    package static func run(in directory: String, withStoreOpen: ((Environment) throws -> Void) throws -> Void,
                            reopen: () throws -> Void) throws -> Outcome {
        let dataFile = directory + "/data.mdb"
        removeShrinkLeftovers(in: directory)
        let before = fileSize(dataFile)
        func left(by holder: Int32) -> Outcome { Outcome(bytesBefore: before, bytesAfter: before, heldOpenBy: holder) }
        // Opened before the store and closed after every opening of it here: closing a descriptor of `lock.mdb`
        // drops every `fcntl` lock this process holds on it, LMDB's included.
        let lockFile = open(directory + "/lock.mdb", O_RDWR | O_CLOEXEC)
        guard lockFile >= 0 else { throw StorageError(code: errno, operation: "opening \(directory)/lock.mdb") }
        defer { close(lockFile) }
        var copy: (directory: String, snapshot: UInt64)?
        var holder: Int32?
        try withStoreOpen { environment in
            holder = otherProcessHoldingOpen(lockFile)
            if holder == nil { copy = try writeCompactCopy(of: environment, in: directory) }
        }
        guard let copy else { return left(by: holder ?? -1) }
        defer { removeCopy(copy.directory) }
        // The store is closed in this process now.
        guard holdOffOpeners(lockFile) else { return left(by: otherProcessHoldingOpen(lockFile) ?? -1) }
        // Nobody has the store open now, and nobody can open it: a commit made since the snapshot is in the file.
        guard DataFile.newestCommit(of: dataFile) == copy.snapshot else {
            releaseOpeners(lockFile)
            return left(by: -1)
        }
        do {
            guard rename(copy.directory + "/data.mdb", dataFile) == 0 else {
                throw StorageError(code: errno, operation: "renaming \(copy.directory)/data.mdb to \(dataFile)")
            }
            try DirectoryFlush.flush(directory)
        } catch {
            releaseOpeners(lockFile)
            throw error
        }
        // LMDB sets `lock.mdb` up for the new file as it opens the store alone, then shares the lock.
        try reopen()
        return Outcome(bytesBefore: before, bytesAfter: fileSize(dataFile), heldOpenBy: nil)
    }

    /// The pid of another process that has the store open: LMDB keeps a shared lock on the first byte of
    /// `lock.mdb` while an environment is open, and locks of this process never conflict with its own probe.
    private static func otherProcessHoldingOpen(_ lockFile: Int32) -> Int32? {
        var probe = firstByte(F_WRLCK)
        guard fcntl(lockFile, F_GETLK, &probe) == 0 else { return -1 }
        return probe.l_type == Int16(F_UNLCK) ? nil : probe.l_pid
    }

    /// Takes the lock on the first byte of `lock.mdb` exclusively, if no other process has the store open; false
    /// if one has. Until it is let go, a process opening the store waits: LMDB takes that lock shared before it
    /// opens `data.mdb`, so nobody can open the file that is about to be replaced.
    private static func holdOffOpeners(_ lockFile: Int32) -> Bool {
        var lock = firstByte(F_WRLCK)
        return fcntl(lockFile, F_SETLK, &lock) == 0
    }

    private static func releaseOpeners(_ lockFile: Int32) {
        var lock = firstByte(F_UNLCK)
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

    /// Writes a compact copy of a snapshot of `environment` into a new environment beside the data file, flushed by
    /// LMDB; returns its directory and the number of the last commit the snapshot holds.
    private static func writeCompactCopy(of environment: Environment, in directory: String) throws -> (directory: String, snapshot: UInt64) {
        var template = Array("\(directory)/\(shrinkPrefix)XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { $0.baseAddress.map(mkdtemp) ?? nil }
        guard created != nil else { throw StorageError(code: errno, operation: "creating a directory in \(directory)") }
        let temporary = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        do {
            let copy = try Environment(directory: temporary, mapSize: environment.mapSize, maxDatabases: 16)
            defer { copy.close() }
            return (temporary, UInt64(try environment.copyRepacked(into: copy)))
        } catch {
            removeCopy(temporary)
            throw error
        }
    }

    /// Removes a copy's environment directory, with what is left in it.
    private static func removeCopy(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
    }

    private static let shrinkPrefix = ".data.mdb.shrinking-"

    /// Removes what a shrink cut off by a crash left behind: a copy's directory (with the scratch directory of its
    /// data file's making, `Environment.createDataFileIfMissing`), or a file from an evsync before copies were
    /// environments of their own.
    private static func removeShrinkLeftovers(in directory: String) {
        Environment.removeLeftovers(in: directory, prefix: shrinkPrefix)
    }

    private static func fileSize(_ path: String) -> UInt64 {
        var status = stat()
        return stat(path, &status) == 0 ? UInt64(status.st_size) : 0
    }
}
