/// `EntitySchema.validate` read off a record's canonical JSON (`JSONWriter`)
/// instead of a built `JSONObject`: what `import` asks of every line, as it
/// writes the line's fields (`walk`).
///
/// It only ever vouches: a walk passes when the record certainly passes
/// `validate`, and false for everything else, which is then left to
/// `validate` to judge and to word an error for. So it checks the shapes
/// nearly every record has on the bytes (ASCII strings without escapes,
/// with their lengths and formats) and builds only the other values, one
/// field at a time, for `Rule.check`.
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
            while next < fields.count, fields[next].name.lexicographicallyPrecedes(key) { next += 1 }
            guard next < fields.count, fields[next].name.elementsEqual(key) else { return false }
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
        if let text = plainString(value) {
            guard field.takesStrings else { return false }
            let rule = field.rule
            // ASCII: a character a byte (CR LF, the one pair that is one character, is escaped, so not plain).
            if let minLength = rule.minLength, text.count < minLength { return false }
            if let maxLength = rule.maxLength, text.count > maxLength { return false }
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

    /// The text of a string written without escapes, all ASCII; nil for any other value.
    private static func plainString(_ value: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard value.count >= 2, value.first == UInt8(ascii: "\""), value.last == UInt8(ascii: "\"") else { return nil }
        let text = UnsafeRawBufferPointer(rebasing: value[1..<(value.count - 1)])
        guard !text.contains(where: { $0 >= 0x80 || $0 < 0x20 || $0 == UInt8(ascii: "\\") }) else { return nil }
        return text
    }
}
