public import EventStore
import EventSync
package import RemoteHTTP

/// How Kinto spells what evsync syncs: collections named after entities,
/// records whose `id`, `last_modified`, `deleted` and `schema` are Kinto's
/// own members, and list pages read straight into the log's canonical JSON.
extension KintoRemote {
    /// Members of a Kinto record that are Kinto's, not the record's fields.
    static let reservedFields: Set<String> = ["id", "last_modified", "deleted", "schema"]

    /// The collection an entity lives in: `x-evsync-collection`, else its name lower-cased and pluralised.
    public static func collection(for entity: EntitySchema) -> String {
        entity.remoteName ?? pluralise(entity.name.lowercased())
    }

    /// Where an entity's records live: its collection, in the bucket its schema names (`"x-evsync-kinto":
    /// {"bucket": "family"}`: a bucket shared by many users, say) or else the remote's.
    func place(of entity: EntitySchema) -> KintoCollection {
        KintoCollection(bucket: Self.bucket(named: entity) ?? bucket, name: Self.collection(for: entity), entity: entity.name)
    }

    /// The bucket an entity's schema names (`x-evsync-kinto.bucket`), if it names one.
    static func bucket(named entity: EntitySchema) -> String? {
        entity.remoteOptions[schemaProtocol]?.objectValue?["bucket"]?.stringValue
    }

    /// The word of the schema keyword this remote reads: `x-evsync-kinto`.
    public static let schemaProtocol = "kinto"

    static func pluralise(_ word: String) -> String {
        let vowels: Set<Character> = ["a", "e", "i", "o", "u"]
        if word.hasSuffix("y"), word.count > 1, !vowels.contains(word[word.index(word.endIndex, offsetBy: -2)]) {
            return word.dropLast() + "ies"
        }
        if ["s", "x", "z", "ch", "sh"].contains(where: word.hasSuffix) { return word + "es" }
        return word + "s"
    }

    // MARK: Records

    /// A list response (`{"data": [records…], …}`) as a page, read without
    /// building the records: their fields go straight to canonical JSON.
    ///
    /// A record the store cannot hold (not an object, no usable `id`, no
    /// `last_modified`, a value nested too deep to read, a key given twice) is put in the page's
    /// `skipped` with the reason, and the rest of the page is read: one bad
    /// record written by another client must not stop every sync. Only a page
    /// that is not JSON at all fails. The cursor moves past skipped records too.
    package static func page(from body: [UInt8], collection: String) throws(HTTPRemoteError) -> RemotePage {
        var page = RemotePage()
        page.reserveCapacity(body.count)  // canonical JSON is no longer than Kinto's, less its own members
        var id: [UInt8] = []
        var sawData = false
        var newest: Int64?
        do {
            try body.withUnsafeBytes { bytes in
                try JSONParser.parseObject(bytes) { key, parser in
                    guard key.equals("data") else { _ = try parser.value(); return }
                    sawData = true
                    func note(_ reading: Reading) {
                        switch reading {
                        case .record(let version, _):
                            newest = max(newest ?? version, version)
                        case .skipped(let skipped):
                            if let version = skipped.version?.integer { newest = max(newest ?? version, version) }
                            page.skipped.append(skipped)
                        }
                    }
                    try parser.forEachElement(orNotAnObject: true) { parser in
                        var reading: Reading?
                        try page.append(idBuffer: &id) { writer, id in
                            reading = try record(at: &parser, writingFieldsTo: &writer, id: &id)
                            guard case .record(let version, let isTombstone) = reading else { return nil }
                            return (RemoteVersion(version), isTombstone)
                        }
                        if let reading { note(reading) }
                    } passingOver: { element, error in
                        note(.skipped(unreadable(element, error)))
                    }
                }
            }
        } catch {
            throw HTTPRemoteError(.server, "the server sent invalid JSON while listing \(collection): \(error)")
        }
        guard sawData else { throw HTTPRemoteError(.server, "the server's list of \(collection) has no data array") }
        // Pages come sorted by last_modified; the newest is where the next pull starts.
        page.cursor = newest.map { RemoteCursor(String($0)) }
        return page
    }

    /// What one element of a list page turned out to be.
    private enum Reading {
        case record(version: Int64, isTombstone: Bool)
        case skipped(SkippedRecord)
    }

