import Foundation

/// An entity declared by a JSON Schema file: its name, the name a server
/// should give it, and the rules every record must satisfy.
///
/// evsync reads the subset of JSON Schema that describes flat records:
/// `type` (one or several), `format` (`date`, `date-time`, `uri`, `uuid`),
/// `contentEncoding: base64`, `minLength`/`maxLength`, `minimum`/`maximum`,
/// `enum`, `items`, `required`, `default` (read into records that lack the
/// field, never written), `x-evsync-renamed-from` (a field's former name,
/// read as the new one and kept on the server), `x-evsync-index` (`true` on a field, or a list of fields at
/// the top: the store keeps an index of the field, `indexedFields`), `x-evsync-clear` (`true` on a field: an
/// end-to-end encrypted remote also sends it in clear, `clearFields`). Fields not declared under `properties` are
/// refused in local writes, so a typo never reaches the log; a record that
/// carries one from elsewhere (a newer app's) keeps it. Any other keyword
/// (`$ref`, `pattern`, nested `properties`, …) refuses the schema: evsync
/// would otherwise accept values the schema's author meant to refuse.
/// Annotations that constrain nothing (`title`, `description`, `$comment`,
/// `examples`, and `$schema`/`$id` at the top) are allowed, and so is a top-level
/// `x-evsync-<protocol>` (`x-evsync-dav`): a remote's own options, kept unread
/// in `remoteOptions`.
public struct EntitySchema: Sendable {
    /// The entity's name as the schema's `title` spells it, e.g. `Holiday`.
    public var name: String { parts.name }
    /// The name the schema asks servers to use for the entity
    /// (`x-evsync-collection`), if it asks: each remote decides what to do
    /// with it and what to use without it (Kinto: a collection named after
    /// the entity, lower-cased and pluralised).
    public var remoteName: String? { parts.remoteName }
    /// Field names in the order the schema declares them (for tables).
    public var fieldNames: [String] { parts.fieldNames }
    public var required: Set<String> { parts.required }
    /// The fields whose schema gives a `default`, with it: a record written before the field was added (or
    /// without it) reads as holding it. Only reads see it; the log and what is pushed keep what was written.
    public var defaults: JSONObject { parts.defaults }
    /// Fields renamed by `x-evsync-renamed-from`, old name → new name. Every read shows the new name (an
    /// old event, a server record, a view built before the rename: `upcast`); the server keeps the old one
    /// (`wire`), the name the apps already installed read.
    public var renames: [String: String] { parts.renames }
    /// The schema's top-level `x-evsync-<protocol>` keywords, by protocol word (`remoteOptions["dav"]` is
    /// `x-evsync-dav`), as written: read by the remote of that protocol; the store reads none of it, so that
    /// no protocol's rules live here. Which words are known is the caller's to check
    /// (`SchemaRegistry(directory:remoteProtocols:)`).
    public var remoteOptions: [String: JSONValue] { parts.remoteOptions }
    /// The fields the schema asks the store to index (`x-evsync-index`), sorted: a query with a condition on
    /// one reads only the records it returns (`Query`). The views keep them; adding or dropping one takes a
    /// reopening or a `rebuildViews`.
    public var indexedFields: [String] { parts.indexedFields }
    /// The fields an end-to-end encrypted remote also sends in clear, beside the sealed record, so that a
    /// server-side filter can read them (`x-evsync-clear`, docs/encryption.md), sorted; the sealed copy counts.
    public var clearFields: [String] { parts.clearDefinitions.keys.sorted() }
    /// Each of `clearFields` with its definition as the schema gives it: the sealed form's schema declares it so.
    package var clearDefinitions: JSONObject { parts.clearDefinitions }
    var rules: [String: Rule] { parts.rules }

    /// What the schema says, shared by every copy of it: a schema is looked up for each record read
    /// or written, and a copy of eight collections retained each of them.
    private final class Parts: Sendable {
        let name: String
        let remoteName: String?
        let fieldNames: [String]
        let required: Set<String>
        let defaults: JSONObject
        let renames: [String: String]
        let remoteOptions: [String: JSONValue]
        let rules: [String: Rule]
        let indexedFields: [String]
        let clearDefinitions: JSONObject

