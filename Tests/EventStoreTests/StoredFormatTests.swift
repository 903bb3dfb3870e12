import Foundation
import Testing
@testable import EventStore
import TestSupport

/// The stored formats, byte for byte as evsync wrote them before its formats shared one reader and writer
/// (`BinaryReader`, `BinaryWriter`): the digests below, and the archive segment in Fixtures, were made by the
/// evsync before that change, so any change to what is written or read shows here.
@Suite("Stored formats, byte for byte as before")
struct StoredFormatTests {
    /// Events of every kind and shape, with nothing random left (the samples' event ids and seqs are fixed here).
    static let events: [Event] = {
        var random = SplitMix64(seed: 11)
        let generated = (1...600).map { EventFormatTests.randomEvent(seq: UInt64($0) * 7919, using: &random) }
        let samples = EventCodingTests.samples.filter { EventFormatTests.kindsOfTheDigests.contains($0.kind) }.enumerated().map { index, event in
            var event = event
            let number = String(index)
            event.eventID = "00000000-0000-4000-8000-" + String(repeating: "0", count: 12 - number.count) + number
            event.seq = 600 * 7919 + UInt64(index) + 1
            return event
        }
        return generated + samples
    }()

    /// SHA-256 over each part's length (8 bytes, big-endian) and bytes, in hex.
    static func digest(_ parts: [[UInt8]]) -> String {
        var hasher = SHA256()
        for part in parts {
            withUnsafeBytes(of: UInt64(part.count).bigEndian) { hasher.update(Array($0)) }
            hasher.update(part)
        }
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }

    /// The view entries of every layout, each with no version, an integer one and a token.
    static let projections: [(RecordProjection, [UInt64])] = {
        let row: JSONObject = ["name": "Row", "date": "2026-01-01"], shadow: JSONObject = ["name": "Shadow"]
        let versions: [RemoteVersion?] = [nil, RemoteVersion(0), RemoteVersion(1_700_000_000_000), RemoteVersion("\"etag-1\"")]
        return versions.flatMap { version in
            [(RecordProjection(version: version), []), (RecordProjection(row: row, version: version), []),
             (RecordProjection(row: row, shadow: row, version: version), []), (RecordProjection(shadow: shadow, version: version), []),
             (RecordProjection(row: row, shadow: shadow, version: version), []),
             (RecordProjection(row: row, version: version), [1, 300, 1 << 40]),
             (RecordProjection(row: row, shadow: row, version: version), [UInt64.max >> 1])]
        }
    }()

    static let archiveFixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/archive-segment")
    static let archiveStore = "d2f0a8c4-5b1e-4c6a-9e7f-0123456789ab"

    @Test("events are written as the very bytes evsync wrote before, and read back")
    func eventBytes() throws {
        let stored = Self.events.map { EventCoding.encode($0) }
        #expect(Self.digest(stored) == "5f6efa710fa6b8cbaa8c285d18dc5f4142ba046cf4214c0f8f85a35af3f747b0")
        for (event, bytes) in zip(Self.events, stored) { #expect(try EventCoding.decode(bytes) == event) }
    }

    @Test("view entries are written as the very bytes evsync wrote before, and read back")
    func entryBytes() throws {
        let stored = Self.projections.map { RecordEntry.encode($0.0, rowIsSetsOf: $0.1) ?? [] }
        #expect(Self.digest(stored) == "b0ad196abd53e3b02d9d5127f7361407abbbb4805caa5a715612ac967852631c")
        for ((projection, seqs), bytes) in zip(Self.projections, stored) where !bytes.isEmpty {
            let decoded = try bytes.withUnsafeBytes { try RecordEntry.decode($0, sets: { _ in projection.row ?? [:] }) }
            #expect(decoded == projection)
            #expect(try bytes.withUnsafeBytes { try RecordEntry.rowReferences(in: $0) } == (seqs.isEmpty ? nil : seqs))
        }
    }

    @Test("an archive segment evsync wrote before reads back whole, and the same events are sealed alike again")
    func archiveSegment() throws {
        let segment = try ArchiveSegment(path: Self.archiveFixture.path)
        let stored = Self.events.map { EventCoding.encode($0) }
        #expect(segment.storeID == Self.archiveStore)
        #expect(try segment.verify(store: Self.archiveStore) == Self.events.map(\.seq))
        var read: [[UInt8]] = []
        try segment.forEach { _, bytes in read.append(Array(bytes)); return true }
        #expect(read == stored)
        #expect(segment.blocks.count > 1)
        try withTemporaryDirectory { directory in
            var writer = try ArchiveSegmentWriter(path: directory.appendingPathComponent("again").path, storeID: Self.archiveStore)
            for (event, bytes) in zip(Self.events, stored) { try writer.append(seq: event.seq, event: bytes) }
            let seal = try writer.finish()
            // The seal hashes the uncompressed framing, so it holds whatever zstd version compressed the blocks.
            #expect(seal.sha256 == segment.seal.sha256 && seal.first == segment.seal.first && seal.last == segment.seal.last
                    && seal.count == segment.seal.count)
            let again = try ArchiveSegment(path: directory.appendingPathComponent("again").path)
            #expect(again.blocks.map(\.first) == segment.blocks.map(\.first) && again.blocks.map(\.count) == segment.blocks.map(\.count))
        }
    }
}
