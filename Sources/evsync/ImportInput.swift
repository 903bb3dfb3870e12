import EventStore
import Foundation

/// What `import` reads: JSON Lines as given, or a JSON array (what `list --json`
/// prints), which is rewritten as JSON Lines, one element a line, for the store's import (`ArrayLines`).
struct ImportInput {
    /// A regular file, at its start, holding JSON Lines.
    let descriptor: Int32
    /// Whether the input was a JSON array (its line numbers are then element numbers).
    let isArray: Bool
    private let owned: Bool

    /// Input that is not a regular file (a pipe) is first spooled into the store's directory
    /// (as the store's import would do anyway), so its first byte can be looked at.
    init(_ input: Int32, store: Store) throws {
        var status = stat()
        guard fstat(input, &status) == 0 else { throw CLIError(.failure, "cannot read input: \(String(cString: strerror(errno)))") }
        var descriptor = input
        var owned = false
        if status.st_mode & S_IFMT != S_IFREG {
            descriptor = try store.spool(input)
            owned = true
        }
        guard Self.startsWithArray(descriptor) else {
            (self.descriptor, self.isArray, self.owned) = (descriptor, false, owned)
            return
        }
        defer { if owned { Foundation.close(descriptor) } }
        // Written to another spool file, so the store's import (and its memory) is the same for both forms.
        (self.descriptor, self.isArray, self.owned) = (try ArrayLines.spool(descriptor, store: store), true, true)
    }

    func close() { if owned { Foundation.close(descriptor) } }

    /// Whether the first byte that is not white space (after a UTF-8 byte order mark) is `[`.
    private static func startsWithArray(_ descriptor: Int32) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var offset: off_t = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, offset) }
            guard count > 0 else { return false }
            for (index, byte) in buffer[..<count].enumerated() {
                if offset == 0, index < 3, [0xEF, 0xBB, 0xBF][index] == byte { continue }
                if [0x20, 0x09, 0x0A, 0x0D].contains(byte) { continue }
                return byte == UInt8(ascii: "[")
            }
            offset += off_t(count)
        }
    }

    /// An import error as `FILE:LINE: message` (JSON Lines) or `FILE: element N: message` (an array).
    func locate(_ error: CLIError, in name: String) -> CLIError {
        let message = error.message
        guard message.hasPrefix("line ") else { return error }
        let rest = message.dropFirst("line ".count)
        guard let colon = rest.firstIndex(of: ":"), let number = Int(rest[..<colon]) else { return error }
        let detail = rest[rest.index(after: colon)...]
        let file = Output.safe(name)
        return CLIError(error.code, isArray ? "\(file): element \(number):\(detail)" : "\(file):\(number):\(detail)")
    }
}

/// `importing FILE: 45% (12 of 27 MB)` on stderr while a large file is read, on a terminal only.
final class ImportProgress: @unchecked Sendable {
    private let timer: any DispatchSourceTimer
    /// The timer's queue, serial: `stop` waits on it for a handler that is running.
    private let queue = DispatchQueue(label: "evsync.import-progress")

    /// Starts showing progress if stderr is a terminal and the input is large enough to wait for.
    static func start(name: String, descriptor: Int32) -> ImportProgress? {
        var status = stat()
        guard isatty(STDERR_FILENO) == 1, fstat(descriptor, &status) == 0, status.st_size >= 1 << 20 else { return nil }
        return ImportProgress(name: Output.safe(name), descriptor: descriptor, size: Int64(status.st_size))
    }

    private init(name: String, descriptor: Int32, size: Int64) {
        timer = DispatchSource.makeTimerSource(queue: queue)
        // The store reads the file from its start, in order: the descriptor's offset is how far it got.
        let show = {
            let read = min(max(Int64(lseek(descriptor, 0, SEEK_CUR)), 0), size)
            let megabytes = { (bytes: Int64) in String(format: "%.0f", Double(bytes) / 1_048_576) }
            let line = read >= size ? "importing \(name): read, writing to the store…"
                : "importing \(name): \(read * 100 / size)% (\(megabytes(read)) of \(megabytes(size)) MB)"
            FileHandle.standardError.write(Data("\r\u{1B}[K\(line)".utf8))
        }
        show()
        timer.setEventHandler(handler: show)
        timer.schedule(deadline: .now() + 0.2, repeating: 0.2)
        timer.resume()
    }

    func stop() {
        timer.cancel()
        // The handler runs on its queue: wait for a redraw under way before clearing its line,
        // or the line would come back over the message that follows.
        queue.sync {}
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
}