        init(name: String, remoteName: String?, fieldNames: [String], required: Set<String>, defaults: JSONObject,
             renames: [String: String], remoteOptions: [String: JSONValue], rules: [String: Rule], indexedFields: [String],
             clearDefinitions: JSONObject) {
            (self.name, self.remoteName, self.fieldNames, self.required) = (name, remoteName, fieldNames, required)
            (self.defaults, self.renames, self.remoteOptions, self.rules) = (defaults, renames, remoteOptions, rules)
            (self.indexedFields, self.clearDefinitions) = (indexedFields, clearDefinitions)
        }
    }
    private let parts: Parts

    /// Parses a schema document. `source` names it in errors.
    public init(json text: String, source: String) throws(SchemaError) {
        let document: JSONValue
        do {
            document = try JSONParser.parse(text)
        } catch {
            throw SchemaError("\(source): \(error)")
        }
        guard case .object(let root) = document else { throw SchemaError("\(source): a schema must be a JSON object") }
        if let keyword = root.keys.sorted().first(where: { !Self.rootKeywords.contains($0) && Self.remoteProtocol(of: $0) == nil }) {
            throw SchemaError("\(source): keyword '\(keyword)' is not supported (evsync reads \(Self.rootKeywords.sorted().joined(separator: ", ")), and x-evsync-<protocol> for a remote)")
        }
        guard let title = root["title"]?.stringValue, Self.isValidName(title) else {
            throw SchemaError("\(source): 'title' must name the entity (letters, digits, '_', starting with a letter, at most \(Self.maxNameLength) characters)")
        }
        if let type = root["type"], type != "object" {
            throw SchemaError("\(source): 'type' must be \"object\": an entity's records are objects")
        }
        if let additional = root["additionalProperties"], additional != false {
            throw SchemaError("\(source): 'additionalProperties' can only be false: fields not under 'properties' are always refused")
        }
        guard case .object(let properties)? = root["properties"] else {
            throw SchemaError("\(source): 'properties' must be an object")
        }
        var rules: [String: Rule] = [:]
        var defaults: JSONObject = [:]
        var renames: [String: String] = [:]
        var indexed: Set<String> = []
        var clear: JSONObject = [:]
        for (field, definition) in properties.sorted(by: { $0.key < $1.key }) {
            guard field != "id" else {
                throw SchemaError("\(source): field 'id' is reserved: it is the record's id")
            }
            let path = "\(source): property '\(field)'"
            let rule = try Rule(definition, path: path)
            rules[field] = rule
            if let value = definition.objectValue?["default"] {
                // A default the field's own rule refuses would make every record without it invalid on read.
                try rule.check(value, path: "\(path): 'default'")
                defaults[field] = value
            }
            if let given = definition.objectValue?["x-evsync-renamed-from"] {
                guard let old = given.stringValue, !old.isEmpty, old != "id" else {
                    throw SchemaError("\(path): 'x-evsync-renamed-from' must be the field's former name, a non-empty string other than 'id'")
                }
                // A chain (b from a, c from b) or a cycle always declares a former name: one name, one meaning.
                if properties[old] != nil {
                    throw SchemaError("\(path): 'x-evsync-renamed-from' names '\(old)', which is declared too (a chain or a cycle of renames: give each field the name the server holds)")
                }
                if let other = renames[old] {
                    throw SchemaError("\(path): 'x-evsync-renamed-from' names '\(old)', which '\(other)' is renamed from too")
                }
                renames[old] = field
            }
            if let given = definition.objectValue?["x-evsync-index"] {
                guard let flag = given.boolValue else { throw SchemaError("\(path): 'x-evsync-index' must be true or false") }
                if flag { indexed.insert(field) }
            }
            if let given = definition.objectValue?["x-evsync-clear"] {
                guard let flag = given.boolValue else { throw SchemaError("\(path): 'x-evsync-clear' must be true or false") }
                if flag { clear[field] = definition }
            }
        }
        if let given = root["x-evsync-index"] {
            guard let names = given.arrayValue?.compactMap(\.stringValue), names.count == given.arrayValue?.count else {
                throw SchemaError("\(source): 'x-evsync-index' must be an array of field names")
            }
            if let unknown = names.first(where: { rules[$0] == nil }) {
                throw SchemaError("\(source): 'x-evsync-index' names '\(unknown)', which is not among the properties")
            }
            indexed.formUnion(names)
        }
        if let long = indexed.sorted().first(where: { $0.utf8.count > Self.maxIndexedNameLength }) {
            throw SchemaError("\(source): field '\(long)' cannot be indexed: its name is longer than \(Self.maxIndexedNameLength) bytes")
        }
        var required: Set<String> = []
        if let given = root["required"] {
            guard let names = given.arrayValue?.compactMap(\.stringValue), names.count == given.arrayValue?.count else {
                throw SchemaError("\(source): 'required' must be an array of field names")
            }
            required = Set(names)
        }
        if let missing = required.first(where: { rules[$0] == nil }) {
            throw SchemaError("\(source): required field '\(missing)' is not among the properties")
        }
        if let given = root["x-evsync-collection"], given.stringValue?.isEmpty != false {
            throw SchemaError("\(source): 'x-evsync-collection' must be a non-empty string")
        }
        parts = Parts(
            name: title, remoteName: root["x-evsync-collection"]?.stringValue,
            fieldNames: Self.declarationOrder(of: properties.keys, in: text), required: required, defaults: defaults,
            renames: renames,
            remoteOptions: Dictionary(uniqueKeysWithValues: root.compactMap { key, value in Self.remoteProtocol(of: key).map { ($0, value) } }),
            rules: rules, indexedFields: indexed.sorted(), clearDefinitions: clear)
    }

