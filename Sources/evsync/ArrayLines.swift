import EventStore
import Foundation

/// Rewrites a JSON array as JSON Lines, one element a line, into a spool file
/// for the store's import, a block at a time: memory stays small whatever
/// the array's size (it used to be parsed whole, several times its size).
///
/// The elements are copied, not parsed: the import parses each line, and its
/// errors name the line, which is the element's number. Only what keeps an
/// element on one line is done here: white space between tokens becomes a
/// space, and a raw control character inside a string (invalid JSON, which a
/// line break would hide) is refused as the import would refuse it. The
/// array itself (brackets, commas, text after it) is checked here, before
/// anything is imported.
struct ArrayLines {
    /// Where the scan stands in the array.
    private enum State {
        case beforeArray, beforeFirstElement, beforeElement, inElement, afterElement, afterArray
    }

    private var state = State.beforeArray
    private var depth = 0
    private var inString = false
    private var escaped = false
    private var element = 0
    private var line: [UInt8] = []
    private var output: [UInt8] = []
    private let file: Int32

    private init(file: Int32) {
        self.file = file
    }

    /// A new spool file in the store's directory holding the array in `descriptor`, from its start,
    /// as JSON Lines; open at its start.
    static func spool(_ descriptor: Int32, store: Store) throws -> Int32 {
        let file = try store.spoolFile()
        do {
            var lines = ArrayLines(file: file)
            try lines.convert(descriptor)
            guard lseek(file, 0, SEEK_SET) == 0 else { throw CLIError(.failure, "cannot read back the spooled input: \(String(cString: strerror(errno)))") }
            return file
        } catch {
            Foundation.close(file)
            throw error
        }
    }

    private mutating func convert(_ descriptor: Int32) throws {
        var block = [UInt8](repeating: 0, count: 1 << 20)
        var offset: off_t = 0
        var first = true
        while true {
            let count = block.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, offset) }
            if count < 0 {
                if errno == EINTR { continue }
                throw CLIError(.failure, "cannot read input: \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            offset += off_t(count)
            // A UTF-8 byte order mark may start the file.
            let start = first && block.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
            first = false
            for byte in block[start..<count] { try take(byte) }
            if output.count >= 1 << 20 { try flush() }
        }
        switch state {
        case .afterArray: try flush()
        case .beforeArray: throw Self.notAnArray("it is empty")
        default: throw Self.notAnArray("unexpected end of input")
        }
    }

    private static func notAnArray(_ reason: String) -> CLIError {
        CLIError(.dataError, "not a JSON array: \(reason)")
    }

    private static func isWhiteSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    private mutating func take(_ byte: UInt8) throws {
        switch state {
        case .beforeArray:
            if Self.isWhiteSpace(byte) { return }
            guard byte == UInt8(ascii: "[") else { throw Self.notAnArray("it does not start with '['") }
            state = .beforeFirstElement
        case .beforeFirstElement, .beforeElement:
            if Self.isWhiteSpace(byte) { return }
            if byte == UInt8(ascii: "]"), state == .beforeFirstElement { state = .afterArray; return }
            guard byte != UInt8(ascii: "]"), byte != UInt8(ascii: ",") else {
                throw Self.notAnArray("expected an element after '\(state == .beforeElement ? "," : "[")'")
            }
            element += 1
            state = .inElement
            try copy(byte)
        case .inElement:
            try copy(byte)
        case .afterElement:
            if Self.isWhiteSpace(byte) { return }
            if byte == UInt8(ascii: ",") { state = .beforeElement; return }
            if byte == UInt8(ascii: "]") { state = .afterArray; return }
            throw Self.notAnArray("expected ',' or ']' after element \(element)")
        case .afterArray:
            guard Self.isWhiteSpace(byte) else { throw Self.notAnArray("text after the array") }
        }
    }

    /// One byte of the current element, on its line; ends the element where it ends.
    private mutating func copy(_ byte: UInt8) throws {
        if inString {
            // Escaped or not, a raw control character is invalid there, and a line break would split the element.
            if byte < 0x20 {
                throw CLIError(.dataError, "element \(element): a control character in a string (it must be escaped)")
            }
            if escaped {
                escaped = false
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
            } else if byte == UInt8(ascii: "\"") {
                inString = false
            }
            line.append(byte)
            return
        }
        switch byte {
        case UInt8(ascii: "\""):
            inString = true
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            depth += 1
        case UInt8(ascii: "}"), UInt8(ascii: "]"):
            // A scalar element ends at the array's own bracket; a container at its closing one.
            if depth == 0 { endElement(); return try take(byte) }
            depth -= 1
            line.append(byte)
            if depth == 0 { endElement() }
            return
        case UInt8(ascii: ",") where depth == 0:
            endElement()
            return try take(byte)
        case _ where Self.isWhiteSpace(byte):
            line.append(0x20)
            return
        default:
            break
        }
        line.append(byte)
    }

    private mutating func endElement() {
        output += line
        output.append(0x0A)
        line.removeAll(keepingCapacity: true)
        state = .afterElement
    }

    private mutating func flush() throws {
        try output.withUnsafeBytes { bytes in
            var written = 0
            while written < bytes.count, let base = bytes.baseAddress {
                let result = Foundation.write(file, base + written, bytes.count - written)
                if result < 0 {
                    if errno == EINTR { continue }
                    // A full device is exit 73, as for the store itself.
                    throw CLIError(errno == ENOSPC || errno == EDQUOT ? .cannotWrite : .failure,
                                   "cannot spool the input: \(String(cString: strerror(errno)))")
                }
                written += result
            }
        }
        output.removeAll(keepingCapacity: true)
    }
}
