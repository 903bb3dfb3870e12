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

    private static let holiday: EntitySchema? = try? SchemaRegistry().schema(named: "Holiday")

    func run(_ bytes: UnsafeRawBufferPointer) {
        switch self {
        case .json:
            guard let value = try? JSONParser.parse(bytes) else { return }
            let written = JSONWriter.encode(value)
            precondition((try? JSONParser.parse(written)) == value, "JSON did not survive writing and reading back")
        case .event:
            guard let event = try? EventCoding.decode(bytes) else { return }
            precondition((try? EventCoding.decode(EventCoding.encode(event))) == event, "an event changed when encoded again")
        case .importLine:
            guard let holiday = Self.holiday,
                  var event = try? Store.importedCreation(bytes, number: 1, schema: holiday, at: 0, author: "fuzz")
            else { return }
            event.seq = 1  // as appending numbers it
            precondition((try? EventCoding.decode(EventCoding.encode(event))) == event, "an imported event did not round-trip")
        case .page:
            _ = try? KintoRemote.page(from: Array(bytes), collection: "holidays")
        case .batch:
            _ = try? KintoRemote.outcomes(ofBatch: Array(bytes), requestCount: 5, collection: "holidays")
        }
    }
}