    /// The longest name of an indexed field: it is part of the index's LMDB keys, with the entity's, a value and an id.
    static let maxIndexedNameLength = 64

    /// What a schema's top level may hold.
    static let rootKeywords: Set<String> = [
        "$schema", "$id", "$comment", "title", "description", "examples", "type", "properties", "required",
        "additionalProperties", "x-evsync-collection", "x-evsync-index",
    ]

    /// `dav` for `x-evsync-dav`: a keyword of a remote's, not one the store reads (`x-evsync-collection`).
    static func remoteProtocol(of keyword: String) -> String? {
        let prefix = "x-evsync-"
        guard keyword.hasPrefix(prefix), !rootKeywords.contains(keyword) else { return nil }
        let word = keyword.dropFirst(prefix.count)
        guard !word.isEmpty, word.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) }) else { return nil }
        return String(word)
    }

    /// The longest entity name: it is part of LMDB keys (at most 511 bytes, with a record's id or a remote's URL).
    public static let maxNameLength = 100

    static func isValidName(_ name: String) -> Bool {
        guard name.utf8.count <= maxNameLength, let first = name.unicodeScalars.first, first.properties.isAlphabetic, first.isASCII else { return false }
        return name.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_") }
    }


    /// Dictionaries forget order; the schema text has it, and tables read better in it.
    private static func declarationOrder(of names: Dictionary<String, JSONValue>.Keys, in text: String) -> [String] {
        let positions = Dictionary(uniqueKeysWithValues: names.map { name in
            (name, text.range(of: "\"\(name)\"").map { text.distance(from: text.startIndex, to: $0.lowerBound) } ?? .max)
        })
        return names.sorted { (positions[$0] ?? .max, $0) < (positions[$1] ?? .max, $1) }
    }

    // MARK: Validation

    /// Checks a whole record (after a change is applied) against the schema.
    public func validate(_ record: JSONObject) throws(SchemaError) {
        // A mistyped field first: `nmae=X` is the reason `name` is missing. The first in key order, so that the
        // error is the same each time; sorted only then, not for every record written.
        if record.keys.contains(where: { rules[$0] == nil }), let unknown = record.keys.sorted().first(where: { rules[$0] == nil }) {
            throw unknownField(unknown)
        }
        for field in required where record[field] == nil && defaults[field] == nil {
            throw SchemaError("\(name): required field '\(field)' is missing")
        }
        for (field, value) in record {
            try validate(field: field, value: value)
        }
    }

    /// Checks one field's value.
    public func validate(field: String, value: JSONValue) throws(SchemaError) {
        guard let rule = rules[field] else { throw unknownField(field) }
        // Deeper, it could not be read back (nor would Kinto take it).
        if value.nests(deeperThan: JSONValue.maxFieldNesting) {
            throw SchemaError("\(name).\(field) nests arrays and objects more than \(JSONValue.maxFieldNesting) deep")
        }
        // Capture the name, not `self`: the path closure would copy the whole schema per field.
        let entity = name
        try rule.check(value, path: "\(entity).\(field)")
    }

    public func hasField(_ field: String) -> Bool { rules[field] != nil }

    /// A record's stored fields as this schema reads them: renamed fields under their new names (`upcast`),
    /// with the `default` of each field it lacks.
    public func reading(_ fields: JSONObject) -> JSONObject {
        let fields = upcast(fields)
        guard !defaults.isEmpty else { return fields }
        return fields.merging(defaults) { stored, _ in stored }
    }

    /// Fields written under a former name (`x-evsync-renamed-from`) moved to the new one. The new name wins
    /// when both are there: after a rename, only the new one is written here.
    public func upcast(_ fields: JSONObject) -> JSONObject {
        guard !renames.isEmpty, renames.keys.contains(where: { fields[$0] != nil }) else { return fields }
        var fields = fields
        for (old, new) in renames {
            guard let value = fields.removeValue(forKey: old) else { continue }
            if fields[new] == nil { fields[new] = value }
        }
        return fields
    }

    /// An event as this schema reads it: its fields and states `upcast`. The log keeps it as written.
    public func upcast(_ event: Event) -> Event {
        guard !renames.isEmpty else { return event }
        var event = event
        event.set = upcast(event.set)
        // A former name unset beside its new one (`formerNames`) is that same field's old copy going.
        var unset: [String] = []
        for name in event.unset {
            let field = renames[name] ?? name
            if field != name, event.set[field] != nil || event.unset.contains(field) { continue }
            if !unset.contains(field) { unset.append(field) }
        }
        event.unset = unset
        func states(_ state: RecordState?) -> RecordState? { state.map { RecordState($0.fields.map(upcast)) } }
        (event.local, event.server, event.resolved) = (states(event.local), states(event.server), states(event.resolved))
        return event
    }

    /// Fields as the server holds them: a renamed field under its former name, the one the apps already
    /// installed read and write (docs/schemas.md, renames).
    public func wire(_ fields: JSONObject) -> JSONObject {
        guard !renames.isEmpty else { return fields }
        var fields = upcast(fields)
        for (old, new) in renames {
            if let value = fields.removeValue(forKey: new) { fields[old] = value }
        }
        return fields
    }

    /// An operation as the server is to receive it (`wire`).
    package func wire(_ operation: RemoteOperation) -> RemoteOperation {
        switch operation {
        case .create(let id, let fields): .create(id: id, fields: wire(fields))
        case .update(let id, let fields, let version): .update(id: id, fields: wire(fields), version: version)
        case .delete: operation
        }
    }

    /// The former names of the fields `changed` in `row` as stored: an event that writes a renamed field
    /// also unsets its old name, so that the row holds one of them.
    package func formerNames(of changed: some Sequence<String>, in row: JSONObject?) -> [String] {
        guard !renames.isEmpty, let row else { return [] }
        let changed = Set(changed)
        return renames.filter { changed.contains($0.value) && row[$0.key] != nil }.keys.sorted()
    }

    /// A stored record as this schema reads it (`reading`).
    func record(id: String, fields: JSONObject) -> Record {
        Record(entity: name, id: id, fields: reading(fields))
    }

    /// `Holiday has no field 'nmae' (did you mean 'name'?)`, or the fields there are when none is close.
    public func unknownField(_ field: String) -> SchemaError {
        let suggestion = Suggestion.didYouMean(field, among: fieldNames)
        return SchemaError("\(name) has no field '\(field)'" + (suggestion.isEmpty ? " (fields: \(fieldNames.joined(separator: ", ")))" : suggestion))
    }

    /// The field's string `format` (`date`, `date-time`, …), if its schema gives one: a remote with typed dates maps them.
    /// A field under its former name too (`wire`): a remote maps a renamed field's values as the field's.
    public func format(of field: String) -> String? { wireRule(field)?.format }

    /// Whether the field is base64 text (`contentEncoding`): a remote with a binary type maps it.
    public func isBase64(_ field: String) -> Bool { wireRule(field)?.base64 ?? false }

    /// The JSON types the field's `type` allows (`string`, `integer`, …); empty when it names none (any value).
    public func types(of field: String) -> Set<String> { wireRule(field)?.types ?? [] }

    /// The types an array field's `items` allow; nil when the field gives no `items` (any element).
    public func itemTypes(of field: String) -> Set<String>? { wireRule(field)?.items?.types }

    /// Whether the schema declares the field under this name or under its former one (`wire`).
    package func hasWireField(_ field: String) -> Bool { wireRule(field) != nil }

    private func wireRule(_ field: String) -> Rule? { rules[field] ?? renames[field].flatMap { rules[$0] } }
}

/// A schema that cannot be read, or a record that breaks one.
public struct SchemaError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