    /// Reads the Kinto record at the parser's position: its id goes to `id`,
    /// its data fields to `writer`; returns its version (`last_modified`) and
    /// whether it is a tombstone (`deleted`), or why it cannot be stored.
    private static func record(at parser: inout JSONParser, writingFieldsTo writer: inout JSONWriter, id: inout [UInt8]) throws
        -> Reading {
        var idValue: JSONValue?, version: JSONValue?, deleted = false
        // Kinto's own members (`reservedFields`) are not fields.
        let read = try parser.writeCanonicalObject(to: &writer) { key, parser in
            if key.equals("id") {
                id.removeAll(keepingCapacity: true)
                // The id's bytes straight to `id`, built as a value only when it is not a string.
                idValue = try parser.string(appendingTo: &id) ? .string("") : .null
            }
            else if key.equals("last_modified") { version = try parser.value() }
            else if key.equals("deleted") { deleted = try parser.value().boolValue == true }
            else if key.equals("schema") { _ = try parser.value() }
            else { return false }
            return true
        }
        guard read else {
            // A key that needs Unicode rules to sort: the general way.
            guard let object = try parser.value().objectValue else {
                return .skipped(SkippedRecord(id: nil, version: nil, reason: "it is not a JSON object"))
            }
            if let skipped = problem(id: object["id"], version: object["last_modified"]) { return .skipped(skipped) }
            guard let record = record(from: object) else { return .skipped(SkippedRecord(id: nil, version: nil, reason: "it has no id")) }
            if let fields = record.fields { writer.write(object: fields) }
            id = Array(record.id.utf8)
            return .record(version: record.version.integer ?? 0, isTombstone: record.fields == nil)
        }
        // The common case checked on the bytes: no string is built for a good record's id.
        if case .string? = idValue, let number = version?.int64Value,
           id.withUnsafeBytes({ RecordID.isValid($0, maxLength: RecordID.maxServerLength) }) {
            return .record(version: number, isTombstone: deleted)
        }
        if case .string? = idValue { idValue = .string(String(decoding: id, as: UTF8.self)) }
        return .skipped(problem(id: idValue, version: version) ?? SkippedRecord(id: nil, version: nil, reason: "it has no id"))
    }

    /// Why a record with this `id` and `last_modified` cannot be stored; nil if it can.
    private static func problem(id: JSONValue?, version: JSONValue?, unreadable: String? = nil) -> SkippedRecord? {
        let usableID = id?.stringValue.flatMap { isValidID($0) ? $0 : nil }
        let number = version?.int64Value.map(RemoteVersion.init)
        let reason: String
        switch (id, number) {
        case (nil, _): reason = "it has no id"
        case (.string(let text)?, _) where usableID == nil:
            let isKintoID = Array(text.utf8).withUnsafeBytes { RecordID.isValid($0, maxLength: .max) }
            reason = isKintoID
                ? "its id is \(text.utf8.count) characters, more than evsync holds (\(RecordID.maxServerLength))"
                : "its id \(quoted(text)) is not a valid Kinto id"
        case (_, _) where usableID == nil: reason = "its id is not a string"
        case (_, nil): reason = version == nil ? "it has no last_modified" : "its last_modified is not a whole number"
        default:
            guard let unreadable else { return nil }
            return SkippedRecord(id: usableID, version: number, reason: unreadable)
        }
        return SkippedRecord(id: usableID, version: number, reason: unreadable.map { "\($0); \(reason)" } ?? reason)
    }

    /// A record the reader refused with `error` (its bytes are valid JSON):
    /// as much of its id and version as can be read without reading the rest.
    private static func unreadable(_ element: UnsafeRawBufferPointer, _ error: JSONParseError) -> SkippedRecord {
        guard element.first == UInt8(ascii: "{") else {
            return SkippedRecord(id: nil, version: nil, reason: "it is not a JSON object")
        }
        var id: JSONValue?, version: JSONValue?
        try? JSONParser.scanObject(element) { key, parser in
            if key.equals("id") { id = try parser.value() }
            else if key.equals("last_modified") { version = try parser.value() }
            else { try parser.skipValue(startingAt: parser.offset) }
            return true
        }
        let reason = "it cannot be read (\(error.reason))"
        return problem(id: id, version: version, unreadable: reason) ?? SkippedRecord(id: nil, version: nil, reason: reason)
    }

    /// Text from the server inside a reason: JSON-quoted, so control characters stay visible, and cut short.
    static func quoted(_ text: String) -> String {
        let short = text.count > 40 ? String(text.prefix(40)) + "…" : text
        return JSONWriter.string(.string(short))
    }

    /// Kinto's record id rule (`^[a-zA-Z0-9][a-zA-Z0-9_-]*$`, any length), as far as the store holds ids.
    static func isValidID(_ id: String) -> Bool {
        RecordID.isValidServerID(id)
    }

    /// A Kinto record (`id`, `last_modified`, `deleted` and the data fields) as a `RemoteRecord`; nil if it cannot be one (see `problem`).
    static func record(from object: JSONObject) -> RemoteRecord? {
        guard problem(id: object["id"], version: object["last_modified"]) == nil,
              let id = object["id"]?.stringValue, let version = object["last_modified"]?.int64Value else { return nil }
        if object["deleted"]?.boolValue == true { return RemoteRecord(id: id, version: RemoteVersion(version), fields: nil) }
        var fields = object
        for reserved in reservedFields { fields[reserved] = nil }
        return RemoteRecord(id: id, version: RemoteVersion(version), fields: fields)
    }
}
