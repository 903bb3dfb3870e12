internal import CZstd
import Foundation

/// An archive segment: events a compaction moved out of the live log, byte for byte as the log stored them,
/// in zstd blocks, with an index of the blocks and a footer carrying the seal.
///
/// ```text
/// "EVSARCH1"  storeID length (u16)  storeID
/// block…      compressed length (u32)  raw length (u32)  zstd frame of [seq (u64)  length (u32)  event bytes]…
/// index       per block: offset (u64)  first seq (u64)  count (u32)
/// footer      index offset (u64)  blocks (u32)  first (u64)  last (u64)  count (u64)  SHA-256 (32)  "EVSARCHE"
/// ```
/// All integers big-endian. The seal is one SHA-256 over the store's id and then, in log order, each event's
/// seq, length and bytes. Not a Merkle tree: a segment is only ever checked whole (`log verify` reads every
/// event anyway), and nothing asks to prove one event without the rest, so a tree would buy nothing but size.
/// Order is in the hash, so a reordering changes it; seqs must also rise, so one is named as such.
struct ArchiveSegment {
    static let magic = Array("EVSARCH1".utf8)
    static let endMagic = Array("EVSARCHE".utf8)
    static let footerSize = 8 + 4 + 8 + 8 + 8 + 32 + 8
    /// Events are compressed together in blocks of about this many bytes: large enough for zstd to find the
    /// repetition between events (field names, ids, authors), small enough that reading one record's history
    /// decompresses little beside it.
    static let blockSize = 64 * 1024

    struct Block {
        let offset: UInt64
        let first: UInt64
        let count: UInt32
    }

    let path: String
    let storeID: String
    let seal: ArchiveSeal
    let blocks: [Block]
    private let file: FileHandle
    private let indexOffset: UInt64

    /// Opens a segment and reads its footer and index (not its events: `verify` reads those).
    init(path: String) throws(ArchiveSegmentError) {
        self.path = path
        guard let file = FileHandle(forReadingAtPath: path) else { throw .missing(path) }
        self.file = file
        let size: UInt64
        do { size = try file.seekToEnd() } catch { throw .unreadable(path, "\(error)") }
        guard size >= UInt64(Self.magic.count) else { throw size == 0 ? .truncated(path) : .notASegment(path) }
        let head = try Self.read(file, at: 0, count: min(Int(size), Self.magic.count + 2 + 255), path: path)
        guard head.starts(with: Self.magic) else { throw .notASegment(path) }
        guard size >= UInt64(Self.magic.count + 2 + Self.footerSize), head.count >= Self.magic.count + 2 else { throw .truncated(path) }
        let storeID = try Self.parse(head, else: { _ in .truncated(path) }) { reader throws(BinaryReadError) in
            _ = try reader.take(Self.magic.count, "magic")
            return try String(decoding: reader.take(Int(reader.u16("store id's length")), "store id"), as: UTF8.self)
        }
        self.storeID = storeID
        let idLength = storeID.utf8.count
        let footer = try Self.read(file, at: size - UInt64(Self.footerSize), count: Self.footerSize, path: path)
        let (indexOffset, blockCount, first, last, count, hash, endMagic) = try Self.parse(footer, else: { _ in .truncated(path) }) {
            reader throws(BinaryReadError) in
            (try reader.u64("index offset"), try reader.u32("block count"), try reader.u64("first seq"), try reader.u64("last seq"),
             try reader.u64("event count"), Array(try reader.take(32, "seal")), Array(try reader.take(8, "end magic")))
        }
        guard endMagic == Self.endMagic else { throw .truncated(path) }
        let indexSize = UInt64(blockCount) * 20
        guard indexOffset >= UInt64(10 + idLength), indexOffset <= size - UInt64(Self.footerSize),
              size - UInt64(Self.footerSize) - indexOffset == indexSize else { throw .altered(path, "its index is not where its footer says") }
        let index = try Self.read(file, at: indexOffset, count: Int(indexSize), path: path)
        blocks = try Self.parse(index, else: { .altered(path, "its index cannot be read: \($0)") }) { reader throws(BinaryReadError) in
            var blocks: [Block] = []
            for _ in 0..<blockCount {
                blocks.append(Block(offset: try reader.u64("block offset"), first: try reader.u64("block's first seq"),
                                    count: try reader.u32("block's event count")))
            }
            return blocks
        }
        self.indexOffset = indexOffset
        seal = ArchiveSeal(first: first, last: last, count: count, sha256: hash, bytes: size)
    }

