public import EventStore
import EventSync

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
    package static func page(from body: [UInt8], collection: String) throws(KintoError) -> RemotePage {
        var page = RemotePage()
        var id: [UInt8] = []
        var sawData = false
        var newest: Int64?
        do {
            try body.withUnsafeBytes { bytes in
                try JSONParser.parseObject(bytes) { key, parser in
                    guard key.equals("data") else { _ = try parser.value(); return }
                    sawData = true
                    try parser.forEachElement { parser in
                        let appended = try page.append(idBuffer: &id) { writer, id in
                            guard let (version, isTombstone) = try record(at: &parser, writingFieldsTo: &writer, id: &id) else { return nil }
                            newest = max(newest ?? version, version)
                            return (RemoteVersion(version), isTombstone)
                        }
                        guard appended else {
                            throw KintoError(.server, "the server sent a \(collection) record without id or last_modified")
                        }
                    }
                }
            }
        } catch let error as KintoError {
            throw error
        } catch {
            throw KintoError(.server, "the server sent invalid JSON while listing \(collection): \(error)")
        }
        guard sawData else { throw KintoError(.server, "the server's list of \(collection) has no data array") }
        // Pages come sorted by last_modified; the newest is where the next pull starts.
        page.cursor = newest.map { RemoteCursor(String($0)) }
        return page
    }

    /// Reads the Kinto record at the parser's position: its id goes to `id`,
    /// its data fields to `writer`; returns its version (`last_modified`) and
    /// whether it is a tombstone (`deleted`). Nil if it lacks a valid id or a version.
    private static func record(at parser: inout JSONParser, writingFieldsTo writer: inout JSONWriter, id: inout [UInt8]) throws
        -> (version: Int64, isTombstone: Bool)? {
        var version: Int64?, deleted = false
        // Kinto's own members (`reservedFields`) are not fields.
        let read = try parser.writeCanonicalObject(to: &writer) { key, parser in
            if key.equals("id") {
                id.removeAll(keepingCapacity: true)
                _ = try parser.string(appendingTo: &id)
            }
            else if key.equals("last_modified") { version = try parser.value().int64Value }
            else if key.equals("deleted") { deleted = try parser.value().boolValue == true }
            else if key.equals("schema") { _ = try parser.value() }
            else { return false }
            return true
        }
        guard read else {
            // A key that needs Unicode rules to sort: the general way.
            guard let object = try parser.value().objectValue, let record = record(from: object) else { return nil }
            if let fields = record.fields { writer.write(object: fields) }
            id = Array(record.id.utf8)
            return (record.version.integer ?? 0, record.fields == nil)
        }
        guard let version, id.withUnsafeBytes(RecordID.isValid) else { return nil }
        return (version, deleted)
    }

    /// A Kinto record (`id`, `last_modified`, `deleted` and the data fields) as a `RemoteRecord`.
    static func record(from object: JSONObject) -> RemoteRecord? {
        guard let id = object["id"]?.stringValue, RecordID.isValid(id), let version = object["last_modified"]?.int64Value else {
            return nil
        }
        if object["deleted"]?.boolValue == true { return RemoteRecord(id: id, version: RemoteVersion(version), fields: nil) }
        var fields = object
        for reserved in reservedFields { fields[reserved] = nil }
        return RemoteRecord(id: id, version: RemoteVersion(version), fields: fields)
    }
}
