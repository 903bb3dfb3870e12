/// Reads content lines (RFC 5545 §3.1, RFC 6350 §3.2) from bytes, and nests them into components.
///
/// Three steps: physical lines (split at LF, a CR before it dropped); logical lines (a physical line that starts
/// with a space or a tab continues the one before, without that first character); each logical line checked as
/// UTF-8 with no control characters but tab, then parsed as `[group.]name *(;param) : value`.
enum VParser {
    private struct Logical {
        var bytes: [UInt8]
        var source: [UInt8]
        let line: Int
    }

    static func parse(_ input: [UInt8]) throws(VCodecError) -> [VComponent] {
        var stack: [(begin: ContentLine, line: Int, children: [VComponent.Child])] = []
        var top: [VComponent] = []
        for logical in try logicalLines(input) {
            let line = try contentLine(logical)
            if line.isNamed("BEGIN") {
                guard isName(line.value.utf8[...]) else {
                    throw VCodecError(line: logical.line, "BEGIN needs a component name, not '\(line.value)'")
                }
                guard stack.count < VDocument.maxDepth else {
                    throw VCodecError(line: logical.line, "components nest deeper than \(VDocument.maxDepth)")
                }
                stack.append((line, logical.line, []))
            } else if line.isNamed("END") {
                guard let open = stack.popLast() else {
                    throw VCodecError(line: logical.line, "END:\(line.value) with no BEGIN")
                }
                guard open.begin.value.equalsIgnoringCase(line.value) else {
                    throw VCodecError(line: logical.line, "END:\(line.value) closes BEGIN:\(open.begin.value) (line \(open.line))")
                }
                let component = VComponent(name: open.begin.value, children: open.children, begin: open.begin, end: line)
                if stack.isEmpty { top.append(component) } else { stack[stack.count - 1].children.append(.component(component)) }
            } else if stack.isEmpty {
                throw VCodecError(line: logical.line, "'\(line.name)' outside any BEGIN/END")
            } else {
                stack[stack.count - 1].children.append(.line(line))
            }
        }
        if let open = stack.first {
            throw VCodecError(line: open.line, "BEGIN:\(open.begin.value) is never closed")
        }
        guard !top.isEmpty else { throw VCodecError(line: nil, "no BEGIN line: not iCalendar or vCard") }
        return top
    }

    private static func logicalLines(_ input: [UInt8]) throws(VCodecError) -> [Logical] {
        var lines: [Logical] = []
        var start = input.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        var number = 0
        while start < input.count {
            number += 1
            let newline = input[start...].firstIndex(of: 0x0A) ?? input.count
            var end = newline
            if end > start, input[end - 1] == 0x0D { end -= 1 }
            let physical = input[start..<end]
            start = newline + 1
            guard let first = physical.first else { continue }
            if first == 0x20 || first == 0x09 {
                guard !lines.isEmpty else { throw VCodecError(line: number, "a folded continuation with no line before it") }
                lines[lines.count - 1].bytes += physical.dropFirst()
                lines[lines.count - 1].source += [0x0D, 0x0A]
                lines[lines.count - 1].source += physical
            } else {
                lines.append(Logical(bytes: Array(physical), source: Array(physical), line: number))
            }
        }
        return lines
    }

    private static func contentLine(_ logical: Logical) throws(VCodecError) -> ContentLine {
        let bytes = logical.bytes
        func fail(_ reason: String) -> VCodecError { VCodecError(line: logical.line, reason) }
        guard String(validating: bytes, as: UTF8.self) != nil else { throw fail("not UTF-8 text") }
        if let control = bytes.first(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) {
            throw fail("control character 0x\(String(control, radix: 16, uppercase: true)) in the line")
        }
        var index = 0
        func token() -> String {
            let start = index
            while index < bytes.count, isNameByte(bytes[index]) { index += 1 }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }
        var group: String?
        var name = token()
        if index < bytes.count, bytes[index] == UInt8(ascii: "."), !name.isEmpty {
            index += 1
            group = name
            name = token()
        }
        guard !name.isEmpty else { throw fail("no property name before '\(preview(bytes[index...]))'") }
        var parameters: [ContentLineParameter] = []
        while index < bytes.count, bytes[index] == UInt8(ascii: ";") {
            index += 1
            let parameterName = token()
            guard !parameterName.isEmpty else { throw fail("an empty parameter name in \(name)") }
            guard index < bytes.count, bytes[index] == UInt8(ascii: "=") else {
                // vCard 2.1's bare parameter (`TEL;WORK:`).
                parameters.append(ContentLineParameter(name: parameterName, values: [], hasEquals: false))
                continue
            }
            var values: [ContentLineParameter.Value] = []
            repeat {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
                    guard let close = bytes[(index + 1)...].firstIndex(of: UInt8(ascii: "\"")) else {
                        throw fail("parameter \(parameterName) of \(name) opens a quote it never closes")
                    }
                    values.append(.init(read: String(decoding: bytes[(index + 1)..<close], as: UTF8.self), quoted: true))
                    index = close + 1
                } else {
                    let start = index
                    while index < bytes.count, ![UInt8(ascii: ";"), UInt8(ascii: ":"), UInt8(ascii: ",")].contains(bytes[index]) {
                        guard bytes[index] != UInt8(ascii: "\"") else { throw fail("a '\"' inside the unquoted parameter \(parameterName) of \(name)") }
                        index += 1
                    }
                    values.append(.init(read: String(decoding: bytes[start..<index], as: UTF8.self), quoted: false))
                }
            } while index < bytes.count && bytes[index] == UInt8(ascii: ",")
            parameters.append(ContentLineParameter(name: parameterName, values: values, hasEquals: true))
        }
        guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
            throw fail(index < bytes.count ? "'\(preview(bytes[index...]))' where ':' and the value of \(name) should be" : "\(name) has no ':' and no value")
        }
        return ContentLine(group: group, name: name, parameters: parameters,
                           value: String(decoding: bytes[(index + 1)...], as: UTF8.self),
                           source: String(validating: logical.source, as: UTF8.self))
    }

    /// ALPHA, DIGIT and `-` (RFC 5545's iana-token and x-name), and `_`, which some clients put in X- names.
    private static func isNameByte(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2D || byte == 0x5F
    }

    private static func isName(_ bytes: Substring.UTF8View) -> Bool { !bytes.isEmpty && bytes.allSatisfy(isNameByte) }

    /// A few characters of what was found, for an error message.
    private static func preview(_ bytes: ArraySlice<UInt8>) -> String {
        let text = String(decoding: bytes.prefix(20), as: UTF8.self)
        return bytes.count > 20 ? text + "…" : text
    }
}
