import Foundation
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

    /// The records of the log at `path`.
    static func read(_ path: String) throws -> [TraceEvent] {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var events: [TraceEvent] = []
        var at = 0
        func u32(_ offset: Int) -> Int { bytes[offset..<offset + 4].reversed().reduce(0) { $0 << 8 | Int($1) } }
        func i64(_ offset: Int) -> Int64 { Int64(bitPattern: bytes[offset..<offset + 8].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }) }
        while at + 48 <= bytes.count {
            let size = u32(at)
            guard size >= 48, at + size <= bytes.count, let kind = TraceEvent.Kind(rawValue: bytes[at + 4]) else { break }
            let (pathLength, path2Length, dataLength) = (u32(at + 32), u32(at + 36), u32(at + 40))
            let pathStart = at + 48, path2Start = pathStart + pathLength, dataStart = path2Start + path2Length
            guard dataStart + dataLength == at + size else { break }
            events.append(TraceEvent(at: at, kind: kind, pid: Int32(truncatingIfNeeded: u32(at + 8)), flags: UInt32(u32(at + 12)), a: i64(at + 16), b: i64(at + 24),
                                     path: String(decoding: bytes[pathStart..<path2Start], as: UTF8.self),
                                     path2: String(decoding: bytes[path2Start..<dataStart], as: UTF8.self),
                                     data: Array(bytes[dataStart..<dataStart + dataLength])))
            at += size
        }
        return events
    }
}
