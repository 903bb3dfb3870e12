import CLMDB
import Glibc

/// The migration of a store written by evsync's former durability journal (store layouts 6 and 7): the one
/// place that still knows the file `journal`, run once as such a store is first opened for writing.
///
/// That design opened LMDB with `MDB_NOSYNC` and made commits durable by entries and checkpoints of its own in
/// `journal`; after a power cut it put the last checkpoint's meta page and page images back and did the entries
/// after it again. It is gone (docs/decisions/durability-is-lmdbs.md): durability is LMDB's ordered flushes.
/// What a store it wrote acknowledged must survive the move:
/// - **Left by a clean exit, or by a process that was killed** (same boot, same device as the last
///   checkpoint): the page cache holds every commit, so the data file is flushed as it is, then the journal
///   is removed.
/// - **Cut off** (the checkpoint was made in another boot or on another device): the data file may hold a
///   meta page whose pages never reached the disk. The restore the former design did is done on a copy:
///   the checkpoint's page images and meta page are written into `.data.mdb.restoring-*/data.mdb`, LMDB
///   opens the copy and does the journal's entries again in one commit, and the flushed copy is renamed
///   over `data.mdb`. So nothing but liblmdb writes the store's own `data.mdb` even here.
///
/// Each step leaves a state the next opening finishes: the journal is removed only once the data file
/// that holds everything it covered is on disk, and a data file renamed in has another inode than the
/// checkpoint names, so it is never restored twice. An evsync of the former design that still has the store
/// open would go on writing with the journal: the migration refuses to run beside it.
package enum LegacyJournal {
    package static let fileName = "journal"

    /// Migrates the store in `directory` if it has a journal; returns at once if not.
    /// - Parameters: mapSize, maxDatabases: for LMDB's opening of the copy a restore replays into.
    package static func migrate(_ directory: String, mapSize: Int, maxDatabases: UInt32) throws(StorageError) {
        let path = directory + "/" + fileName
        let journal = open(path, O_RDWR | O_CLOEXEC)
        guard journal >= 0 else {
            guard errno == ENOENT else { throw StorageError(code: errno, operation: "opening \(path)") }
            return
        }
        defer { close(journal) }
        // The lock every evsync of the former design took while it opened the store: openers wait for the migration.
        guard flock(journal, LOCK_EX) == 0 else { throw StorageError(code: errno, operation: "locking \(path)") }
        // Another process may have migrated while this one waited: the name then points elsewhere, or nowhere.
        var opened = stat(), named = stat()
        guard fstat(journal, &opened) == 0, stat(path, &named) == 0, opened.st_ino == named.st_ino else { return }
        if let holder = processHoldingOpen(directory) {
            throw StorageError(code: EBUSY, operation: "opening \(directory)",
                               reason: "an evsync older than this one (pid \(holder)) has the store open and makes its writes durable with "
                                   + "its journal: close it, then open the store again")
        }
        let dataPath = directory + "/data.mdb"
        if let checkpoint = cutOff(read(journal), dataPath: dataPath) {
            try restore(from: checkpoint, journal: read(journal), directory: directory, mapSize: mapSize, maxDatabases: maxDatabases)
        } else {
            try flushFile(dataPath)
        }
        guard unlink(path) == 0 else { throw StorageError(code: errno, operation: "removing \(path)") }
        try DirectoryFlush.flush(directory)
    }

    /// Throws if the store in `directory` must be restored before it can be read, which a store opened
    /// read-only cannot do: read as it is, its newest commit may point to pages that never reached the disk.
    package static func refuseIfCutOff(_ directory: String) throws(StorageError) {
        let journal = open(directory + "/" + fileName, O_RDONLY | O_CLOEXEC)
        guard journal >= 0 else { return }
        defer { close(journal) }
        guard cutOff(read(journal), dataPath: directory + "/data.mdb") != nil else { return }
        throw StorageError(code: EROFS, operation: "opening \(directory)/data.mdb", reason: cutOffReason)
    }

    package static let cutOffReason = "lost power or its disk since its last writes, and the journal of the evsync that wrote it must "
        + "restore it before it can be read, which takes a write"

    // MARK: The journal's format (the former `Journal`)

    /// Checkpoint slots at 0 and 4096, entries from 8192.
    private static let slotSize = 4096, entriesStart = 2 * 4096, capacity = 4 << 20, entryHeader = 32
    private static let checkpointMagics = [Array("EVSJRNL2".utf8), Array("EVSJRNL1".utf8)]
    private static let entryMagic: UInt32 = 0x4A45_5645
    /// The most a transaction's recorded changes took.
    private static let changesLimit = 1 << 20

    /// A checkpoint: magic 8, number 8, transaction 8, owner 8, device 8, inode 8, boot 40, zeros 8, the start of
    /// the commit's meta page 256, CRC-32C 4; all little-endian.
    package struct Checkpoint {
        var number: UInt64
        var transaction: UInt64
        var device: UInt64
        var inode: UInt64
        var boot: [UInt8]
        var meta: [UInt8]

        static let size = 96 + 256 + 4

        init?(_ bytes: ArraySlice<UInt8>) {
            let bytes = Array(bytes)
            guard bytes.count == Self.size, LegacyJournal.checkpointMagics.contains(Array(bytes[0..<8])),
                  bytes.withUnsafeBytes({ CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<Self.size - 4])) }) == bytes.u32(Self.size - 4)
            else { return nil }
            (number, transaction, device, inode) = (bytes.u64(8), bytes.u64(16), bytes.u64(32), bytes.u64(40))
            boot = Array(bytes[48..<88])
            meta = Array(bytes[96..<352])
        }
    }

    /// The whole journal file (at most its two slots and its entry area).
    private static func read(_ descriptor: Int32) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while bytes.count < entriesStart + capacity {
            let count = chunk.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, off_t(bytes.count)) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += chunk[0..<count]
        }
        return bytes
    }

    /// The newer of the two checkpoints.
    private static func latestCheckpoint(_ journal: [UInt8]) -> Checkpoint? {
        [0, slotSize].compactMap { start in
            journal.count >= start + Checkpoint.size ? Checkpoint(journal[start..<start + Checkpoint.size]) : nil
        }.max { $0.number < $1.number }
    }

    /// This boot's id; nil where the system does not say (the former design then kept no journal).
    private static let bootID: [UInt8]? = {
        let descriptor = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 40)
        let count = bytes.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, 40) }
        return count >= 32 ? bytes : nil
    }()

    /// The last checkpoint, if the data file may have lost writes since it was made (in another boot, or on
    /// another device) and is the file it was made of; nil if the file is as the last commit left it.
    private static func cutOff(_ journal: [UInt8], dataPath: String) -> Checkpoint? {
        guard let latest = latestCheckpoint(journal), let boot = bootID else { return nil }
        var status = stat()
        guard stat(dataPath, &status) == 0, UInt64(status.st_ino) == latest.inode else { return nil }
        if latest.boot == boot && latest.device == UInt64(status.st_dev) { return nil }
        let data = open(dataPath, O_RDONLY | O_CLOEXEC)
        guard data >= 0 else { return nil }
        defer { close(data) }
        // Commits only raise the meta pages' ids: below the checkpoint's, the file is not the one the journal followed.
        let file = DataFile(descriptor: data)
        guard let meta = file.meta(), let first = file.read(144, 8), let second = file.read(UInt64(meta.pageSize) + 144, 8),
              min(first.u64(0), second.u64(0)) + 1 >= latest.transaction, max(first.u64(0), second.u64(0)) >= latest.transaction
        else { return nil }
        return latest
    }

    /// The changes of the entries after `checkpoint`, one commit after another, and the page images they hold,
    /// up to the first entry that is not whole.
    private static func entries(_ journal: [UInt8], after checkpoint: Checkpoint, pageSize: Int)
        -> (changes: [ArraySlice<UInt8>], images: [(page: UInt64, bytes: ArraySlice<UInt8>)]) {
        var changes: [ArraySlice<UInt8>] = [], images: [(page: UInt64, bytes: ArraySlice<UInt8>)] = []
        var offset = entriesStart
        var expected = checkpoint.transaction + 1
        while offset + entryHeader <= journal.count, case let header = Array(journal[offset..<offset + entryHeader]),
              header.u32(0) == entryMagic, header.u64(8) == checkpoint.number, header.u64(16) == expected,
              case let count = Int(header.u32(24)), count <= changesLimit,
              case let imageCount = Int(header.u32(28)), imageCount <= capacity / pageSize,
              case let size = count + imageCount * (8 + pageSize), offset + entryHeader + size <= journal.count,
              case let body = journal[offset + entryHeader ..< offset + entryHeader + size],
              journal[offset + 8 ..< offset + entryHeader + size].withUnsafeBytes({ CRC32C.checksum($0) }) == header.u32(4) {
            changes.append(body.prefix(count))
            for start in stride(from: body.startIndex + count, to: body.endIndex, by: 8 + pageSize) {
                images.append((Array(body[start..<start + 8]).u64(0), body[start + 8 ..< start + 8 + pageSize]))
            }
            offset += entryHeader + size
            expected += 1
        }
        return (changes, images)
    }

    // MARK: Restoring, on a copy

    private static let restoringPrefix = ".data.mdb.restoring-"

    /// Restores the checkpoint into a copy of the data file, does the entries after it again through LMDB, and
    /// renames the flushed copy over `data.mdb`.
    private static func restore(from checkpoint: Checkpoint, journal: [UInt8], directory: String, mapSize: Int,
                                maxDatabases: UInt32) throws(StorageError) {
        let pageSize = Int(checkpoint.meta.u32(40))
        let dataPath = directory + "/data.mdb"
        guard pageSize >= 512, pageSize.nonzeroBitCount == 1, MemoryLayout<Int>.size == 8, 1.littleEndian == 1 else {
            throw StorageError(code: MDB_CORRUPTED, operation: "restoring \(dataPath)", reason: "the journal's checkpoint holds no meta page this machine reads")
        }
        let (changes, images) = entries(journal, after: checkpoint, pageSize: pageSize)
        let copyDirectory = try makeDirectory(directory + "/" + restoringPrefix)
        defer {
            for name in ["data.mdb", "lock.mdb"] { unlink(copyDirectory + "/" + name) }
            rmdir(copyDirectory)
        }
        let copyPath = copyDirectory + "/data.mdb"
        try copyFile(dataPath, to: copyPath) { copy throws(StorageError) in
            // The first image of a page is the checkpoint's (a later one is of a page reused since).
            var restored = Set<UInt64>()
            for image in images where restored.insert(image.page).inserted {
                try writeAll(image.bytes, to: copy, at: off_t(image.page) * off_t(pageSize), path: copyPath)
            }
            // Both meta pages become the checkpoint's: page t % 2 as commit t, the other as t - 1.
            for index in 0..<2 {
                var page = checkpoint.meta
                let commit = checkpoint.transaction
                let id = commit == 0 || UInt64(index) == commit % 2 ? commit : commit - 1
                page.withUnsafeMutableBytes { bytes in
                    bytes.storeBytes(of: UInt64(index), toByteOffset: 0, as: UInt64.self)
                    bytes.storeBytes(of: id, toByteOffset: 144, as: UInt64.self)
                }
                try writeAll(page[...], to: copy, at: off_t(index * pageSize), path: copyPath)
            }
        }
        // The commits after the checkpoint, done again by LMDB in the copy, in one durable commit.
        do {
            let environment = try Environment(directory: copyDirectory, mapSize: mapSize, maxDatabases: maxDatabases)
            defer { environment.close() }
            try environment.write { transaction in
                for entry in changes { try entry.withUnsafeBytes { try replay($0, in: transaction, of: environment) } }
            }
        } catch {
            throw error as? StorageError ?? StorageError(code: MDB_CORRUPTED, operation: "restoring \(dataPath)")
        }
        guard rename(copyPath, dataPath) == 0 else { throw StorageError(code: errno, operation: "renaming \(copyPath) to \(dataPath)") }
        try DirectoryFlush.flush(directory)
    }

    /// Does the changes of one entry again: each a kind (1 put, 2 delete a key, 3 delete one value), the
    /// database's name (length 1 byte), the key and, for 1 and 3, the value (each length 4 bytes, little-endian).
    private static func replay(_ bytes: UnsafeRawBufferPointer, in transaction: Transaction, of environment: Environment) throws {
        let damaged = StorageError(code: MDBErrors.corrupted, operation: "restoring from the journal",
                                   reason: "a journal entry does not hold changes evsync wrote")
        var offset = 0
        func take(_ count: Int) throws(StorageError) -> UnsafeRawBufferPointer {
            guard count >= 0, count <= bytes.count - offset else { throw damaged }
            defer { offset += count }
            return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count])
        }
        func sized() throws(StorageError) -> UnsafeRawBufferPointer {
            try take(Int(take(4).loadUnaligned(as: UInt32.self).littleEndian))
        }
        var databases: [String: Database] = [:]
        while offset < bytes.count {
            let kind = try take(1)[0]
            let name = String(decoding: try take(Int(take(1)[0])), as: UTF8.self)
            let key = try sized()
            let database = try databases[name] ?? environment.openDatabase(name, in: transaction)
            databases[name] = database
            switch kind {
            case 1: try transaction.put(key, try sized(), in: database)
            case 2: try transaction.delete(Array(key), in: database)
            case 3: try transaction.delete(key, value: try sized(), in: database)
            default: throw damaged
            }
        }
    }

    // MARK: Files

    /// A process other than this one with the store open: LMDB holds a shared lock on `lock.mdb`'s first byte
    /// while an environment is open (this process's own locks never conflict with its probe).
    private static func processHoldingOpen(_ directory: String) -> Int32? {
        let lockFile = open(directory + "/lock.mdb", O_RDONLY | O_CLOEXEC)
        guard lockFile >= 0 else { return nil }
        // Closing a descriptor of `lock.mdb` drops this process's locks on it: none are held yet (LMDB opens after).
        defer { close(lockFile) }
        var probe = flock()
        probe.l_type = Int16(F_WRLCK)
        probe.l_whence = Int16(SEEK_SET)
        probe.l_len = 1
        guard fcntl(lockFile, F_GETLK, &probe) == 0, probe.l_type != Int16(F_UNLCK) else { return nil }
        return probe.l_pid
    }

    private static func makeDirectory(_ prefix: String) throws(StorageError) -> String {
        var template = Array((prefix + "XXXXXX").utf8CString)
        guard template.withUnsafeMutableBufferPointer({ $0.baseAddress.map(mkdtemp) ?? nil }) != nil else {
            throw StorageError(code: errno, operation: "creating a directory \(prefix)XXXXXX")
        }
        return String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Copies `source` to a new file `target`, lets `patch` write into the copy, and flushes it.
    private static func copyFile(_ source: String, to target: String,
                                 patch: (Int32) throws(StorageError) -> Void) throws(StorageError) {
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw StorageError(code: errno, operation: "opening \(source)") }
        defer { close(input) }
        let output = open(target, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, Environment.fileMode)
        guard output >= 0 else { throw StorageError(code: errno, operation: "creating \(target)") }
        defer { close(output) }
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        var offset: off_t = 0
        while true {
            let count = chunk.withUnsafeMutableBytes { pread(input, $0.baseAddress, $0.count, offset) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw StorageError(code: errno, operation: "reading \(source)") }
            if count == 0 { break }
            try writeAll(chunk[0..<count], to: output, at: offset, path: target)
            offset += off_t(count)
        }
        try patch(output)
        guard fsync(output) == 0 else { throw StorageError(code: errno, operation: "flushing \(target)") }
    }

    private static func writeAll(_ bytes: ArraySlice<UInt8>, to descriptor: Int32, at offset: off_t, path: String) throws(StorageError) {
        var done = 0
        while done < bytes.count {
            let written = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress! + done, $0.count - done, offset + off_t(done)) }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { throw StorageError(code: written < 0 ? errno : EIO, operation: "writing \(path)") }
            done += written
        }
    }

    private static func flushFile(_ path: String) throws(StorageError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT { return }
            throw StorageError(code: errno, operation: "opening \(path)")
        }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw StorageError(code: errno, operation: "flushing \(path)") }
    }
}