    /// Calls `body` with each event in log order, until it returns false; checks each block as it goes.
    func forEach(_ body: (UInt64, ArraySlice<UInt8>) throws -> Bool) throws {
        for number in blocks.indices {
            let events = try events(inBlock: number)
            for (seq, bytes) in events where try !body(seq, bytes) { return }
        }
    }

    /// The events with the given seqs that the segment holds, reading only the blocks that hold them.
    func events(_ seqs: some Sequence<UInt64>) throws -> [UInt64: [UInt8]] {
        var wanted: [Int: Set<UInt64>] = [:]
        for seq in seqs {
            guard let block = blocks.lastIndex(where: { $0.first <= seq }) else { continue }
            wanted[block, default: []].insert(seq)
        }
        var found: [UInt64: [UInt8]] = [:]
        for (block, seqs) in wanted {
            for (seq, bytes) in try events(inBlock: block) where seqs.contains(seq) { found[seq] = Array(bytes) }
        }
        return found
    }

    /// Checks, before any event is read, that this is the segment a compaction of `store` sealed with `expected`:
    /// that store's, with that seal (range, count, hash and size) in its footer. What every reader of the archive
    /// asks first (`ArchiveReader`): another store's segment, or an older one of this store's kept across a
    /// restore from a backup, is refused, never read as this store's past. `verify` also reads the events.
    func check(store: String, against expected: ArchiveSeal) throws(ArchiveSegmentError) {
        guard store == storeID else { throw .foreignStore(path, storeID) }
        guard seal == expected else { throw .mismatch(path) }
    }

    /// Reads every event, checking the segment against its own footer, and against `expected` (the seal the
    /// live log recorded) and `store` when given. Returns the seqs it holds.
    @discardableResult
    func verify(against expected: ArchiveSeal? = nil, store: String? = nil) throws(ArchiveSegmentError) -> [UInt64] {
        if let store, store != storeID { throw .foreignStore(path, storeID) }
        var hasher = SHA256()
        hasher.update(Array(storeID.utf8))
        var seqs: [UInt64] = []
        seqs.reserveCapacity(Int(min(seal.count, 10_000_000)))
        var previous: UInt64 = 0
        do {
            for number in blocks.indices {
                let events = try events(inBlock: number)
                guard events.count == Int(blocks[number].count), events.first?.0 == blocks[number].first else {
                    throw ArchiveSegmentError.altered(path, "block \(number + 1) does not hold what the index says")
                }
                for (seq, bytes) in events {
                    guard seq > previous else { throw ArchiveSegmentError.reordered(path, seq) }
                    previous = seq
                    hasher.update(Self.eventHeader(seq: seq, length: bytes.count))
                    hasher.update(bytes)
                    seqs.append(seq)
                }
            }
        } catch let error as ArchiveSegmentError {
            throw error
        } catch {
            throw .unreadable(path, "\(error)")
        }
        guard hasher.finalize() == seal.sha256, UInt64(seqs.count) == seal.count, seqs.first ?? 0 == seal.first,
              seqs.last ?? 0 == seal.last else { throw .altered(path, "its events do not match its own seal") }
        if let expected, expected.sha256 != seal.sha256 || expected.first != seal.first || expected.last != seal.last
            || expected.count != seal.count { throw .mismatch(path) }
        return seqs
    }

