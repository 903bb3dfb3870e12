import Foundation
public import Testing

/// Expects `value` to come back equal through Foundation's `JSONEncoder` and `JSONDecoder`, as an app keeping it would.
public func expectRoundTrip<Value: Codable & Equatable>(_ value: Value, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let data = try JSONEncoder().encode(value)
    let decoded = try JSONDecoder().decode(Value.self, from: data)
    #expect(decoded == value, "\(String(decoding: data, as: UTF8.self))", sourceLocation: sourceLocation)
}
