import DAVAdapter
import EventStore
import KintoAdapter

/// The decoders that read input from outside the process, each wrapped so a
/// fuzzer can feed it arbitrary bytes. A target returns normally for any
/// input, accepted or refused; a crash, a trap or a failed round-trip check
/// (a `precondition`) is a finding.
enum FuzzTarget: String, CaseIterable {
    /// The JSON parser: anything it accepts must write back and parse to the same value.
    case json
    /// A stored event as read from the log: a decoded event must encode and decode to itself.
    case event
    /// One line of `evsync import`.
    case importLine = "import"
    /// A page of Kinto's record list.
    case page
    /// The response to a Kinto batch of pushed writes.
    case batch
    /// A WebDAV multistatus answer (PROPFIND, sync-collection, multiget) from a CalDAV or CardDAV server.
    case multistatus
    /// An iCalendar or vCard item: whatever the codec reads must write back to what it read.
    case vcard

    private static let holiday: EntitySchema? = try? SchemaRegistry().schema(named: "Holiday")
    /// The writes the `batch` target's responses answer (the seeds answer five).
    private static let batchWrites: [RemoteOperation] = [
        .create(id: "a1", fields: ["name": "New Year", "date": "2027-01-01"]),
        .create(id: "a2", fields: ["name": "May Day", "date": "2027-05-01"]),
        .update(id: "a1", fields: ["name": "dup"], version: RemoteVersion(1)),
        .delete(id: "zz", version: RemoteVersion(1)),
        .update(id: "a2", fields: ["name": "stale"], version: RemoteVersion(1)),
    ]

    func run(_ bytes: UnsafeRawBufferPointer) {
        switch self {
        case .json:
            guard let value = try? JSONParser.parse(bytes) else { return }
            let written = JSONWriter.encode(value)
            let reread = try? JSONParser.parse(written)
            precondition(reread == value, "JSON did not survive writing and reading back")
            // Numbers keep their literals: what is written is a fixed point, byte for byte.
            precondition(reread.map(JSONWriter.encode) == written, "JSON written twice came out different")
        case .event:
            guard let event = try? EventCoding.decode(bytes) else { return }
            precondition((try? EventCoding.decode(EventCoding.encode(event))) == event, "an event changed when encoded again")
        case .importLine:
            guard let holiday = Self.holiday else { return }
            var lines = ImportedLines(schema: holiday, at: 0, author: "fuzz")
            let plain = lines.plainCreation(bytes)
            guard var event = try? Store.importedCreation(bytes, number: 1, schema: holiday, at: 0, author: "fuzz") else {
                precondition(plain == nil, "the plain way took a line the general way refuses")
                return
            }
            event.seq = 1  // as appending numbers it
            precondition((try? EventCoding.decode(EventCoding.encode(event))) == event, "an imported event did not round-trip")
            if var plain {
                // Ids each way made up are random; all else is the same, the stored fields to the byte.
                plain.event.eventID = event.eventID
                if (try? JSONParser.parse(bytes))?.objectValue?["id"] == nil { plain.event.recordID = event.recordID }
                precondition(plain.event == event, "the plain way made another event than the general way")
                precondition(plain.set == JSONWriter.encodeObject(event.set), "the plain way stored the fields otherwise")
            }
        case .page:
            _ = try? KintoRemote.page(from: Array(bytes), collection: "holidays")
        case .batch:
            _ = try? KintoRemote.outcomes(ofBatch: Array(bytes), for: Self.batchWrites, collection: "holidays")
        case .multistatus:
            _ = try? Multistatus(parsing: Array(bytes))
        case .vcard:
            guard let document = try? VDocument(parsing: Array(bytes)) else { return }
            let written = document.serialized()
            precondition((try? VDocument(parsing: written))?.serialized() == written, "an item written back read otherwise")
            _ = try? HolidayMapping().read(document)
            _ = try? BirthdayMapping().read(document)
        }
    }
}
