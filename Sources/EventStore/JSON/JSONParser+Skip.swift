/// Passing over a value that a stricter read refused, so that its neighbours can still be read.
extension JSONParser {
    /// Where the parser stands, in bytes from the start of its buffer.
    package var offset: Int { index }

    /// Moves back to `offset` (a value's start, read from `offset` before)
    /// and steps over that value without building it or limiting its
    /// nesting: one counter, no recursion. It checks only what finding the
    /// value's end needs (strings closed, brackets balanced), so that one
    /// element a stricter read refused can be passed over and its neighbours read.
    /// - Returns: whether the value nests deeper than this parser reads
    ///   (counting the levels it sits in), the one reason valid JSON is refused.
    @discardableResult
    package mutating func skipValue(startingAt offset: Int) throws(JSONParseError) -> Bool {
        index = offset
        var open = 0
        var deepest = 0
        repeat {
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input") }
            switch bytes[index] {
            case UInt8(ascii: "{"), UInt8(ascii: "["): open += 1; deepest = max(deepest, open); index += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                guard open > 0 else { throw error("unexpected '\(Unicode.Scalar(bytes[index]))'") }
                open -= 1; index += 1
            case UInt8(ascii: "\""):
                index += 1
                var high: UInt8 = 0   // unused: passing over a string checks no UTF-8
                while true {
                    index = Self.plainRunEnd(in: bytes, from: index, control: false, high: &high)
                    guard index < bytes.count, bytes[index] == UInt8(ascii: "\\") else { break }
                    index += 2
                }
                guard index < bytes.count else { throw error("unexpected end of input") }
                index += 1
            default:
                // A scalar, or the ',' and ':' between members: up to the next delimiter.
                guard open > 0 || bytes[index] != UInt8(ascii: ",") else { throw error("unexpected ','") }
                index += 1
                while index < bytes.count, ![UInt8(ascii: ","), UInt8(ascii: "]"), UInt8(ascii: "}"), UInt8(ascii: "\""),
                                              UInt8(ascii: "{"), UInt8(ascii: "["), UInt8(ascii: ":")].contains(bytes[index]),
                      bytes[index] > 0x20 { index += 1 }
            }
        } while open > 0
        return depth + deepest > Self.maxDepth
    }
}

extension JSONParser {
    /// Calls `read` with the parser at each element of the array at the current position (a server's page of
    /// records, a batch's answers), as `forEachElement` does; but an element `read` refuses with a
    /// `JSONParseError` though its neighbours can still be found (it nests deeper than the parser reads, has a
    /// key twice or, with `orNotAnObject`, is no object) is stepped over whole and handed to `passOver`, with
    /// its bytes and the error, and the walk goes on: one record another client made unreadable must not stop
    /// every sync. Any other error is the array's, and thrown.
    package mutating func forEachElement(orNotAnObject: Bool = false, _ read: (inout JSONParser) throws -> Void,
                                         passingOver passOver: (_ element: UnsafeRawBufferPointer, JSONParseError) throws -> Void) throws {
        try forEachElement { parser in
            let start = parser.offset
            do {
                try read(&parser)
            } catch let error as JSONParseError {
                let isDeep = try parser.skipValue(startingAt: start)
                let element = UnsafeRawBufferPointer(rebasing: parser.bytes[start..<parser.offset])
                guard isDeep || error.isDuplicateKey || (orNotAnObject && element.first != UInt8(ascii: "{")) else { throw error }
                try passOver(element, error)
            }
        }
    }
}
