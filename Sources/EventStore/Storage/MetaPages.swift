import CLMDB
import Glibc

/// Stamps a data file written as a new environment with the commit number of the store it is to replace.
///
/// LMDB keeps the last commit's number in `lock.mdb`, shared by every process that has the store open, and a
/// transaction reads the meta page that number points to (page `t % 2`), not the newer of the two. A new
/// environment's commits count from 1: swapped in under a lock file that says `t`, half the time its
/// readers would open the other, older meta page (an empty store, at first). So both pages get the
/// newest meta page's tree, page `t % 2` as commit `t` and the other as `t - 1`: what `DataFileCheck` expects.
/// The layout is `DataFileCheck`'s (which reads the pages): the page number at page + 0, the transaction id at page + 144.
/// `write` is also how the journal puts a checkpoint's meta page back after a power cut (`Journal.restoreIfCutOff`).
enum MetaPages {
    static func stamp(_ path: String, asCommit commit: UInt64) throws(StorageError) {
        guard commit > 0 else { return }
        let descriptor = open(path, O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else { throw StorageError(code: errno, operation: "opening \(path)") }
        defer { close(descriptor) }
        guard MemoryLayout<Int>.size == 8, 1.littleEndian == 1,
              let (newest, pageSize) = DataFile(descriptor: descriptor).newestMetaPage() else {
            throw StorageError(code: MDB_CORRUPTED, operation: "stamping \(path)", reason: "its meta pages are not LMDB 0.9's on a 64-bit little-endian machine")
        }
        try write(newest, pageSize: pageSize, asCommit: commit, to: descriptor, path: path)
        guard fsync(descriptor) == 0 else { throw StorageError(code: errno, operation: "flushing \(path)") }
    }

    /// Writes `page` (a meta page, or its start) over both meta pages of the data file open on `descriptor`,
    /// page `commit % 2` as commit `commit` and the other as `commit - 1` (both as 0 for commit 0), unflushed.
    static func write(_ page: [UInt8], pageSize: Int, asCommit commit: UInt64, to descriptor: Int32, path: String) throws(StorageError) {
        for index in 0..<2 {
            var page = page
            let number = UInt64(index), id = commit == 0 || UInt64(index) == commit % 2 ? commit : commit - 1
            page.withUnsafeMutableBytes { bytes in
                bytes.storeBytes(of: number, toByteOffset: 0, as: UInt64.self)
                bytes.storeBytes(of: id, toByteOffset: 144, as: UInt64.self)
            }
            guard pwrite(descriptor, page, page.count, off_t(index * pageSize)) == page.count else {
                throw StorageError(code: errno, operation: "writing \(path)")
            }
        }
    }
}
