package import EventStore

/// One record as the server holds it when sealed: a single text field, `evsync_sealed`,
/// `evs1.<key id>.<nonce>.<ciphertext>` (Base64), over the record's fields and its version counter in canonical
/// JSON: `{"counter":3,"fields":{…}}`, or `{"counter":4,"deleted":true}` for a sealed deletion. The associated data
/// binds it to the keyring's place, the entity, the record id and the key id (docs/encryption.md), so a record
/// moved to another id, entity or bucket does not open. A field the schema leaves in clear (`x-evsync-clear`) is
/// sent beside it as well, a copy for the server's filters: the sealed value counts, and a copy that says otherwise
/// is the server's lie.
package struct SealedEnvelope {
    package static let field = "evsync_sealed"
    private static let prefix = "evs1"

    /// What a sealed record says once opened.
    package struct Contents: Equatable {
        // Equal when they say the same, whichever key sealed them.
        /// This record's version in the history of every device with the key: one more at each write.
        package var counter: UInt64
        /// nil for a sealed deletion.
        package var fields: JSONObject?
        /// The key it was sealed with (what `seal` is given is ignored: it seals with the current key).
        package var keyID = ""

        package init(counter: UInt64, fields: JSONObject?, keyID: String = "") {
            (self.counter, self.fields, self.keyID) = (counter, fields, keyID)
        }

        package static func == (a: Contents, b: Contents) -> Bool { a.counter == b.counter && a.fields == b.fields }
    }

    package let keys: UnlockedKeys
    /// The fields sent in clear too, by the name the server holds them under (`clearFields(of:)`).
    package let clear: [String]

    package init(keys: UnlockedKeys, clear: [String] = []) {
        (self.keys, self.clear) = (keys, clear)
    }

    /// The fields to send for `contents` of record `id`, sealed under the current key, with a clear copy of each
    /// of the `clear` fields it holds.
    package func seal(_ contents: Contents, entity: String, id: String) throws(SealingError) -> JSONObject {
        guard let key = keys.keys[keys.current] else { throw SealingError(.damagedKeyring, "no current key to seal with") }
        var plain: JSONObject = ["counter": .number(JSONNumber(contents.counter))]
        if let fields = contents.fields { plain["fields"] = .object(fields) } else { plain["deleted"] = true }
        let (nonce, ciphertext) = try Sodium.seal(Array(JSONWriter.string(.object(plain)).utf8),
                                                  associatedData: associatedData(entity: entity, id: id, keyID: keys.current), key: key)
        var sent: JSONObject = [Self.field: .string([Self.prefix, keys.current, Base64.encode(nonce), Base64.encode(ciphertext)].joined(separator: "."))]
        for name in clear { sent[name] = contents.fields?[name] }
        return sent
    }

    /// The contents of a record the server holds, or why it cannot be opened (the reason a skip names): a clear
    /// copy of one of the `clear` fields that differs from the sealed value is refused. A missing copy is not (a
    /// record sealed before the schema left the field in clear).
    package func open(_ fields: JSONObject, entity: String, id: String) -> Result<Contents, SealingError> {
        func refuse(_ reason: String) -> Result<Contents, SealingError> { .failure(SealingError(.record, reason)) }
        guard let text = fields[Self.field]?.stringValue else { return refuse("it is not sealed (no \(Self.field) field): refused from an encrypted remote") }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == Self.prefix, let nonce = Base64.decode(String(parts[2])),
              let ciphertext = Base64.decode(String(parts[3])) else { return refuse("its sealed field is not in a form evsync reads") }
        let keyID = String(parts[1])
        guard let key = keys.keys[keyID] else { return refuse("it is sealed with key \(keyID), which this remote's keyring does not hold") }
        guard let plain = Sodium.open(ciphertext, nonce: nonce, associatedData: associatedData(entity: entity, id: id, keyID: keyID), key: key) else {
            return refuse("it does not open: changed on the server, or sealed for another record or bucket")
        }
        guard case .object(let object)? = try? JSONParser.parse(plain), let counter = object["counter"]?.numberValue.flatMap({ UInt64($0.description) }) else {
            return refuse("it opens, but holds no record evsync reads")
        }
        let deleted = object["deleted"]?.boolValue == true
        let recordFields = deleted ? nil : object["fields"]?.objectValue
        if !deleted, recordFields == nil { return refuse("it opens, but holds no fields") }
        if let lie = clear.first(where: { fields[$0] != nil && fields[$0] != recordFields?[$0] }) {
            return refuse("its clear copy of \(lie) is not what it sealed: changed on the server")
        }
        return .success(Contents(counter: counter, fields: recordFields, keyID: keyID))
    }

    private func associatedData(entity: String, id: String, keyID: String) -> [UInt8] {
        Array("evsync record 1\u{0}".utf8) + keys.place + Array("\u{0}\(entity)\u{0}\(id)\u{0}\(keyID)".utf8)
    }

    /// The fields of `schema` sent in clear beside the sealed one, by the name the server holds them under
    /// (a renamed field's former name).
    package static func clearFields(of schema: EntitySchema) -> [String] {
        schema.clearFields.map { field in schema.renames.first { $0.value == field }?.key ?? field }
    }

    /// The schema the inner remote is given for `schema`'s entity: the same name and place, one sealed text field,
    /// and the fields left in clear as the schema defines them (so that an adapter sends them as it would unsealed).
    package static func wireSchema(for schema: EntitySchema) throws(SealingError) -> EntitySchema {
        var properties: JSONObject = [field: ["type": "string"]]
        for (name, wire) in zip(schema.clearFields, clearFields(of: schema)) {
            properties[wire] = .object((schema.clearDefinitions[name]?.objectValue ?? [:]).filter { !$0.key.hasPrefix("x-evsync-") && $0.key != "default" })
        }
        var root: JSONObject = ["title": .string(schema.name), "type": "object", "properties": .object(properties)]
        if let remoteName = schema.remoteName { root["x-evsync-collection"] = .string(remoteName) }
        do {
            return try EntitySchema(json: JSONWriter.string(.object(root)), source: "the sealed form of \(schema.name)")
        } catch {
            throw SealingError(.notSupported, "\(schema.name) cannot be sealed: \(error)")
        }
    }
}
