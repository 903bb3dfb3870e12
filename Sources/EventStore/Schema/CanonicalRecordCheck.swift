import Foundation

/// `EntitySchema.validate` read off a record's canonical JSON (`JSONWriter`)
/// instead of a built `JSONObject`: what `import` asks of every line, as it
/// writes the line's fields (`walk`).
///
/// It only ever vouches: a walk passes when the record certainly passes
/// `validate`, and false for everything else, which is then left to
/// `validate` to judge and to word an error for. So it checks strings
/// without escapes, what nearly every field is, on their bytes (their
/// lengths and formats, where the rule asks), and builds only the other
/// values, one field at a time, for `Rule.check`.
struct CanonicalRecordCheck: Sendable {
    private struct Field: Sendable {
        let name: [UInt8]
        let rule: Rule
        let isRequired: Bool
        /// Whether any string may pass `rule`, save for its length and format.
        let takesStrings: Bool
    }

    /// The schema's fields in byte order, the order of a canonical object's keys.
    private let fields: [Field]
    private let requiredCount: Int

    init(_ schema: EntitySchema) {
        fields = schema.rules.map { name, rule in
            Field(name: Array(name.utf8), rule: rule, isRequired: schema.required.contains(name),
                  takesStrings: (rule.types.isEmpty || rule.types.contains("string")) && rule.allowed == nil && !rule.base64)
        }.sorted { $0.name.lexicographicallyPrecedes($1.name) }
        requiredCount = schema.required.count
    }

    /// A walk over one record's members, in the canonical order (as
    /// `JSONParser.writeCanonicalObject` hands them to its `check`).
    struct Walk {
        fileprivate let check: CanonicalRecordCheck
        private var next = 0
        private var required = 0

        fileprivate init(_ check: CanonicalRecordCheck) { self.check = check }

        /// Whether this member, the key and canonical value of the next one, certainly passes.
        mutating func accepts(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) -> Bool {
            let fields = check.fields
            // Keys and fields are both in byte order: one walk matches them.
            while next < fields.count, compare(fields[next].name, key) < 0 { next += 1 }
            guard next < fields.count, compare(fields[next].name, key) == 0 else { return false }
            let field = fields[next]
            next += 1
            guard CanonicalRecordCheck.accepts(field, value) else { return false }
            if field.isRequired { required += 1 }
            return true
        }

        /// Whether the record walked, every member accepted, certainly passes: it has every required field.
        var passes: Bool { required == check.requiredCount }
    }

    func walk() -> Walk { Walk(self) }

    private static func accepts(_ field: Field, _ value: UnsafeRawBufferPointer) -> Bool {
        if let text = unescapedString(value) {
            guard field.takesStrings else { return false }
            let rule = field.rule
            // A string has at most as many characters as UTF-8 bytes, and at least one if it has any:
            // its characters are counted only when its bytes leave the answer open.
            func characters() -> Int { String(decoding: text, as: UTF8.self).count }
            if let maxLength = rule.maxLength, text.count > maxLength, characters() > maxLength { return false }
            if let minLength = rule.minLength, text.count < minLength || (minLength > 1 && characters() < minLength) {
                return false
            }
            if let format = rule.format {
                return (try? Rule.checkFormat(format, String(decoding: text, as: UTF8.self), path: "")) != nil
            }
            return true
        }
        guard let parsed = try? JSONParser.parse(value), !parsed.nests(deeperThan: JSONValue.maxFieldNesting) else {
            return false
        }
        return (try? field.rule.check(parsed, path: "")) != nil
    }

    /// The UTF-8 of a string written without escapes (canonical JSON writes
    /// the rest of a string as it is: these bytes are the string); nil for
    /// any other value.
    private static func unescapedString(_ value: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard value.count >= 2, value.first == UInt8(ascii: "\""), value.last == UInt8(ascii: "\"") else { return nil }
        let text = UnsafeRawBufferPointer(rebasing: value[1..<(value.count - 1)])
        guard let base = text.baseAddress, !text.isEmpty else { return text }
        return memchr(base, Int32(UInt8(ascii: "\\")), text.count) == nil ? text : nil
    }

    /// Byte order.
    private static func compare(_ name: [UInt8], _ key: UnsafeRawBufferPointer) -> Int {
        let common = min(name.count, key.count)
        let order = name.withUnsafeBytes { name in
            guard common > 0, let name = name.baseAddress, let key = key.baseAddress else { return Int32(0) }
            return memcmp(name, key, common)
        }
        return order != 0 ? Int(order) : name.count - key.count
    }
}
