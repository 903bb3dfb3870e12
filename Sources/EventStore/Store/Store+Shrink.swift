import Foundation
import Synchronization

/// Giving a compacted store's freed pages back to the disk: LMDB reuses free pages but never shortens its
/// file, so the file is rewritten compactly (`mdb_env_copyfd2` with `MDB_CP_COMPACT`) and swapped in.
///
/// The swap is safe only when nobody else has the file open: a process that had mapped the old file would go
/// on reading it, and a write of its would land in a file no longer the store's. So it happens only when no
/// other process has the store open (each holds LMDB's shared lock on the first byte of `lock.mdb`, which
/// `F_GETLK` sees) and no other `Store` of this process is open on it, and the copy and the swap run while
/// this process holds LMDB's write lock. A process that opens the store in that instant cannot write to the
/// old file: every write checks first that `data.mdb` is still the file its environment has open.
///
/// The new file is written beside the old (`.data.mdb.shrinking-XXXXXX`), flushed, then renamed over it and
/// the directory flushed: a crash or a power cut leaves the old file or the new, each a whole store, and
/// perhaps a leftover the next shrink removes.
extension Store {
    /// What `shrinkDataFile(in:)` did.
    public struct Shrink: Sendable, Equatable, Codable {
        /// The data file's size before and after.
        public var bytesBefore: UInt64
        public var bytesAfter: UInt64
        /// A process that has the store open, so that the file was left as it was; nil when it was rewritten.
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
        var probe = flock()
        probe.l_type = Int16(F_WRLCK)
        probe.l_whence = Int16(SEEK_SET)
        probe.l_start = 0
        probe.l_len = 1
        guard fcntl(lockFile, F_GETLK, &probe) == 0 else { return -1 }
        return probe.l_type == Int16(F_UNLCK) ? nil : probe.l_pid
    }

    /// Opens the store and, holding its write lock, swaps in a compact copy unless another process has it open
    /// (then returns that process); the store closes on return, before the caller closes `lockFile`.
    private static func swapInCompactCopy(in directory: String, configuration: Configuration, lockFile: Int32, lockFileError: Int32) throws(StoreError) -> Int32? {
        let store = try Store(directory: directory, configuration: configuration)
        do {
            return try store.environment.writeAndDiscard { _ throws -> Int32? in
                guard lockFile >= 0 else { throw StorageError(code: lockFileError, operation: "opening \(directory)/lock.mdb") }
                if let other = otherProcessHoldingOpen(lockFile) { return other }
                try swapInCompactCopy(of: store.environment, in: directory)
                return nil
            }
        } catch {
            throw store.wrap(error)
        }
    }

    /// Writes the compact copy beside the data file, flushed, and renames it over the data file.
    private static func swapInCompactCopy(of environment: Environment, in directory: String) throws {
        var template = Array("\(directory)/\(shrinkPrefix)XXXXXX".utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { $0.baseAddress.map(mkstemp) ?? -1 }
        guard descriptor >= 0 else { throw StorageError(code: errno, operation: "creating a file in \(directory)") }
        let temporary = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var renamed = false
        defer {
            close(descriptor)
            if !renamed { unlink(temporary) }
        }
        _ = fchmod(descriptor, Environment.fileMode)
        // LMDB allows one transaction per thread, and this one holds the write transaction: the copy reads
        // its snapshot on a thread of its own.
        try onThreadOfItsOwn { () throws(StorageError) in try environment.copyCompacted(to: descriptor) }
        guard fsync(descriptor) == 0 else { throw StorageError(code: errno, operation: "flushing \(temporary)") }
        guard rename(temporary, directory + "/data.mdb") == 0 else {
            throw StorageError(code: errno, operation: "renaming \(temporary) to \(directory)/data.mdb")
        }
        renamed = true
        try flush(directory: directory)
    }

    private static let shrinkPrefix = ".data.mdb.shrinking-"

    /// Removes copies a shrink cut off by a crash left behind.
    private static func removeShrinkLeftovers(in directory: String) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        for name in names where name.hasPrefix(shrinkPrefix) { unlink(directory + "/" + name) }
    }

    private static func fileSize(_ path: String) -> UInt64 {
        var status = stat()
        return stat(path, &status) == 0 ? UInt64(status.st_size) : 0
    }

    /// Runs `body` on a new thread and waits for it.
    private static func onThreadOfItsOwn(_ body: @escaping @Sendable () throws(StorageError) -> Void) throws(StorageError) {
        let outcome = Mutex<StorageError?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            do throws(StorageError) { try body() } catch { outcome.withLock { $0 = error } }
            done.signal()
        }
        thread.start()
        done.wait()
        if let error = outcome.withLock({ $0 }) { throw error }
    }
}
