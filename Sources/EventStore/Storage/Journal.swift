import CFileStatus
import CLMDB
import Dispatch
import Glibc
import Synchronization

/// evsync's redo journal, `journal` beside `data.mdb`: how a durable write costs one flush where
/// LMDB's commit costs two (its pages, then the meta page that points to them).
///
/// The environment commits without flushing (`MDB_NOSYNC`). What makes a commit durable is either
/// - an **entry**: the transaction's changes (`Redo`), written to the journal and flushed before the
///   commit; or
/// - a **checkpoint**: the data file flushed whole, then a record of its newest meta page written to
///   one of the journal's two checkpoint slots and flushed. Entries follow the checkpoint they extend.
///
/// A power cut may leave the data file with a meta page whose pages never reached the disk. Opening
/// it then (`restoreIfCutOff`) writes the last checkpoint's meta page back and does the entries after it
/// again. That is sound only while the checkpoint's pages are as it left them, and LMDB writes over
/// pages a later commit freed once no reader needs them. So the process that made the checkpoint keeps
/// a read transaction (the pin), which stops LMDB reusing any page freed after it. A pin held on the
/// checkpoint itself would make every commit's pages new ones, all to be written to the disk (three
/// times SQLite's bytes a write, measured: docs/performance.md); so each durable entry also holds the
/// pages freed since the pin last moved, as they are (`Image`), and the pin moves to the last commit
/// once they are flushed. Restoring writes those pages back first. And so only that process writes
/// entries: any other process, or a commit after one that is not in the journal, first makes a
/// checkpoint of its own. A commit too large for an entry, or one `Redo` cannot tell, is followed by a
/// checkpoint.
///
/// The pin is let go once its process has made no commit for `pinIdleTime`: it would otherwise keep every page
/// freed since from being reused, while other processes write, for as long as an idle app runs. Letting it go
/// is safe at any moment between commits, since no commit follows a checkpoint without its pin (`mayExtend`):
/// the next commit here makes a checkpoint first.
///
/// A power cut is told from a process that was killed (when the page cache, and so the data file,
/// is whole) by the boot and the device the checkpoint was made on: either differing means the data
/// file may have lost writes. The reasoning, and what it costs: docs/architecture.md ("Durability is a
/// journal entry or a checkpoint").
final class Journal: Sendable {
    static let fileName = "journal"

    private let path: String
    private let directory: String
    /// The file's descriptor; -1 until the file is there.
    private let descriptor: Atomic<Int32>
    /// Who made a checkpoint: this environment, if it is this number.
    private let owner: UInt64
    private let state: Mutex<State>

    private struct State {
        /// The number of the last checkpoint this environment made.
        var checkpoint: UInt64 = 0
        /// A read transaction on that checkpoint's commit, or a later one whose freed pages are imaged, so that
        /// the checkpoint's pages stay as they are or are in the journal.
        var pin: Pin?
        /// The checkpoint's page size and its last page: pages after it are none of the checkpoint's.
        var pageSize = 0
        var lastPage: UInt64 = 0
        /// The pages LMDB may reuse without harm to the checkpoint: free in it, or imaged in an entry since.
        var spare: Set<UInt64> = []
        /// The last commit whose freed pages are spare.
        var imagedThrough = 0
        /// The last commit the checkpoint or an entry after it covers.
        var covered = -1
        /// Where the next entry goes, and how many follow the checkpoint.
        var end = Journal.entriesStart
        var entries = 0
        /// The file's size: entries are written over zeros already on disk, so that their flush
        /// writes no file size (which would cost ext4 a journal commit of its own).
        var size = 0
        /// When this process last committed (`DispatchTime`'s nanoseconds), and whether a release of the pin is planned.
        var lastCommit: UInt64 = 0
        var releasePlanned = false
    }

    /// How long a pin outlives this process's last commit.
    static let pinIdleTime: DispatchTimeInterval = .seconds(5)
    private static let releases = DispatchQueue(label: "evsync.journal.pin-release")

