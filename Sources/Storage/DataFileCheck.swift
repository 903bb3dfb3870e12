import CLMDB
import Foundation

/// Checks, with plain reads before LMDB maps it, that `data.mdb`'s two meta
/// pages agree and that it holds every page the store may read.
///
/// Commit `t` writes its meta page into page `t % 2`, so the other holds
/// commit `t - 1` (both hold 0 in a store nothing was committed to). LMDB
/// opens the one with the higher transaction id, whatever the other says: a
/// meta page whose id was damaged upwards would open an older tree, maybe
/// one whose pages later commits reused, and a store would silently lose
/// its last commits. A pair that breaks the rule is damage.
/// LMDB maps the file and trusts it: a page past the
/// end of a file that was cut short (a copy that stopped, a truncation) is not
/// an error to it but a `SIGBUS` when the map is touched there.
///
/// The file need not reach the last page its meta page counts: pages a
/// transaction took and freed again are never written (`mdb_env_copy` stops
/// at the end of the file for that reason). So when it falls short, the
/// missing pages must all be free ones, listed in the free-page database:
/// then nothing can read them. Any other missing page is a store cut short.
///
/// What is read, from LMDB 0.9's `mdb.c` (native byte order, 64-bit `pgno_t`):
///
/// | where | what |
/// |---|---|
/// | page + 10 | `mp_flags` (2 bytes): branch `0x01`, leaf `0x02`, overflow `0x04`, meta `0x08` |
/// | page + 12 | `mp_lower` (2 bytes; the node offsets end there), or an overflow run's page count (4 bytes) |
/// | page + 16 | the node offsets (2 bytes each); on a meta page, the `MDB_meta` |
/// | meta + 0 | magic `0xBEEFC0DE` (4), data version 1 (4), address (8), map size (8) |
/// | meta + 24 | the free-page database's `MDB_db` (48 bytes: page size (4), flags (2), depth (2), page counts (24), entries (8), root (8)), then the main one's |
/// | meta + 120 | last page used (8), transaction id (8) |
/// | node | data size or the low 32 bits of a child page (4), flags or the high 16 (2), key size (2), key, data |
///
/// A free-page record is keyed by a transaction id; its data (inline, or in
/// an overflow run when `F_BIGDATA` `0x01`) is a count, then that many page numbers.
package enum DataFileCheck {
    /// Throws `MDB_CORRUPTED`, with the reason, if `path` (an existing data file) is missing pages in use.
    /// Anything else wrong with the file (a bad meta page) is left for LMDB to report.
    package static func check(_ path: String) throws(StorageError) {
        guard MemoryLayout<Int>.size == 8, 1.littleEndian == 1 else { return }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        // A writer may commit while this reads: try again if the meta page moved on.
        for _ in 0..<3 {
            let file = DataFile(descriptor: descriptor)
            guard let meta = file.meta() else { return }
            if let problem = file.metaPagesDisagree() {
                if file.meta()?.transaction != meta.transaction { continue }
                throw StorageError(code: MDB_CORRUPTED, operation: "checking \(path)", reason: problem)
            }
            guard let missing = file.missingPages(in: meta) else { return }
            if let problem = file.problem(missing: missing, meta: meta) {
                if file.meta()?.transaction != meta.transaction { continue }
                throw StorageError(code: MDB_CORRUPTED, operation: "checking \(path)", reason: problem)
            }
            return
        }
    }
}

package struct Meta {
    package let pageSize: Int
    package let freeRoot: UInt64
    package let lastPage: UInt64
    package let transaction: UInt64
}

