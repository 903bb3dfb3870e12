import CLMDB
import Glibc

// Restoring a store after a power cut from its journal's last checkpoint, the images of the pages freed since and
// the entries that follow; and telling, without writing, whether that is due. What the journal holds and why it
// is sound: `Journal`.
extension Journal {
    /// If the data file may have lost writes since the last checkpoint (made in another boot, or on another
    /// device), writes the images of its pages back, then its meta page over both of `dataPath`'s, and returns the
    /// changes of the entries after it, to be done again; nil if the file is as the last commit left it.
    /// Runs before LMDB opens the file, with the journal's lock held.
    func restoreIfCutOff(dataPath: String) throws(StorageError) -> [[UInt8]]? {
        guard let latest = try cutOff(dataPath: dataPath) else { return nil }
        let pageSize = Int(latest.meta.u32(40))
        guard pageSize >= 512, pageSize.nonzeroBitCount == 1 else {
            throw StorageError(code: MDB_CORRUPTED, operation: "restoring \(dataPath)", reason: "the journal's checkpoint holds no meta page")
        }
        let (changes, images) = entries(after: latest, pageSize: pageSize)
        let data = open(dataPath, O_RDWR | O_CLOEXEC)
        guard data >= 0 else { throw StorageError(code: errno, operation: "opening \(dataPath)") }
        defer { Glibc.close(data) }
        // The checkpoint's pages that later commits freed, as they were before LMDB could reuse them; the first
        // image of a page is the checkpoint's (a later one, of a page reused since, is not).
        var restored = Set<UInt64>()
        for image in images where restored.insert(image.page).inserted {
            let written = image.bytes.withUnsafeBytes { pwrite(data, $0.baseAddress, pageSize, off_t(image.page) * off_t(pageSize)) }
            guard written == pageSize else { throw StorageError(code: written < 0 ? errno : EIO, operation: "restoring \(dataPath)") }
        }
        try MetaPages.write(latest.meta, pageSize: pageSize, asCommit: latest.transaction, to: data, path: dataPath)
        guard fsync(data) == 0 else { throw StorageError(code: errno, operation: "flushing \(dataPath)") }
        return changes
    }

    /// Throws if the data file needs restoring, which a store opened read-only cannot do: read as it is, its
    /// newest commit may point to pages that never reached the disk, and what it shows would be wrong.
    func refuseIfCutOff(dataPath: String) throws(StorageError) {
        guard try cutOff(dataPath: dataPath) != nil else { return }
        throw StorageError(code: EROFS, operation: "opening \(dataPath)", reason: Self.cutOffReason)
    }

    static let cutOffReason = "lost power or its disk since its last writes, and its journal must restore it "
        + "before it can be read, which takes a write"

    /// The last checkpoint, if the data file may have lost writes since it was made (in another boot, or on
    /// another device), and the data file is the one it was made of; nil if it is as the last commit left it.
    private func cutOff(dataPath: String) throws(StorageError) -> Checkpoint? {
        guard let latest = latestCheckpoint(), let boot = Self.bootID else { return nil }
        var status = stat()
        guard stat(dataPath, &status) == 0, UInt64(status.st_ino) == latest.inode else { return nil }
        if latest.boot == boot && latest.device == UInt64(status.st_dev) { return nil }
        let data = open(dataPath, O_RDONLY | O_CLOEXEC)
        guard data >= 0 else { throw StorageError(code: errno, operation: "opening \(dataPath)") }
        defer { Glibc.close(data) }
        // Commits only ever raise the ids in the two meta pages: below the checkpoint's, the file is not the one
        // the journal followed (another store's copied over it in place), and its pages are not the checkpoint's.
        let file = DataFile(descriptor: data)
        guard let filePageSize = file.meta()?.pageSize, let first = file.read(144, 8), let second = file.read(UInt64(filePageSize) + 144, 8),
              min(first.u64(0), second.u64(0)) + 1 >= latest.transaction, max(first.u64(0), second.u64(0)) >= latest.transaction
        else { return nil }
        return latest
    }

    /// The changes of the entries that follow `checkpoint`, one commit after another, and the images they
    /// hold, in order, up to the first entry that is not whole (a write the power cut cut short, or one made
    /// before the checkpoint).
    private func entries(after checkpoint: Checkpoint, pageSize: Int) -> (changes: [[UInt8]], images: [Image]) {
        var changes: [[UInt8]] = [], images: [Image] = []
        var offset = Self.entriesStart
        var expected = checkpoint.transaction + 1
        while let header = read(offset, Self.entryHeader), header.u32(0) == Self.entryMagic,
              header.u64(8) == checkpoint.number, header.u64(16) == expected,
              case let count = Int(header.u32(24)), count <= Redo.limit,
              case let imageCount = Int(header.u32(28)), imageCount <= Self.capacity / pageSize,
              case let size = count + imageCount * (8 + pageSize),
              let body = read(offset + Self.entryHeader, size),
              (header[8...] + body).withUnsafeBytes({ CRC32C.checksum($0) }) == header.u32(4) {
            changes.append(Array(body[0..<count]))
            for start in stride(from: count, to: size, by: 8 + pageSize) {
                images.append(Image(page: body.u64(start), bytes: Array(body[start + 8 ..< start + 8 + pageSize])))
            }
            offset += Self.entryHeader + size
            expected += 1
        }
        return (changes, images)
    }
}
