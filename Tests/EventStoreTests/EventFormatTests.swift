import Foundation
import Testing
@testable import EventStore
import TestSupport

/// The stored form of events, format 2 (`EventCoding`): compact, checksummed,
/// and read alongside the format-1 JSON events older stores hold.
@Suite("Event storage format 2")
struct EventFormatTests {
    /// A random event of any kind and shape: ids that are lower-case UUIDs or
    /// not, strings from every Unicode plane, any time, any version.
    static func randomEvent(seq: UInt64, using random: inout SplitMix64) -> Event {
        func pick<T>(_ options: [T], _ random: inout SplitMix64) -> T { options[Int.random(in: 0..<options.count, using: &random)] }
        func uuid(_ random: inout SplitMix64) -> String {
            let bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &random) }
            let hex = bytes.map { String(format: "%02x", $0) }.joined()
            var text = hex
            for position in [8, 13, 18, 23] { text.insert("-", at: text.index(text.startIndex, offsetBy: position)) }
            return text
        }
        func id(_ random: inout SplitMix64) -> String {
            let base = uuid(&random)
            switch Int.random(in: 0..<6, using: &random) {
            case 0, 1: return base
            case 2: return base.uppercased()
            case 3: return String(base.dropLast()) + "g"
            case 4: return "rec-\(Int.random(in: 0...999, using: &random))"
            default: return RandomJSON.string(using: &random)
            }
        }
        func object(_ random: inout SplitMix64) -> JSONObject {
            var object: JSONObject = [:]
            for _ in 0..<Int.random(in: 0...6, using: &random) {
                object[RandomJSON.string(using: &random)] = RandomJSON.value(depth: 1, using: &random)
            }
            return object
        }
        func state(_ random: inout SplitMix64) -> RecordState? {
            pick([nil, .absent, .present(object(&random))], &random)
        }
        let kind = pick(Self.kindsOfTheDigests, &random)
        let origin = pick(Event.Origin.allCases, &random)
        // From 1601 to 9999, which the JSON shape's timestamps can spell.
        let at = pick([-11_644_473_600_000, 253_402_300_799_999, 0, -1,
                       Int64.random(in: -1_000_000_000_000...4_000_000_000_000, using: &random)], &random)
        // Integers up to 2^53, which a JSON number holds exactly (format 2 holds any).
        let version: RemoteVersion? = pick([nil, RemoteVersion(Int64.random(in: 0...(1 << 53), using: &random)), RemoteVersion(0),
                                             RemoteVersion(RandomJSON.string(using: &random))], &random)
        let unset = Bool.random(using: &random) ? [] : (0..<Int.random(in: 1...4, using: &random)).map { _ in RandomJSON.string(using: &random) }
        return Event(seq: seq, eventID: id(&random), at: at, entity: pick(["Holiday", "Birthday", RandomJSON.string(using: &random)], &random),
                     recordID: id(&random), kind: kind, origin: origin, author: RandomJSON.string(using: &random),
                     set: Bool.random(using: &random) ? [:] : object(&random), unset: unset, version: version,
                     server: state(&random), local: state(&random), resolved: state(&random),
                     policy: pick([nil] + ConflictPolicy.allCases, &random))
    }

    /// The kinds there were when `StoredFormatTests`' digests were made: a kind added since would change which
    /// events the seeded generator makes. Each kind has its samples in `EventCodingTests.samples`.
    static let kindsOfTheDigests: [Event.Kind] = [.created, .updated, .deleted, .acknowledged, .conflict, .skipped, .rejected,
                                                  .baseline, .compacted]

    static var randomEvents: [Event] {
        var random = SplitMix64(seed: 11)
        return (1...600).map { randomEvent(seq: UInt64($0) * 7919, using: &random) } + EventCodingTests.samples
    }

    /// `bytes` with their checksum set right again after a deliberate change.
    static func resealed(_ bytes: [UInt8]) -> [UInt8] {
        var bytes = bytes
        let crc = CRC32C.checksum(Array(bytes[5...]), continuing: CRC32C.checksum([bytes[0]]))
        withUnsafeBytes(of: crc.littleEndian) { bytes.replaceSubrange(1..<5, with: $0) }
        return bytes
    }

    @Test("random events of every kind and shape round-trip, and print the same JSON as from format 1")
    func randomRoundTrip() throws {
        for event in Self.randomEvents {
            let stored = EventCoding.encode(event)
            #expect(stored.first == 2)
            var encodedSet: [UInt8]?
            let decoded = try stored.withUnsafeBytes { try EventCoding.decode($0, encodedSet: &encodedSet) }
            #expect(decoded == event)
            #expect(EventCoding.encode(decoded) == stored, "encoding is deterministic")
            // The set is kept as its canonical JSON, which the views reuse as a row.
            #expect(encodedSet == (event.set.isEmpty ? nil : JSONWriter.encodeObject(event.set)))
            // `log tail --json` and `history --json` print the same, whichever form the event is stored in.
            let fromFormat1 = try EventCoding.decode(EventJSON.encode(event))
            #expect(String(decoding: EventJSON.encode(decoded), as: UTF8.self) == String(decoding: EventJSON.encode(fromFormat1), as: UTF8.self))
            // A set handed over already encoded is stored as those very bytes.
            if !event.set.isEmpty {
                #expect(EventCoding.encode(event, encodedSet: JSONWriter.encodeObject(event.set)) == stored)
            }
        }
    }

    @Test("the layout of a bare event, byte by byte, as EventCoding documents it")
    func layout() throws {
        let bare = Event(seq: 300, eventID: "e", at: -2, entity: "Holiday", recordID: "a", kind: .deleted, origin: .remote, author: "me")
        let stored = EventCoding.encode(bare)
        let body: [UInt8] = [0xAC, 0x02,               // seq 300
                             0x03,                      // at -2, zigzag
                             2 << 2 | 1,                // deleted, remote
                             0x00,                      // no UUIDs
                             1] + Array("e".utf8) + [7] + Array("Holiday".utf8) + [1] + Array("a".utf8) + [2] + Array("me".utf8)
            + [0]                                       // no set
        #expect(stored == Self.resealed([2, 0, 0, 0, 0] + body))
        #expect(CRC32C.checksum(Array(stored[5...]), continuing: CRC32C.checksum([2])) == stored[1..<5].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) })

        let uuid = "0f1e2d3c-4b5a-4978-8a9b-abcdef012345"
        var typical = bare
        typical.eventID = uuid
        typical.recordID = uuid
        typical.kind = .created
        typical.origin = .local
        typical.set = ["name": "X"]
        typical.version = 1_700_000_000_000
        let bytes = EventCoding.encode(typical)
        let raw: [UInt8] = [0x0F, 0x1E, 0x2D, 0x3C, 0x4B, 0x5A, 0x49, 0x78, 0x8A, 0x9B, 0xAB, 0xCD, 0xEF, 0x01, 0x23, 0x45]
        #expect(bytes[8] == 0 << 2 | 0, "created, local")
        #expect(bytes[9] == 0b11, "flags: both ids are UUIDs")
        #expect(Array(bytes[10..<26]) == raw)
        #expect(bytes.count < EventJSON.encode(typical).count / 2)
        // Versions beyond what a JSON number holds exactly are kept too.
        typical.version = RemoteVersion(Int64.max)
        #expect(try EventCoding.decode(EventCoding.encode(typical)) == typical)
    }

    @Test("every kind, origin and policy has a code in the format's tables")
    func codeTables() {
        #expect(Set(EventCoding.kinds) == Set(Event.Kind.allCases) && EventCoding.kinds.count == Event.Kind.allCases.count)
        #expect(Set(EventCoding.origins) == Set(Event.Origin.allCases) && EventCoding.origins.count == Event.Origin.allCases.count)
        #expect(Set(EventCoding.policies) == Set(ConflictPolicy.allCases) && EventCoding.policies.count == ConflictPolicy.allCases.count)
        #expect(EventCoding.kinds.count <= 64 && EventCoding.origins.count <= 4, "a kind and an origin share one byte")
    }

    @Test("CRC-32C gives the published check values, and the instruction and slice-by-8 agree with a bit-by-bit reference")
    func crc32c() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        // RFC 3720, appendix B.4.
        #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(CRC32C.checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
        #expect(CRC32C.checksum((0..<32).map(UInt8.init)) == 0x46DD_794E)
        #expect(CRC32C.checksum([]) == 0)
        #if arch(x86_64)
        // Every x86-64 made since 2008 has SSE 4.2; without it, the instruction's path went untested here.
        #expect(CRC32C.hasInstruction)
        #endif
        func reference(_ bytes: [UInt8]) -> UInt32 {
            var crc: UInt32 = 0xFFFF_FFFF
            for byte in bytes {
                crc ^= UInt32(byte)
                for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            }
            return ~crc
        }
        var random = SplitMix64(seed: 32)
        for count in 0..<70 {
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            #expect(CRC32C.checksum(bytes) == reference(bytes))
            let split = count / 3
            #expect(CRC32C.checksum(Array(bytes[split...]), continuing: CRC32C.checksum(Array(bytes[..<split]))) == reference(bytes))
            #expect(bytes.withUnsafeBytes { CRC32C.bySlices($0) } == reference(bytes))
        }
    }

    @Test("any one byte changed, and any cut, is damage (never a newer format, never a different event)")
    func everyChangeIsCaught() throws {
        for event in EventCodingTests.samples + Self.randomEvents.prefix(40) {
            let stored = EventCoding.encode(event)
            for position in stored.indices {
                for mask: UInt8 in [0x01, 0x80, 0xFF, 0x5A] {
                    var changed = stored
                    changed[position] ^= mask
                    let error = try #require(throws: EventDecodingError.self, "byte \(position) ^ \(mask)") { try EventCoding.decode(changed) }
                    #expect(!error.isNewerFormat, "byte \(position) ^ \(mask): \(error)")
                }
            }
            for count in 0..<stored.count {
                #expect(throws: EventDecodingError.self, "cut to \(count) bytes") { try EventCoding.decode(Array(stored[..<count])) }
            }
        }
    }

    @Test("what a newer evsync may write is refused as newer: a format, a tag, a kind, an origin, a flag, a policy")
    func newerFormats() throws {
        let event = Event(seq: 1, eventID: RecordID.generate(), at: 5, entity: "Holiday", recordID: "h", kind: .conflict, origin: .remote,
                          author: "srv", version: 3, server: .absent, local: .absent, resolved: .absent, policy: .serverWins)
        let stored = EventCoding.encode(event)
        #expect(try EventCoding.decode(stored) == event)
        var format3 = stored
        format3[0] = 3
        var unknownTag = stored
        unknownTag.append(200)
        var kind = stored
        kind[7] = 63 << 2 | 1
        var origin = stored
        origin[7] = 4 << 2 | 3
        var flags = stored
        flags[8] |= 0x80
        var policy = stored
        policy[policy.count - 1] = 99
        for (name, bytes) in [("format", format3), ("tag", unknownTag), ("kind", kind), ("origin", origin), ("flags", flags), ("policy", policy)] {
            let error = try #require(throws: EventDecodingError.self, "\(name)") { try EventCoding.decode(Self.resealed(bytes)) }
            #expect(error.isNewerFormat, "\(name): \(error)")
            // The same change without its checksum set right is damage.
            let damage = try #require(throws: EventDecodingError.self, "\(name)") { try EventCoding.decode(bytes) }
            #expect(!damage.isNewerFormat, "\(name): \(damage)")
        }
    }
}
