@testable import EventStore
import EventSync
import Foundation
@testable import Sealing
import Testing
import TestSupport

/// `x-evsync-clear`: a field also sent in clear beside the sealed record, over `InMemoryRemote` (the Kinto and Parse
/// stand-in tests read real servers). The sealed value counts; a clear copy that says otherwise is a lie.
@Suite struct ClearFieldTests {
    static let schema = #"""
    {"title": "Trip", "properties": {"destination": {"type": "string"},
     "year": {"type": "integer", "x-evsync-clear": true, "x-evsync-renamed-from": "when"}, "notes": {"type": "string"}}}
    """#

    @Test func theSchemaSaysWhichFieldsAndTheSealedFormDeclaresThemUnderTheirServerNames() throws {
        let trip = try EntitySchema(json: Self.schema, source: "t")
        #expect(trip.clearFields == ["year"])
        #expect(SealedEnvelope.clearFields(of: trip) == ["when"])
        let wire = try SealedEnvelope.wireSchema(for: trip)
        #expect(Set(wire.fieldNames) == [SealedEnvelope.field, "when"] && wire.types(of: "when") == ["integer"] && wire.clearFields.isEmpty)
        let refused = #expect(throws: SchemaError.self) {
            try EntitySchema(json: #"{"title": "Trip", "properties": {"year": {"x-evsync-clear": "yes"}}}"#, source: "t")
        }
        #expect(refused?.description == "t: property 'year': 'x-evsync-clear' must be true or false")
        #expect(try EntitySchema(json: #"{"title": "Trip", "properties": {"year": {"x-evsync-clear": false}}}"#, source: "t").clearFields.isEmpty)
    }

    @Test func aCopyThatDiffersFromTheSealedValueIsALieAndAMissingOneIsNot() throws {
        let trip = try EntitySchema(json: Self.schema, source: "t")
        let keys = UnlockedKeys(place: Array(repeating: 7, count: 16), current: "k1", keys: ["k1": try Sodium.newKey()],
                                wrapping: try Sodium.newKey())
        let envelope = SealedEnvelope(keys: keys, clear: SealedEnvelope.clearFields(of: trip))
        let sealed = try envelope.seal(.init(counter: 1, fields: ["destination": "Oslo", "when": 2029]), entity: "Trip", id: "oslo")
        #expect(sealed["when"] == 2029 && sealed["destination"] == nil)
        #expect(try envelope.open(sealed, entity: "Trip", id: "oslo").get().fields?["destination"] == "Oslo")
        var copy = sealed
        copy["when"] = nil   // sealed before the schema left it in clear
        #expect(try envelope.open(copy, entity: "Trip", id: "oslo").get().fields?["when"] == 2029)
        let lie = "its clear copy of when is not what it sealed: changed on the server"
        copy["when"] = 1999
        #expect(envelope.open(copy, entity: "Trip", id: "oslo") == .failure(SealingError(.record, lie)))
        // A sealed deletion holds no value: a copy beside it is made up.
        var tombstone = try envelope.seal(.init(counter: 2, fields: nil), entity: "Trip", id: "oslo")
        #expect(tombstone["when"] == nil)
        tombstone["when"] = 2029
        #expect(envelope.open(tombstone, entity: "Trip", id: "oslo") == .failure(SealingError(.record, lie)))
    }
}
