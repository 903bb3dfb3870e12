import Foundation
@testable import EventStore
import TestSupport

/// The records `Tests/CrashTrace/crash_trace.c` writes: what processes asked of the disk for the files of one
/// directory, and what they printed, in the order it happened (docs/crash-states.md).
struct TraceEvent {
    enum Kind: UInt8 {
        case open = 1, write, truncate, flush, rename, unlink, mkdir, rmdir, output, flushAll, start, link
    }

    /// Where the record starts in the log: a flush covers the records before the log length it names.
    let at: Int
    let kind: Kind
    let pid: Int32
    let flags: UInt32
    /// The offset or size; for a flush, the log's length when it began; for an open, the inode.
    let a: Int64
    /// For an open, the size; for a flush of a range, where it starts (its length is the data).
    let b: Int64
    let path: String
    let path2: String
    let data: [UInt8]

    static let openCreate: UInt32 = 0o100, openTruncate: UInt32 = 0o1000
    static let flushDirectory: UInt32 = 1, flushRange: UInt32 = 2

    var summary: String {
        switch kind {
        case .write: "write \(path) at \(a), \(data.count) bytes (pid \(pid))"
        case .truncate: "truncate \(path) to \(a) (pid \(pid))"
        case .flush: "flush \(path)\(flags & Self.flushDirectory != 0 ? " (directory)" : "") (pid \(pid))"
        case .open: "open \(path) flags 0o\(String(flags, radix: 8)) (pid \(pid))"
        case .rename: "rename \(path) → \(path2) (pid \(pid))"
        case .link: "link \(path) → \(path2) (pid \(pid))"
        case .output: "output \(String(decoding: data, as: UTF8.self).debugDescription) (pid \(pid))"
        case .start: "start \(data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }.joined(separator: " ")) (pid \(pid))"
        default: "\(kind) \(path) (pid \(pid))"
        }
    }
}

enum CrashTrace {
    /// The shim, built by the C compiler beside the Swift toolchain into the temporary directory, once for each
    /// version of its source (named by an FNV-1a hash of it, so that runs do not leave a copy each).
    static let shim: Result<String, ShimError> = {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("CrashTrace/crash_trace.c").path
        guard let text = FileManager.default.contents(atPath: source) else { return .failure(ShimError(message: "cannot read \(source)")) }
        let hash = text.reduce(UInt64(0xcbf2_9ce4_8422_2325)) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("crash-trace-\(String(hash, radix: 16)).so").path
        if FileManager.default.fileExists(atPath: output) { return .success(output) }
        guard let compiler = ProcessRunner.which("cc") ?? ProcessRunner.which("clang") else { return .failure(ShimError(message: "no cc or clang on PATH")) }
        // Built aside and renamed into place: another test process may be building it too.
        let building = output + ".\(getpid()).building"
        do {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: compiler)
            process.arguments = ["-shared", "-fPIC", "-O1", "-o", building, source, "-ldl"]
            let errors = Pipe()
            process.standardError = errors
            try process.run()
            let message = errors.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            guard process.terminationStatus == 0, rename(building, output) == 0 else {
                return .failure(ShimError(message: "\(compiler) failed on \(source): \(String(decoding: message, as: UTF8.self))"))
            }
        } catch {
            return .failure(ShimError(message: "cannot build \(source): \(error)"))
        }
        return .success(output)
    }()

    struct ShimError: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }

    /// The records of the log at `path`, up to the first that is cut short or does not add up (a process may have
    /// died writing it). Each is a 48-byte header in the shim's order (little-endian, on the machines evsync runs
    /// on): size u32, kind u8, 3 bytes of padding, pid u32, flags u32, a i64, b i64, the three lengths u32, 4 bytes
    /// of padding; then the two paths and the data.
    static func read(_ path: String) throws -> [TraceEvent] {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        return bytes.withUnsafeBytes { buffer in
            var reader = BinaryReader(buffer)
            var events: [TraceEvent] = []
            while let event = try? record(&reader) { events.append(event) }
            return events
        }
    }

    /// The record at the reader; nil when its size does not add up or its kind is unknown.
    private static func record(_ reader: inout BinaryReader) throws(BinaryReadError) -> TraceEvent? {
        let at = reader.offset
        let size = Int(try reader.u32("record size", .littleEndian))
        let kind = try reader.byte("record kind")
        _ = try reader.take(3, "padding")
        let pid = Int32(bitPattern: try reader.u32("pid", .littleEndian)), flags = try reader.u32("flags", .littleEndian)
        let a = Int64(bitPattern: try reader.u64("a", .littleEndian)), b = Int64(bitPattern: try reader.u64("b", .littleEndian))
        let pathLength = Int(try reader.u32("path length", .littleEndian)), path2Length = Int(try reader.u32("second path length", .littleEndian))
        let dataLength = Int(try reader.u32("data length", .littleEndian))
        _ = try reader.take(4, "padding")
        let path = String(decoding: try reader.take(pathLength, "path"), as: UTF8.self)
        let path2 = String(decoding: try reader.take(path2Length, "second path"), as: UTF8.self)
        let data = Array(try reader.take(dataLength, "data"))
        guard reader.offset - at == size, let kind = TraceEvent.Kind(rawValue: kind) else { return nil }
        return TraceEvent(at: at, kind: kind, pid: pid, flags: flags, a: a, b: b, path: path, path2: path2, data: data)
    }
}
