import CLMDB
import Foundation
import Synchronization

/// Keeping the process's resident set bounded while it reads or writes much of a large store:
/// the map's pages are dropped (`madvise`) when `/proc/self/statm` says they grew past a budget,
/// from the caller's loop or from a thread of its own.
extension Environment {
    /// Drops this process's mapping of the store's pages (they stay in the
    /// page cache and come back on the next access). Pages a long pull or
    /// rebuild has read count in the process's resident set; this keeps that
    /// bounded by the work in flight rather than by the size of the store.
    /// Safe at any time: the map is a shared mapping of the file, so a dropped
    /// page faults back in unchanged, and one written through it
    /// (`writesInPlace`) stays dirty in the page cache until the kernel or the
    /// commit's `msync` writes it.
    package func releaseMappedPages() {
        guard let (start, length) = mapRange else { return }
        madvise(UnsafeMutableRawPointer(bitPattern: start), length, MADV_DONTNEED)
        residentFloor.store(Self.residentFileBackedBytes() ?? 0, ordering: .relaxed)
    }

    /// Drops the mapped pages (as `releaseMappedPages`) once they hold more
    /// than `budget` bytes of the resident set, as far as can be told: the
    /// file-backed part of it grew that much since the last release. For
    /// loops over random records, where each page read brings up to 15 of
    /// its neighbours with it (the kernel's fault-around, on for every file
    /// mapping): dropping at a fixed interval would either let a large store
    /// run over or make a small one fault its pages back needlessly.
    package func releaseMappedPages(beyond budget: Int) {
        guard let resident = Self.residentFileBackedBytes(),
              resident > residentFloor.load(ordering: .relaxed) + budget else { return }
        releaseMappedPages()
    }

    /// Runs `body` while a thread of its own keeps this process's mapping of
    /// the store under `budget` bytes (`releaseMappedPages(beyond:)`, every
    /// two milliseconds). For a transaction that writes in place
    /// (`writesInPlace`): its commit clears a flag on every page it dirtied,
    /// up to 131,071 of them, which maps them all again, inside one LMDB call
    /// that nothing on the calling thread can interleave with. Dropping a
    /// page of a shared file mapping while another thread writes it is safe:
    /// the write lands in the page cache either way.
    package func keepingMappedPages<T, Failure: Error>(under budget: Int, _ body: () throws(Failure) -> T) throws(Failure) -> T {
        let stop = StopFlag()
        let stopped = DispatchSemaphore(value: 0)
        Thread.detachNewThread { [self] in
            while !stop.isSet {
                releaseMappedPages(beyond: budget)
                usleep(2_000)
            }
            stopped.signal()
        }
        defer {
            stop.set()
            stopped.wait()
        }
        return try body()
    }

    private final class StopFlag: Sendable {
        private let flag = Atomic<Bool>(false)
        var isSet: Bool { flag.load(ordering: .acquiring) }
        func set() { flag.store(true, ordering: .releasing) }
    }

    /// `/proc/self/statm`, kept open: it is read again and again.
    private static let statm = open("/proc/self/statm", O_RDONLY)

    /// File-backed resident memory of this process (`shared` in `/proc/self/statm`),
    /// read without Foundation or allocations: it is asked often.
    private static func residentFileBackedBytes() -> Int? {
        guard statm >= 0 else { return nil }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 128) { buffer -> Int? in
            let count = pread(statm, buffer.baseAddress, buffer.count, 0)
            guard count > 0 else { return nil }
            // "size resident shared text lib data dt", in pages: the third number.
            var field = 0
            var pages = 0
            for byte in buffer[..<count] {
                if byte == UInt8(ascii: " ") {
                    field += 1
                    if field > 2 { break }
                } else if field == 2 {
                    guard byte &- UInt8(ascii: "0") < 10 else { return nil }
                    pages = pages * 10 + Int(byte - UInt8(ascii: "0"))
                }
            }
            return field > 2 ? pages * Int(sysconf(Int32(_SC_PAGESIZE))) : nil
        }
    }

    /// Where the data file is mapped, from `/proc/self/maps` (`mdb_env_info`
    /// reports the address only for `MDB_FIXEDMAP`). Nil where that is not available.
    package static func mapRange(of directory: String) -> (UInt, Int)? {
        let dataFile = URL(fileURLWithPath: directory).appendingPathComponent("data.mdb").resolvingSymlinksInPath().path
        guard let maps = try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8) else { return nil }
        for line in maps.split(separator: "\n") where line.hasSuffix(" " + dataFile) {
            let bounds = line.prefix { $0 != " " }.split(separator: "-")
            guard bounds.count == 2, let start = UInt(bounds[0], radix: 16), let end = UInt(bounds[1], radix: 16), end > start else { continue }
            return (start, Int(end - start))
        }
        return nil
    }
}