    /// Checkpoint slots, then entries.
    static let slotSize = 4096, entriesStart = 2 * 4096
    /// The entries between two checkpoints: bounds what a restore does again.
    private static let maxEntries = 256
    /// The most pages of a checkpoint's free list kept as `spare`.
    private static let spareLimit = 1 << 16
    static let capacity = 4 << 20
    static let entryHeader = 32
    /// A checkpoint whose entries may hold images is marked 2, so that an evsync from before them, which
    /// would restore it without its images, finds no checkpoint (and then refuses the store's layout, 7).
    private static let checkpointMagic = Array("EVSJRNL2".utf8), formerCheckpointMagic = Array("EVSJRNL1".utf8)
    static let entryMagic: UInt32 = 0x4A45_5645

    /// This boot's id, or nil where the system does not say: then there is no journal, and every
    /// durable commit is flushed by LMDB as before.
    static let bootID: [UInt8]? = {
        let descriptor = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { Glibc.close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 40)
        let count = bytes.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, 40) }
        return count >= 32 ? bytes : nil
    }()

    /// Opens the journal in `directory`, if it has one (the first checkpoint makes it), and holds its lock
    /// until `finishOpening`: processes opening the store wait for the one that restores it.
    /// - Parameter readOnly: to tell whether the store needs restoring (`refuseIfCutOff`) and nothing else.
    init?(directory: String, readOnly: Bool = false) throws(StorageError) {
        guard Self.bootID != nil else { return nil }
        path = directory + "/" + Self.fileName
        self.directory = directory
        var token: UInt64 = 0
        while token == 0 { token = UInt64.random(in: .min ... .max) }
        owner = token
        let descriptor = open(path, (readOnly ? O_RDONLY : O_RDWR) | O_CLOEXEC)
        var status = stat()
        if descriptor < 0 {
            guard errno == ENOENT else { throw StorageError(code: errno, operation: "opening \(path)") }
        } else if fstat(descriptor, &status) != 0 || flock(descriptor, readOnly ? LOCK_SH : LOCK_EX) != 0 {
            let code = errno
            Glibc.close(descriptor)
            throw StorageError(code: code, operation: "opening \(path)")
        }
        if descriptor >= 0 { evsync_skip_access_times(descriptor) }
        self.descriptor = Atomic(descriptor)
        state = Mutex(State(size: descriptor < 0 ? 0 : Int(status.st_size)))
    }

    func finishOpening() {
        let descriptor = descriptor.load(ordering: .relaxed)
        if descriptor >= 0 { flock(descriptor, LOCK_UN) }
    }

    /// Ends the pin; the environment closes next.
    func close() {
        state.withLock { state in
            state.pin?.end()
            state.pin = nil
        }
        let descriptor = descriptor.exchange(-1, ordering: .relaxed)
        if descriptor >= 0 { Glibc.close(descriptor) }
    }

    /// Makes the file, before the first checkpoint, and its name durable in the directory.
    private func create() throws(StorageError) {
        guard descriptor.load(ordering: .relaxed) < 0 else { return }
        let created = open(path, O_RDWR | O_CREAT | O_CLOEXEC, Environment.fileMode)
        guard created >= 0 else { throw StorageError(code: errno, operation: "creating \(path)") }
        evsync_skip_access_times(created)
        descriptor.store(created, ordering: .relaxed)
        let folder = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { if folder >= 0 { Glibc.close(folder) } }
        guard folder >= 0, fsync(folder) == 0 else { throw StorageError(code: errno, operation: "flushing \(directory)") }
    }

    /// A read transaction held open. Sendable: with `MDB_NOTLS` it may end on any thread, and it is
    /// touched only under the journal's lock.
    private final class Pin: @unchecked Sendable {
        let transaction: Transaction
        init(_ transaction: Transaction) { self.transaction = transaction }
        func end() { transaction.discard() }
    }

    // MARK: Checkpoints

    /// A checkpoint as a slot holds it (`bytes`).
    struct Checkpoint {
        var number: UInt64
        var transaction: UInt64
        var owner: UInt64
        var device: UInt64
        var inode: UInt64
        var boot: [UInt8]
        /// The start of the commit's meta page: all LMDB writes of it.
        var meta: [UInt8]

        static let metaBytes = 256
        /// magic 8, number 8, transaction 8, owner 8, device 8, inode 8, boot 40, zeros 8, meta 256, checksum 4.
        static let size = 96 + metaBytes + 4

        var bytes: [UInt8] {
            var bytes = Journal.checkpointMagic
            for field in [number, transaction, owner, device, inode] { withUnsafeBytes(of: field.littleEndian) { bytes += $0 } }
            bytes += boot + [UInt8](repeating: 0, count: 8) + meta
            let checksum = bytes.withUnsafeBytes { CRC32C.checksum($0) }
            withUnsafeBytes(of: checksum.littleEndian) { bytes += $0 }
            return bytes
        }
    }

    /// The newest checkpoint in either slot, if there is one.
    /// Both slots are read in one `pread`: every commit asks (another process may have made one since), and
    /// copying 4 KB costs less than a second syscall. A file too short for the second slot is read for the first.
    func latestCheckpoint() -> Checkpoint? {
        let slots = read(0, Self.slotSize + Checkpoint.size) ?? read(0, Checkpoint.size) ?? []
        return [0, Self.slotSize].compactMap { start in
            slots.count >= start + Checkpoint.size ? Checkpoint(Array(slots[start..<start + Checkpoint.size])) : nil
        }.max { $0.number < $1.number }
    }

    /// Flushes the data file, pins and records its last commit as a checkpoint. The caller holds the
    /// write lock (an open write transaction), so the last commit is the one before it.
    ///
    /// The record is flushed unless `flushedWithEntry`: when an entry written next is flushed before its commit,
    /// one flush takes both. Either may reach the disk first; alone, neither misleads a restore (an entry of a
    /// checkpoint not on disk is not replayed, a checkpoint without its entry is the store before that commit).
    private func checkpoint(_ state: inout State, in environment: Environment, flushedWithEntry: Bool = false) throws(StorageError) {
        try create()
        try StorageError.check(mdb_env_sync(environment.handle, 1), "flushing the store")
        let pin = try Transaction(environment: environment.handle, readOnly: true)
        guard let file = Environment.identity(of: "", in: environment.descriptor),
              let (page, _) = DataFile(descriptor: environment.descriptor).newestMetaPage(), page.u64(144) == UInt64(pin.id),
              let boot = Self.bootID else {
            pin.discard()
            throw StorageError(code: MDB_CORRUPTED, operation: "making a checkpoint", reason: "the data file's newest meta page is not the last commit's")
        }
        let number = max(latestCheckpoint()?.number ?? 0, state.checkpoint) + 1
        let record = Checkpoint(number: number, transaction: UInt64(pin.id), owner: owner, device: file.device,
                                inode: file.inode, boot: boot, meta: Array(page.prefix(Checkpoint.metaBytes)))
        do throws(StorageError) {
            try write(record.bytes, at: Int(number % 2) * Self.slotSize)
            if !flushedWithEntry { try flush() }
        } catch {
            pin.discard()
            throw error
        }
        state.pin?.end()
        (state.pin, state.checkpoint, state.covered, state.end, state.entries) = (Pin(pin), number, pin.id, Self.entriesStart, 0)
        // What this commit and those before it freed is none of its pages.
        (state.pageSize, state.lastPage, state.imagedThrough) = (Int(page.u32(40)), page.u64(136), pin.id)
        // Nor is a page free in it; a free list too long to read each time is left to be imaged as its pages come
        // back, which costs bytes, not soundness.
        state.spare = []
        try? pin.forEachFreedPage(after: 0) {
            state.spare.insert($0)
            return state.spare.count < Self.spareLimit
        }
    }

    // MARK: Images of freed pages

    /// A page of the data file as it was before LMDB could reuse it.
    struct Image {
        var page: UInt64
        var bytes: [UInt8]
    }

    /// The pages freed since `imagedThrough` that may be the checkpoint's, as they are now, and a read
    /// transaction on the last commit, to become the pin once an entry holding them is flushed. The pin
    /// has kept those pages from being reused, so they are as the checkpoint left them. The caller holds
    /// the write lock.
    private func freedPages(_ state: State, in environment: Environment) throws(StorageError) -> (pin: Transaction, images: [Image]) {
        let next = try Transaction(environment: environment.handle, readOnly: true)
        var images: [Image] = []
        var taken = Set<UInt64>()
        let file = DataFile(descriptor: environment.descriptor)
        do throws(StorageError) {
            try next.forEachFreedPage(after: state.imagedThrough) { page throws(StorageError) in
                guard page <= state.lastPage, !state.spare.contains(page), taken.insert(page).inserted else { return true }
                guard let bytes = file.read(page * UInt64(state.pageSize), state.pageSize) else {
                    throw StorageError(code: EIO, operation: "reading page \(page) of the data file")
                }
                images.append(Image(page: page, bytes: bytes))
                return true
            }
        } catch {
            next.discard()
            throw error
        }
        return (next, images)
    }

    /// Whether the latest checkpoint is this environment's and every commit since is covered by it or an
    /// entry: only then may `transaction` follow as an entry.
    private func mayExtend(_ state: State, with transaction: Transaction) -> Bool {
        guard state.pin != nil, state.covered == transaction.id - 1, let latest = latestCheckpoint() else { return false }
        return latest.number == state.checkpoint && latest.owner == owner
    }

    // MARK: Commits

    /// Commits `transaction` (a write transaction of `environment`, not nested) as the journal says:
    /// as an entry, flushed first if `durable`, or left for a checkpoint after it.
    /// - Returns: whether the commit still needs a checkpoint to be durable (`checkpoint(covering:)`).
    func commit(_ transaction: Transaction, durable: Bool, in environment: Environment) throws(StorageError) -> Bool {
        return try state.withLock { state throws(StorageError) -> Bool in
            // A durable entry takes the pages freed since the pin last moved, so that the pin can move on.
            let extending = mayExtend(state, with: transaction)
            var freed: (pin: Transaction, images: [Image])?
            if durable, transaction.redo != nil, extending { freed = try freedPages(state, in: environment) }
            defer { freed?.pin.discard() }
            let images = freed?.images ?? []
            let size = transaction.redo.map { Self.entryHeader + $0.bytes.count + images.count * (8 + state.pageSize) }
            if !extending || state.entries >= Self.maxEntries
                || size.map({ state.end + $0 > Self.entriesStart + Self.capacity }) == true {
                // Before a commit without an entry, or with one not flushed, the checkpoint must be on disk.
                try checkpoint(&state, in: environment, flushedWithEntry: durable && transaction.redo != nil)
                return try commit(transaction, images: [], durable: durable, state: &state)
            }
            let committed = try commit(transaction, images: images, durable: durable, state: &state)
            if let next = freed?.pin {
                // The entry holding the images is on disk: LMDB may reuse those pages now.
                freed = nil
                state.pin?.end()
                state.pin = Pin(next)
                state.imagedThrough = next.id
                state.spare.formUnion(images.lazy.map(\.page))
            }
            return committed
        }
    }

    /// Commits `transaction` with an entry of its changes and `images` if it has one (not flushed unless
    /// `durable`), without one if not.
    /// - Returns: whether the commit still needs a checkpoint to be durable.
    private func commit(_ transaction: Transaction, images: [Image], durable: Bool, state: inout State) throws(StorageError) -> Bool {
        guard let redo = transaction.redo else {
            try transaction.commit()
            letPinGo(afterIdle: &state)
            return true
        }
        let offset = state.end
        // An entry: its magic (4 bytes), the checksum of the rest (4), the checkpoint's number (8), the
        // transaction's id (8), the size of the changes (4), the number of images (4), the changes, then
        // each image: its page's number (8) and its bytes.
        var entry = [UInt8](repeating: 0, count: Self.entryHeader)
        entry.reserveCapacity(Self.entryHeader + redo.bytes.count + images.count * (8 + state.pageSize))
        entry.withUnsafeMutableBytes { header in
            header.storeBytes(of: Self.entryMagic.littleEndian, toByteOffset: 0, as: UInt32.self)
            header.storeBytes(of: state.checkpoint.littleEndian, toByteOffset: 8, as: UInt64.self)
            header.storeBytes(of: UInt64(transaction.id).littleEndian, toByteOffset: 16, as: UInt64.self)
            header.storeBytes(of: UInt32(redo.bytes.count).littleEndian, toByteOffset: 24, as: UInt32.self)
            header.storeBytes(of: UInt32(images.count).littleEndian, toByteOffset: 28, as: UInt32.self)
        }
        entry += redo.bytes
        for image in images {
            withUnsafeBytes(of: image.page.littleEndian) { entry += $0 }
            entry += image.bytes
        }
        try reserve(&state, upTo: offset + entry.count)
        let checksum = entry.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[8...])) }
        entry.withUnsafeMutableBytes { $0.storeBytes(of: checksum.littleEndian, toByteOffset: 4, as: UInt32.self) }
        do throws(StorageError) {
            try write(entry, at: offset)
            if durable { try flush() }
            try transaction.commit()
        } catch {
            // Not committed, so not to be done again after a power cut.
            try? write([UInt8](repeating: 0, count: Self.entryHeader), at: offset)
            try? flush()
            throw error
        }
        (state.covered, state.end, state.entries) = (transaction.id, offset + entry.count, state.entries + 1)
        letPinGo(afterIdle: &state)
        return false
    }

    /// Notes a commit, and plans to end the pin once `pinIdleTime` passes without another. One release is
    /// planned at a time, and planned again for later if a commit came meanwhile: one planned for every commit
    /// cost each write a wake-up of Dispatch's timer thread (a fifth of a single write's CPU, measured).
    private func letPinGo(afterIdle state: inout State) {
        state.lastCommit = DispatchTime.now().uptimeNanoseconds
        guard !state.releasePlanned else { return }
        state.releasePlanned = true
        planRelease(at: DispatchTime.now() + Self.pinIdleTime)
    }

    private func planRelease(at deadline: DispatchTime) {
        Self.releases.asyncAfter(deadline: deadline) { [weak self] in
            guard let self else { return }
            let later: DispatchTime? = state.withLock { state in
                let due = DispatchTime(uptimeNanoseconds: state.lastCommit) + Self.pinIdleTime
                if due > .now() { return due }
                state.releasePlanned = false
                state.pin?.end()
                state.pin = nil
                return nil
            }
            if let later { planRelease(at: later) }
        }
    }

    /// Whether this process holds a pin (for tests).
    var isPinned: Bool { state.withLock { $0.pin != nil } }

    /// Makes commit `id`, done without an entry, durable: by a checkpoint, unless one covers it already.
    /// `transaction` is a write transaction begun after that commit, holding the write lock.
    func checkpoint(covering id: Int, holding transaction: Transaction, in environment: Environment) throws(StorageError) {
        try state.withLock { state throws(StorageError) in
            if let latest = latestCheckpoint(), latest.transaction >= UInt64(id) { return }
            try checkpoint(&state, in: environment)
        }
    }

    // MARK: The file

    func read(_ offset: Int, _ count: Int) -> [UInt8]? {
        DataFile(descriptor: descriptor.load(ordering: .relaxed)).read(UInt64(offset), count)
    }

    private func write(_ bytes: [UInt8], at offset: Int) throws(StorageError) {
        let written = bytes.withUnsafeBytes { pwrite(descriptor.load(ordering: .relaxed), $0.baseAddress, bytes.count, off_t(offset)) }
        guard written == bytes.count else { throw StorageError(code: written < 0 ? errno : EIO, operation: "writing the journal") }
    }

    private func flush() throws(StorageError) {
        guard fdatasync(descriptor.load(ordering: .relaxed)) == 0 else { throw StorageError(code: errno, operation: "flushing the journal") }
    }

    /// Fills the file with zeros, flushed, up to at least `end`.
    private func reserve(_ state: inout State, upTo end: Int) throws(StorageError) {
        guard end > state.size else { return }
        state.size = max(state.size, Self.entriesStart)
        let target = min(max(end, state.size * 2, Self.entriesStart + (64 << 10)), Self.entriesStart + Self.capacity)
        let zeros = [UInt8](repeating: 0, count: 64 << 10)
        var offset = state.size
        while offset < target {
            let count = min(zeros.count, target - offset)
            try write(Array(zeros[0..<count]), at: offset)
            offset += count
        }
        try flush()
        state.size = target
    }
}

extension Journal.Checkpoint {
    /// The checkpoint `bytes` hold, or nil if they are not one whole.
    init?(_ bytes: [UInt8]) {
        guard bytes.count == Self.size, [Journal.checkpointMagic, Journal.formerCheckpointMagic].contains(Array(bytes[0..<8])),
              bytes.withUnsafeBytes({ CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<Self.size - 4])) }) == bytes.u32(Self.size - 4)
        else { return nil }
        (number, transaction, owner, device, inode) = (bytes.u64(8), bytes.u64(16), bytes.u64(24), bytes.u64(32), bytes.u64(40))
        boot = Array(bytes[48..<88])
        meta = Array(bytes[96..<96 + Self.metaBytes])
    }
}