/// Plain reads of a data file: the only code of evsync that knows LMDB's file format, and it only reads.
package struct DataFile {
    package let descriptor: Int32

    private static let invalidPage = UInt64.max
    private static let branch: UInt16 = 0x01, leaf: UInt16 = 0x02, overflow: UInt16 = 0x04, metaFlag: UInt16 = 0x08
    private static let bigData: UInt16 = 0x01

    /// `count` bytes at `offset`, or nil if the file does not hold them all.
    package func read(_ offset: UInt64, _ count: Int) -> [UInt8]? {
        guard offset <= UInt64(Int.max) else { return nil }
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let got = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + done, count - done, off_t(Int(offset) + done)) }
            if got < 0, errno == EINTR { continue }
            guard got > 0 else { return nil }
            done += got
        }
        return bytes
    }

    /// Why the two meta pages cannot both be LMDB's (see `DataFileCheck`), or nil when they can.
    package func metaPagesDisagree() -> String? {
        guard let first = read(144, 8), let meta = meta(), let second = read(UInt64(meta.pageSize) + 144, 8) else { return nil }
        let ids = [first.u64(0), second.u64(0)]
        let newest = ids[0] < ids[1] ? 1 : 0
        let expected: [UInt64] = ids[newest] == 0 ? [0, 0] : newest == Int(ids[newest] % 2) ? [ids[newest], ids[newest] - 1] : []
        guard expected.isEmpty || ids[1 - newest] != expected[1] else { return nil }
        return "its meta pages disagree: page 0 holds commit \(ids[0]) and page 1 commit \(ids[1]), where LMDB writes commit t to page t % 2 "
            + "and the other holds t - 1"
    }

    /// The newer of the two meta pages, as LMDB chooses it; nil if either is not one LMDB would accept.
    package func meta() -> Meta? {
        var newest: Meta?
        var pageSize = 0
        for index in 0..<2 {
            guard let page = read(UInt64(index * pageSize), 160),
                  page.u16(10) & Self.metaFlag != 0, page.u32(16) == 0xBEEF_C0DE, page.u32(20) == 1 else { return nil }
            if index == 0 {
                pageSize = Int(page.u32(40))
                guard pageSize >= 256, pageSize <= 1 << 16, pageSize & (pageSize - 1) == 0 else { return nil }
            }
            let meta = Meta(pageSize: pageSize, freeRoot: page.u64(80), lastPage: page.u64(136), transaction: page.u64(144))
            if newest.map({ meta.transaction > $0.transaction }) ?? true { newest = meta }
        }
        return newest
    }

    /// The number of the last commit in the data file at `path`, as its newer meta page says; nil if it cannot be read.
    package static func newestCommit(of path: String) -> UInt64? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        return DataFile(descriptor: descriptor).meta()?.transaction
    }

    /// The pages past the end of the file that `meta` counts as used or free; nil if there are none.
    package func missingPages(in meta: Meta) -> Range<UInt64>? {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return nil }
        let pages = UInt64(status.st_size) / UInt64(meta.pageSize)
        guard meta.lastPage != Self.invalidPage, meta.lastPage >= pages else { return nil }
        return pages..<meta.lastPage + 1
    }

    /// Why the file cannot be used, or nil when every missing page is free.
    package func problem(missing: Range<UInt64>, meta: Meta) -> String? {
        let cutShort = "data.mdb is cut short: it ends at page \(missing.lowerBound), but the store uses pages up to \(missing.upperBound - 1)"
        var freePages = Set<UInt64>()
        var pending = meta.freeRoot == Self.invalidPage ? [] : [(page: meta.freeRoot, depth: 0)]
        var visited = 0
        while let (number, depth) = pending.popLast() {
            visited += 1
            guard number < missing.lowerBound else { return cutShort }
            guard depth < 32, visited <= Int(missing.lowerBound),
                  let page = read(number * UInt64(meta.pageSize), meta.pageSize) else { return "its free-page list is unreadable" }
            let flags = page.u16(10)
            let lower = Int(page.u16(12))
            guard lower >= 16, lower <= meta.pageSize, flags & (Self.branch | Self.leaf) != 0 else {
                return "its free-page list is unreadable"
            }
            for slot in stride(from: 16, to: lower, by: 2) {
                let node = Int(page.u16(slot))
                guard node + 8 <= meta.pageSize else { return "its free-page list is unreadable" }
                let size = UInt64(page.u16(node)) | UInt64(page.u16(node + 2)) << 16
                let nodeFlags = page.u16(node + 4)
                let data = node + 8 + Int(page.u16(node + 6))
                if flags & Self.branch != 0 {
                    pending.append((size | UInt64(nodeFlags) << 32, depth + 1))
                    continue
                }
                let list: [UInt8]
                if nodeFlags & Self.bigData != 0 {
                    guard data + 8 <= meta.pageSize else { return "its free-page list is unreadable" }
                    let first = page.u64(data)
                    guard let header = read(first * UInt64(meta.pageSize), 16), header.u16(10) & Self.overflow != 0 else {
                        return first >= missing.lowerBound ? cutShort : "its free-page list is unreadable"
                    }
                    let run = UInt64(header.u32(12))
                    guard first + run <= missing.lowerBound else { return cutShort }
                    guard size <= run * UInt64(meta.pageSize) else { return "its free-page list is unreadable" }
                    guard let bytes = read(first * UInt64(meta.pageSize) + 16, Int(size)) else { return cutShort }
                    list = bytes
                } else {
                    guard data + Int(size) <= meta.pageSize else { return "its free-page list is unreadable" }
                    list = Array(page[data..<data + Int(size)])
                }
                guard list.count >= 8 else { continue }
                let count = min(Int(list.u64(0)), list.count / 8 - 1)
                for index in 0..<count {
                    let free = list.u64(8 + index * 8)
                    if missing.contains(free) { freePages.insert(free) }
                }
            }
        }
        return freePages.count == missing.count ? nil : cutShort
    }
}

extension [UInt8] {
    package func u16(_ offset: Int) -> UInt16 {
        guard offset + 2 <= count else { return 0 }
        return UInt16(self[offset]) | UInt16(self[offset + 1]) << 8
    }

    package func u32(_ offset: Int) -> UInt32 {
        UInt32(u16(offset)) | UInt32(u16(offset + 2)) << 16
    }

    package func u64(_ offset: Int) -> UInt64 {
        UInt64(u32(offset)) | UInt64(u32(offset + 4)) << 32
    }
}
