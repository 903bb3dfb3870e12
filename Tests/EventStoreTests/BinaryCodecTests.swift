import Testing
@testable import EventStore
import TestSupport

/// The one binary reader and writer every stored format goes through (`BinaryReader`, `BinaryWriter`).
@Suite("Binary reader and writer")
struct BinaryCodecTests {
    /// One of everything the writer writes, and how the reader reads it back.
    static func writeAll(_ writer: inout BinaryWriter) {
        writer.byte(0xAB)
        writer.u16(0x0102)
        writer.u32(0x0304_0506, .littleEndian)
        writer.u64(0x0708_090A_0B0C_0D0E)
        writer.varint(300)
        writer.varint(.max)
        writer.zigzag(-2)
        writer.string("día")
        writer.counted { $0 += [1, 2, 3] }
    }

    static func readAll(_ reader: inout BinaryReader) throws(BinaryReadError) -> [String] {
        [String(try reader.byte("byte")), String(try reader.u16("u16")), String(try reader.u32("u32", .littleEndian)),
         String(try reader.u64("u64")), String(try reader.varint("varint")), String(try reader.varint("largest varint")),
         String(try reader.zigzag("zigzag")), try reader.string("string"), "\(Array(try reader.counted("counted")))"]
    }

    static let encoded: [UInt8] = {
        var writer = BinaryWriter()
        writeAll(&writer)
        return writer.bytes
    }()

    @Test("what the writer writes the reader reads, in the documented byte orders")
    func roundTrip() throws {
        let bytes = Self.encoded
        #expect(Array(bytes[1..<3]) == [0x01, 0x02], "big-endian unless asked")
        #expect(Array(bytes[3..<7]) == [0x06, 0x05, 0x04, 0x03], "little-endian when asked")
        #expect(Array(bytes[7..<15]) == [0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E])
        #expect(Array(bytes[15..<17]) == [0xAC, 0x02], "LEB128, low bits first")
        let (values, atEnd) = try BinaryReader.reading(bytes) { reader throws(BinaryReadError) in (try Self.readAll(&reader), reader.isAtEnd) }
        #expect(atEnd)
        #expect(values == ["171", "258", "50595078", "506664896818842894", "300", "\(UInt64.max)", "-2", "día", "[1, 2, 3]"])
    }

    @Test("every cut of a valid encoding throws, naming what was being read, and never traps or reads past the end")
    func everyTruncation() throws {
        let bytes = Self.encoded
        for length in 0..<bytes.count {
            let cut = Array(bytes[..<length])
            let error = cut.withUnsafeBytes { buffer -> BinaryReadError? in
                var reader = BinaryReader(buffer)
                do throws(BinaryReadError) {
                    _ = try Self.readAll(&reader)
                    return nil
                } catch {
                    // A failed read moves nothing: the reader stays where the read began.
                    #expect(reader.offset == error.offset, "cut at \(length): \(error)")
                    return error
                }
            }
            let thrown = try #require(error, "a cut at \(length) of \(bytes.count) bytes read whole")
            guard case .cutShort(let needed, let left) = thrown.problem else {
                Issue.record("cut at \(length): \(thrown)")
                continue
            }
            #expect(left == length - thrown.offset && needed > left, "cut at \(length): \(thrown)")
            #expect(thrown.description.hasPrefix(thrown.what + " at byte \(thrown.offset) needs"), "\(thrown)")
        }
    }

    @Test("a varint beyond 64 bits, a count beyond the bytes left and a negative take are errors, not traps")
    func outOfRange() throws {
        func read(_ bytes: [UInt8], _ body: (inout BinaryReader) throws -> Void) -> BinaryReadError? {
            bytes.withUnsafeBytes { buffer in
                var reader = BinaryReader(buffer)
                do {
                    try body(&reader)
                    return nil
                } catch let error as BinaryReadError {
                    return error
                } catch {
                    Issue.record("not a BinaryReadError: \(error)")
                    return nil
                }
            }
        }
        let tooLarge = read(Array(repeating: 0xFF, count: 9) + [0x02]) { _ = try $0.varint("seq") }
        #expect(tooLarge == BinaryReadError(what: "seq", offset: 9, problem: .outOfRange))
        #expect(read(Array(repeating: 0xFF, count: 12)) { _ = try $0.varint("seq") }?.problem == .outOfRange)
        #expect(read([5, 1, 2]) { _ = try $0.counted("name") } == BinaryReadError(what: "name", offset: 0, problem: .cutShort(needed: 6, left: 3)))
        #expect(read([1, 2]) { _ = try $0.take(-1, "run") }?.problem == .cutShort(needed: -1, left: 2))
        #expect(read([0x80]) { _ = try $0.string("author") }?.what == "author")
    }

    @Test("a counted run moves its content up by the size of its count, whatever that size")
    func countedSizes() throws {
        for size in [0, 1, 127, 128, 16_383, 16_384, 70_000] {
            var writer = BinaryWriter()
            writer.byte(9)
            let range = writer.counted { $0 += repeatElement(7, count: size) }
            #expect(writer.count == range.upperBound && range.count == size)
            let (count, atEnd) = try BinaryReader.reading(writer.bytes) { reader throws(BinaryReadError) in
                _ = try reader.byte("leading byte")
                return (try reader.counted("run").count, reader.isAtEnd)
            }
            #expect(count == size && atEnd)
        }
    }
}