    private func events(inBlock number: Int) throws(ArchiveSegmentError) -> [(UInt64, ArraySlice<UInt8>)] {
        let block = blocks[number]
        let end = number + 1 < blocks.count ? blocks[number + 1].offset : indexOffset
        guard end > block.offset + 8 else { throw .altered(path, "block \(number + 1) is out of place") }
        let stored = try Self.read(file, at: block.offset, count: Int(end - block.offset), path: path)
        let (compressedLength, rawLength) = try Self.parse(stored, else: { _ in .altered(path, "block \(number + 1) is out of place") }) {
            reader throws(BinaryReadError) in (Int(try reader.u32("compressed length")), Int(try reader.u32("raw length")))
        }
        guard compressedLength == stored.count - 8, rawLength <= 64 * Self.blockSize + 16 * 1024 * 1024 else {
            throw .altered(path, "block \(number + 1) has the wrong length")
        }
        var raw = [UInt8](repeating: 0, count: rawLength)
        let result = raw.withUnsafeMutableBytes { output in
            stored.withUnsafeBytes { input in
                ZSTD_decompress(output.baseAddress, rawLength, input.baseAddress! + 8, compressedLength)
            }
        }
        guard ZSTD_isError(result) == 0, result == rawLength else { throw .altered(path, "block \(number + 1) does not decompress") }
        let ranges = try Self.parse(raw, else: { .altered(path, "block \(number + 1) ends inside an event (\($0))") }) { reader throws(BinaryReadError) in
            var ranges: [(UInt64, Range<Int>)] = []
            while !reader.isAtEnd {
                let seq = try reader.u64("seq"), length = Int(try reader.u32("length of event \(seq)"))
                let start = reader.offset
                _ = try reader.take(length, "event \(seq)")
                ranges.append((seq, start..<reader.offset))
            }
            return ranges
        }
        return ranges.map { ($0.0, raw[$0.1]) }
    }

    /// What precedes each event in a block, and in the seal's hash: its seq and its length.
    static func eventHeader(seq: UInt64, length: Int) -> [UInt8] {
        var header = BinaryWriter(reservingCapacity: 12)
        header.u64(seq)
        header.u32(UInt32(length))
        return header.bytes
    }

    /// Reads `bytes` with `body`, a read past their end being `failure`.
    private static func parse<T>(_ bytes: [UInt8], else failure: (BinaryReadError) -> ArchiveSegmentError,
                                 _ body: (inout BinaryReader) throws(BinaryReadError) -> T) throws(ArchiveSegmentError) -> T {
        do throws(BinaryReadError) { return try BinaryReader.reading(bytes, body) } catch { throw failure(error) }
    }

    private static func read(_ file: FileHandle, at offset: UInt64, count: Int, path: String) throws(ArchiveSegmentError) -> [UInt8] {
        do {
            try file.seek(toOffset: offset)
            let data = try file.read(upToCount: count) ?? Data()
            guard data.count == count else { throw ArchiveSegmentError.truncated(path) }
            return Array(data)
        } catch let error as ArchiveSegmentError {
            throw error
        } catch {
            throw .unreadable(path, "\(error)")
        }
    }
}

/// What seals a segment: its range, count and hash, as the `compacted` event records them (`ArchiveInfo`).
struct ArchiveSeal: Equatable {
    var first: UInt64
    var last: UInt64
    var count: UInt64
    var sha256: [UInt8]
    /// The file's size.
    var bytes: UInt64

    init(first: UInt64, last: UInt64, count: UInt64, sha256: [UInt8], bytes: UInt64) {
        (self.first, self.last, self.count, self.sha256, self.bytes) = (first, last, count, sha256, bytes)
    }

    init?(_ info: ArchiveInfo) {
        guard let hash = Self.bytes(hex: info.sha256) else { return nil }
        self.init(first: info.first, last: info.last, count: info.count, sha256: hash, bytes: info.bytes)
    }

    var hex: String { sha256.map { String(format: "%02x", $0) }.joined() }

    private static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count == 64 else { return nil }
        return stride(from: 0, to: 64, by: 2).compactMap { UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16) }
    }
}

/// Why a segment cannot be read or does not match its seal, naming the file.
public enum ArchiveSegmentError: Error, Sendable, Equatable, CustomStringConvertible {
    case missing(String)
    case unreadable(String, String)
    case notASegment(String)
    case truncated(String)
    case altered(String, String)
    case reordered(String, UInt64)
    case foreignStore(String, String)
    case mismatch(String)

    public var description: String {
        switch self {
        case .missing(let path): "the archive segment \(path) is missing"
        case .unreadable(let path, let why): "the archive segment \(path) cannot be read: \(why)"
        case .notASegment(let path): "\(path) is not an evsync archive segment"
        case .truncated(let path): "the archive segment \(path) is cut short"
        case .altered(let path, let why): "the archive segment \(path) was altered: \(why)"
        case .reordered(let path, let seq): "the archive segment \(path) holds its events out of order (event \(seq))"
        case .foreignStore(let path, let store): "the archive segment \(path) belongs to another store (\(store))"
        case .mismatch(let path): "the archive segment \(path) is whole but is not the one this store sealed"
        }
    }
}

