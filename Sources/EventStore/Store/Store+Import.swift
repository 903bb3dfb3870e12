import Foundation
// `struct stat` (for `fstat`): with MemberImportVisibility, its members count
// as declared by whichever of these modules the compiler met it in first,
// which differs between debug and release builds.
#if canImport(Glibc)
import Glibc
#endif
#if canImport(CDispatch)
import CDispatch
import Storage
#endif

extension Store {
    /// Records the worker parses before handing them over as one chunk.
    static let importChunk = 100_000

    /// What an imported record writes besides its bytes in `EncodedCreations`: its key in the outbox and
    /// its history entry's value, with LMDB's node headers.
    static let importedBytesBesidesChunk = 96

    /// Pages of the store an imported record may copy: a path of up to four pages down each of the four
    /// trees it is written to (the log, `records`, `history`, the outbox).
    static let pagesTouchedPerRecord = 16

    /// Imports JSON Lines (one object per line: the fields, and optionally `id`) from a file descriptor.
    ///
    /// The whole import is one write transaction, so it is all or nothing.
    /// Two threads share the work: a worker parses, validates and encodes the
    /// lines, chunk by chunk, while this thread appends the previous chunk to
    /// the log and folds it into the views. The first bad line (a bad record,
    /// or an id malformed or already taken, in the store or earlier in the
    /// input) throws, naming the line, which aborts the transaction. Blank
    /// lines are skipped. Returns the number of records imported.
    ///
    /// On a store opened with `init(importingInto:)` the transaction's pages
    /// are written in place and memory stays near 200 MiB at any size; on one
    /// opened otherwise LMDB holds them in memory, up to 512 MiB.
    ///
    /// Input that is not a regular file (a pipe, a terminal) is first copied
    /// to its end into a temporary file (see `spool`), and imported from
    /// there: the write lock, which every writer of the store waits for, is
    /// never held while a slow producer is waited on.
    ///
    /// Records of an entity the server lets this account only read are refused, as `write`'s changes are,
    /// unless `overridingReadOnly`.
    public func importRecords(_ entityName: String, from descriptor: Int32, overridingReadOnly: Bool = false) throws(StoreError) -> Int {
        let schema = try entity(entityName)
        if !overridingReadOnly { try refuseIfReadOnly(schema) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw StoreError(.failure, "cannot read input: \(String(cString: strerror(errno)))")
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            let spooled = try spool(descriptor)
            defer { close(spooled) }
            return try importRecords(schema, from: spooled)
        }
        return try importRecords(schema, from: descriptor)
    }

    /// Copies `descriptor` to its end into a new file in the store's
    /// directory, unlinked at once (so nothing is left behind, whatever
    /// happens), and returns that file, open at its start. The store's
    /// directory is on disk and has room for what is about to be imported
    /// into it; memory holds one block at a time. The bytes are copied as
    /// they are, so errors still name the input's lines.
    public func spool(_ descriptor: Int32) throws(StoreError) -> Int32 {
        let file = try spoolFile()
        var block = [UInt8](repeating: 0, count: 1 << 20)
        let failure: StoreError? = block.withUnsafeMutableBytes { buffer in
            while true {
                let count = Foundation.read(descriptor, buffer.baseAddress, buffer.count)
                if count < 0 {
                    if errno == EINTR { continue }
                    return StoreError(.failure, "cannot read input: \(String(cString: strerror(errno)))")
                }
                if count == 0 { return nil }
                var written = 0
                while written < count {
                    let result = Foundation.write(file, buffer.baseAddress! + written, count - written)
                    if result < 0 {
                        if errno == EINTR { continue }
                        let code: StoreError.Code = errno == ENOSPC || errno == EDQUOT ? .diskFull : .failure
                        return StoreError(code, "cannot spool the input to \(directory): \(String(cString: strerror(errno)))",
                                          directory: directory)
                    }
                    written += result
                }
            }
        }
        if let failure {
            close(file)
            throw failure
        }
        guard lseek(file, 0, SEEK_SET) == 0 else {
            let failure = StoreError(.failure, "cannot read back the spooled input: \(String(cString: strerror(errno)))")
            close(file)
            throw failure
        }
        return file
    }

