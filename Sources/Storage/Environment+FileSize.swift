import CLMDB
import Foundation
import Synchronization

/// The data file's length under `MDB_WRITEMAP`: as long as the map while a transaction writes in place,
/// its disk blocks reserved ahead of the writes, and cut back to the used pages afterwards.
extension Environment {
    /// Sizes the data file for a write transaction that has just begun (and
    /// so holds the write lock). With `writesInPlace`, LMDB made the data file
    /// as long as the map when it opened it (a sparse file), since a page
    /// written through the map must lie inside the file; `trimFile`, here or in
    /// another process, may have cut it back since, so it is made that long
    /// again. Any other writer cuts back what an import writing in place left
    /// past the used pages when it was killed before its own `trimFile`.
    /// Readers never read past their snapshot's last page.
    /// `size` is the file's, if the caller has just read it.
    package func fitFileForWriting(size: Int?) throws(StorageError) {
        guard writesInPlace else { return try cutFileToUsedPages(size: size) }
        guard let size = size ?? fileSize() else { throw StorageError(code: errno, operation: "reading the data file's size") }
        guard size < mapSize else { return }
        guard ftruncate(descriptor, off_t(mapSize)) == 0 else { throw StorageError(code: errno, operation: "extending the data file to the map") }
    }

    /// Cuts the data file back to the pages committed transactions use, if it is longer. Only under the write lock.
    private func cutFileToUsedPages(size: Int? = nil) throws(StorageError) {
        let used = usedFileBytes
        guard let size = size ?? fileSize(), size > used else { return }
        guard ftruncate(descriptor, off_t(used)) == 0 else { throw StorageError(code: errno, operation: "trimming the data file") }
        reservedEnd.store(0, ordering: .relaxed)
    }

    private func fileSize() -> Int? { Self.identity(of: "", in: descriptor)?.size }

    /// Allocates disk blocks for the data file up to `bytes` from its start,
    /// for a transaction that writes in place (`writesInPlace`). A page written
    /// through the map into a hole of the sparse file needs a block when it
    /// is first touched; on a full device the kernel can only answer that with
    /// `SIGBUS`. Reserving ahead turns that into `ENOSPC` here, before LMDB
    /// writes there. Blocks reserved and not used are given back by `trimFile`.
    package func reserveFile(upTo bytes: Int) throws(StorageError) {
        let end = min(bytes, mapSize)
        let start = max(reservedEnd.load(ordering: .relaxed), usedFileBytes)
        guard end > start else { return }
        // glibc writes a byte into each block where the file system cannot allocate them.
        let failure = posix_fallocate(descriptor, off_t(start), off_t(end - start))
        guard failure == 0 else { throw StorageError(code: failure, operation: "reserving \(end - start) bytes of disk for the store") }
        reservedEnd.store(end, ordering: .relaxed)
    }

    /// Gives back what `writesInPlace` extended and `reserveFile` reserved,
    /// under the write lock (a transaction begun and dropped), so no writer is past the used pages.
    package func trimFile() throws(StorageError) {
        let transaction = try Transaction(environment: handle, readOnly: false)
        defer { transaction.discard() }
        try cutFileToUsedPages()
    }
}