/// Writes a segment: events appended in log order, compressed a block at a time; `finish` writes the index
/// and footer and flushes the file.
struct ArchiveSegmentWriter {
    private let path: String
    private let descriptor: Int32
    private let storeID: String
    private var hasher = SHA256()
    private let compressor: Compressor
    private var block = BinaryWriter()
    private var blockFirst: UInt64 = 0
    private var blockCount: UInt32 = 0
    private var index: [ArchiveSegment.Block] = []
    private var offset: UInt64 = 0
    private var first: UInt64 = 0
    private var last: UInt64 = 0
    private var count: UInt64 = 0

    init(path: String, storeID: String) throws(StoreError) {
        self.path = path
        self.storeID = storeID
        compressor = try Compressor(path: path)
        descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw Self.failure("creating", path) }
        var head = BinaryWriter()
        head.append(ArchiveSegment.magic)
        let id = Array(storeID.utf8.prefix(255))
        head.u16(UInt16(id.count))
        head.append(id)
        try write(head.bytes)
        hasher.update(id)
    }

    mutating func append(seq: UInt64, event: some Collection<UInt8>) throws(StoreError) {
        if count == 0 { first = seq }
        last = seq
        count += 1
        if blockCount == 0 { blockFirst = seq }
        let header = ArchiveSegment.eventHeader(seq: seq, length: event.count)
        hasher.update(header)
        hasher.update(event)
        block.append(header)
        block.append(event)
        blockCount += 1
        if block.bytes.count >= ArchiveSegment.blockSize { try flushBlock() }
    }

    /// Writes the rest, the index and the footer; flushes and closes the file; returns the seal.
    mutating func finish() throws(StoreError) -> ArchiveSeal {
        try flushBlock()
        let indexOffset = offset
        var tail = BinaryWriter()
        for entry in index {
            tail.u64(entry.offset)
            tail.u64(entry.first)
            tail.u32(entry.count)
        }
        let hash = hasher.finalize()
        tail.u64(indexOffset)
        tail.u32(UInt32(index.count))
        tail.u64(first)
        tail.u64(last)
        tail.u64(count)
        tail.append(hash)
        tail.append(ArchiveSegment.endMagic)
        try write(tail.bytes)
        guard fsync(descriptor) == 0 else { throw Self.failure("flushing", path) }
        close(descriptor)
        return ArchiveSeal(first: first, last: last, count: count, sha256: hash, bytes: offset)
    }

    private mutating func flushBlock() throws(StoreError) {
        guard blockCount > 0 else { return }
        let raw = block.bytes
        var compressed = [UInt8](repeating: 0, count: ZSTD_compressBound(raw.count))
        let size = compressed.withUnsafeMutableBytes { output in
            raw.withUnsafeBytes { ZSTD_compressCCtx(compressor.context, output.baseAddress, output.count, $0.baseAddress, raw.count, 3) }
        }
        guard ZSTD_isError(size) == 0 else {
            throw StoreError(.failure, "could not compress the archive segment \(path): \(String(cString: ZSTD_getErrorName(size)))")
        }
        index.append(.init(offset: offset, first: blockFirst, count: blockCount))
        var header = BinaryWriter()
        header.u32(UInt32(size))
        header.u32(UInt32(raw.count))
        try write(header.bytes)
        try write(compressed[0..<size])
        block = BinaryWriter()
        blockCount = 0
    }

    private mutating func write(_ bytes: some Collection<UInt8>) throws(StoreError) {
        let bytes = Array(bytes)
        var done = 0
        while done < bytes.count {
            let written = bytes.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress! + done, bytes.count - done) }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { throw Self.failure("writing", path) }
            done += written
        }
        offset += UInt64(bytes.count)
    }

    private static func failure(_ doing: String, _ path: String) -> StoreError {
        let code = errno
        let kind: StoreError.Code = code == ENOSPC || code == EDQUOT ? .diskFull : code == EROFS || code == EACCES ? .readOnly : .failure
        return StoreError(kind, "\(doing) the archive segment \(path) failed: \(String(cString: strerror(code)))")
    }
}

/// One zstd compression context for all of a segment's blocks: `ZSTD_compress` makes and frees one for each.
private final class Compressor {
    let context: OpaquePointer

    init(path: String) throws(StoreError) {
        guard let context = ZSTD_createCCtx() else { throw StoreError(.failure, "could not compress the archive segment \(path): out of memory") }
        self.context = context
    }

    deinit { ZSTD_freeCCtx(context) }
}