    /// A new empty file in the store's directory, unlinked at once (so nothing
    /// is left behind, whatever happens), open for reading and writing: where
    /// input to import is copied or rewritten first (see `spool`).
    public func spoolFile() throws(StoreError) -> Int32 {
        var template = Array("\(directory)/import-spool.XXXXXX".utf8CString)
        let file = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard file >= 0 else {
            throw StoreError(.failure, "cannot create a spool file in \(directory): \(String(cString: strerror(errno)))")
        }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        return file
    }

    private func importRecords(_ schema: EntitySchema, from descriptor: Int32) throws(StoreError) -> Int {
        let (at, author) = (clock(), author)
        guard environment.writesInPlace else { return try importRecords(schema, from: descriptor, at: at, author: author) }
        defer { try? environment.trimFile() }
        return try environment.keepingMappedPages(under: Self.mappedPageBudget) { () throws(StoreError) -> Int in
            try importRecords(schema, from: descriptor, at: at, author: author)
        }
    }

    private func importRecords(_ schema: EntitySchema, from descriptor: Int32, at: Int64, author: String) throws(StoreError) -> Int {
        try writeLog { appender in
            let firstSeq = appender.nextSeq
            let at = try appender.stamp(at)
            var imported = 0
            // Written in place, the pages a chunk dirties need their disk blocks first (`Environment.reserveFile`):
            // twice what the chunk adds, and a copy of each page of the store it may touch (a path down each
            // tree a record is written to), never more than the store's size in all.
            var reserved = environment.usedFileBytes
            var uncopied = reserved
            try Pipeline<EncodedCreations>().run(produce: { emit in
                var chunk = EncodedCreations()
                var lines = ImportedLines(schema: schema, at: at, author: author)
                var seq = firstSeq
                var number = 0
                do {
                    try LineReader(descriptor: descriptor).forEachLine { line in
                        number += 1
                        guard line.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) else { return }
                        try lines.append(line, number: number, seq: seq, to: &chunk)
                        seq += 1
                        if chunk.count >= Self.importChunk {
                            guard emit(chunk) else { throw CancellationError() }
                            chunk = EncodedCreations(reservingBytes: chunk.bytes.count)
                        }
                    }
                } catch is CancellationError {
                    return
                } catch {
                    // The lines before the bad one may hold an earlier error (an id already taken).
                    _ = emit(chunk)
                    throw error
                }
                _ = emit(chunk)
            }, consume: { chunk in
                if environment.writesInPlace {
                    let copies = min(uncopied, chunk.count * Self.pagesTouchedPerRecord * environment.pageSize)
                    uncopied -= copies
                    reserved += copies + 2 * (chunk.bytes.count + chunk.count * Self.importedBytesBesidesChunk)
                    try environment.reserveFile(upTo: reserved)
                }
                if let taken = try appender.append(chunk) {
                    throw StoreError(.invalidData, "line \(taken.line): \(schema.name) '\(chunk.recordID(of: taken))' already exists")
                }
                imported += chunk.count
                // Pages read or written so far need not stay mapped: see `Environment.releaseMappedPages`.
                environment.releaseMappedPages()
                return true
            })
            return imported
        }
    }
}

/// Reads a file descriptor in large blocks and hands out one line at a time,
/// without the newline, as a buffer valid only during the call.
struct LineReader {
    let descriptor: Int32
    var blockSize = 1 << 22

    func forEachLine(_ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        var pending: [UInt8] = []
        var block = [UInt8](repeating: 0, count: blockSize)
        while true {
            let count = block.withUnsafeMutableBytes { Foundation.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw StoreError(.failure, "cannot read input: \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            try block.withUnsafeBytes { buffer in
                let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
                // memchr, not firstIndex(of:): it is the scan every byte of the input goes through.
                func nextNewline(from start: Int) -> Int? {
                    guard start < count, let base = chunk.baseAddress,
                          let found = memchr(base + start, 0x0A, count - start) else { return nil }
                    return base.distance(to: UnsafeRawPointer(found))
                }
                var start = 0
                while let newline = nextNewline(from: start) {
                    if pending.isEmpty {
                        try body(UnsafeRawBufferPointer(rebasing: chunk[start..<newline]))
                    } else {
                        pending.append(contentsOf: chunk[start..<newline])
                        try pending.withUnsafeBytes { try body($0) }
                        pending.removeAll(keepingCapacity: true)
                    }
                    start = newline + 1
                }
                pending.append(contentsOf: chunk[start...])
            }
        }
        if !pending.isEmpty { try pending.withUnsafeBytes { try body($0) } }
    }
}
