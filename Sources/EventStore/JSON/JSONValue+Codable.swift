/// `JSONValue` and `JSONNumber` with any `Encoder` and `Decoder`, so that results holding record values
/// (events, blame, diffs) are `Codable`: a value is written as the JSON it is, not wrapped.
///
/// A coder carries a number as `Int64`, `UInt64` or `Double`, never as its literal, so through one
/// (Foundation's `JSONEncoder` and `JSONDecoder` among them) an integer literal within `Int64` or
/// `UInt64` and a fraction `Double` holds come back equal; a number with more digits than a `Double`
/// holds comes back rounded, and a whole number written as a fraction (`1.0`) comes back as the
/// integer (`1`), since a decoder tells them apart by neither. evsync's own encoder for `--json`
/// (`JSONValueEncoder`) takes these values as they are, literals and all.
extension JSONNumber: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let integer = try? container.decode(Int64.self) {
            self.init(integer)
        } else if let integer = try? container.decode(UInt64.self) {
            self.init(integer)
        } else {
            let value = try container.decode(Double.self)
            guard let number = JSONNumber(value) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "\(value) is not a JSON number")
            }
            self = number
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if isIntegerLiteral, let integer = Int64(text) {
            try container.encode(integer)
        } else if isIntegerLiteral, let integer = UInt64(text) {
            try container.encode(integer)
        } else {
            try container.encode(doubleValue)
        }
    }
}

extension JSONValue: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(JSONNumber.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode(JSONObject.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

extension KeyedDecodingContainer {
    /// The value at `key`, `.null` for a JSON null; nil only when the key is absent (where
    /// `decodeIfPresent` would make a null nil too: a field set to null is not a field absent).
    func decodeJSONIfPresent(forKey key: Key) throws -> JSONValue? {
        // Not `contains(key) ? … : nil`: that `nil` would be `JSONValue.null` (ExpressibleByNilLiteral).
        guard contains(key) else { return Optional.none }
        return try decode(JSONValue.self, forKey: key)
    }
}
