package import EventStore
import Foundation

/// The record keys of one remote, as the server keeps them: each wrapped (XChaCha20-Poly1305) by the key a
/// passphrase stretches to (Argon2id, its salt and cost beside it). Stored as one record, `keyring`, of an entity
/// of evsync's own on the remote (Kinto: the collection `evsync-keyring` of the bucket; Parse: the class
/// `EvsyncKeyring`), so that it travels by the remote's own protocol and every device finds it where the data is.
/// Keys are never removed: a record sealed under an old key opens on a device that was away during a rotation.
package struct Keyring: Sendable, Equatable {
    /// The format of the record (1).
    package static let format = 1
    package static let recordID = "keyring"
    package static let entityName = "EvsyncKeyring"

    /// The entity the keyring is a record of: flat text fields, so any adapter carries it unchanged.
    package static func schema() throws(SealingError) -> EntitySchema {
        let text = """
        {"title": "\(entityName)", "x-evsync-collection": "evsync-keyring", "type": "object",
         "properties": {"format": {"type": "integer"}, "kdf": {"type": "string"}, "place": {"type": "string"},
                        "current": {"type": "string"}, "keys": {"type": "string"}, "passphraseChanged": {"type": "string"}}}
        """
        do {
            return try EntitySchema(json: text, source: "the keyring's schema")
        } catch {
            throw SealingError(.unavailable, "the keyring's own schema does not parse: \(error)")
        }
    }

    /// Argon2id's salt and cost.
    package var salt: [UInt8]
    package var parameters: KDFParameters
    /// 16 random bytes naming this keyring's place: every record's associated data carries it, so a record
    /// copied from another bucket (another keyring) does not open here.
    package var place: [UInt8]
    /// The key new records are sealed with.
    package var current: String
    /// Key id → nonce and wrapped key.
    package var wrapped: [String: (nonce: [UInt8], key: [UInt8])]
    /// When the passphrase was last changed (ISO 8601), to tell a device still giving the old one.
    package var passphraseChanged: String?

    package static func == (a: Keyring, b: Keyring) -> Bool {
        a.salt == b.salt && a.parameters == b.parameters && a.place == b.place && a.current == b.current
            && a.passphraseChanged == b.passphraseChanged
            && a.wrapped.mapValues { $0.nonce + $0.key } == b.wrapped.mapValues { $0.nonce + $0.key }
    }

    /// A new keyring holding one new key, wrapped by `passphrase`; with the unwrapped keys.
    package static func create(passphrase: [UInt8], parameters: KDFParameters = .standard) throws(SealingError) -> (Keyring, UnlockedKeys) {
        let salt = try Sodium.randomBytes(Sodium.saltBytes)
        let wrapping = try Sodium.deriveKey(passphrase: passphrase, salt: salt, parameters: parameters)
        var keyring = Keyring(salt: salt, parameters: parameters, place: try Sodium.randomBytes(16), current: "k1", wrapped: [:])
        let key = try Sodium.newKey()
        try keyring.wrap(key, id: "k1", under: wrapping)
        return (keyring, UnlockedKeys(place: keyring.place, current: "k1", keys: ["k1": key], wrapping: wrapping))
    }

    /// Every key, unwrapped by `passphrase`; `.wrongPassphrase` when it does not open them.
    package func unlock(passphrase: [UInt8], remote: String) throws(SealingError) -> UnlockedKeys {
        let wrapping = try Sodium.deriveKey(passphrase: passphrase, salt: salt, parameters: parameters)
        return try unlock(with: wrapping, remote: remote)
    }

    package func unlock(with wrapping: SymmetricKey, remote: String) throws(SealingError) -> UnlockedKeys {
        var keys: [String: SymmetricKey] = [:]
        for (id, sealed) in wrapped {
            guard let key = Sodium.open(sealed.key, nonce: sealed.nonce, associatedData: associatedData(keyID: id), key: wrapping),
                  key.count == Sodium.keyBytes else {
                let changed = passphraseChanged.map { " (it was changed on another device on \($0): give the new one)" } ?? ""
                throw SealingError(.wrongPassphrase, "the passphrase does not open the keys of \(remote)\(changed); nothing was written")
            }
            keys[id] = SymmetricKey(bytes: key)
        }
        guard keys[current] != nil else { throw SealingError(.damagedKeyring, "the keyring of \(remote) names key \(current), which it does not hold") }
        return UnlockedKeys(place: place, current: current, keys: keys, wrapping: wrapping)
    }

    /// Adds `key` as `id`, wrapped under `wrapping`.
    package mutating func wrap(_ key: SymmetricKey, id: String, under wrapping: SymmetricKey) throws(SealingError) {
        let (nonce, sealed) = try Sodium.seal(key.bytes, associatedData: associatedData(keyID: id), key: wrapping)
        wrapped[id] = (nonce, sealed)
    }

    /// A key is bound to this keyring's place and its own id: it cannot be moved to another id or keyring.
    private func associatedData(keyID: String) -> [UInt8] {
        Array("evsync keyring 1\u{0}".utf8) + place + [0] + Array(keyID.utf8)
    }

    // MARK: the record

    package var fields: JSONObject {
        var keys: JSONObject = [:]
        for (id, sealed) in wrapped { keys[id] = .string(Base64.encode(sealed.nonce) + "." + Base64.encode(sealed.key)) }
        var fields: JSONObject = [
            "format": .number(JSONNumber(Self.format)),
            "kdf": .string("argon2id13:\(parameters.opsLimit):\(parameters.memLimit):\(Base64.encode(salt))"),
            "place": .string(Base64.encode(place)),
            "current": .string(current),
            "keys": .string(JSONWriter.string(.object(keys))),
        ]
        if let passphraseChanged { fields["passphraseChanged"] = .string(passphraseChanged) }
        return fields
    }

    /// Reads the keyring record of `remote`; `.damagedKeyring` naming what is wrong.
    package init(fields: JSONObject, remote: String) throws(SealingError) {
        func damaged(_ what: String) -> SealingError { SealingError(.damagedKeyring, "the keyring of \(remote) \(what)") }
        guard fields["format"]?.numberValue?.description == String(Self.format) else {
            throw damaged("is of a format this evsync does not read (\(fields["format"].map { JSONWriter.string($0) } ?? "none"); it reads \(Self.format))")
        }
        let kdf = (fields["kdf"]?.stringValue ?? "").split(separator: ":", omittingEmptySubsequences: false)
        guard kdf.count == 4, kdf[0] == "argon2id13", let ops = Int(kdf[1]), let memory = Int(kdf[2]),
              let salt = Base64.decode(String(kdf[3])) else { throw damaged("has no readable Argon2id parameters") }
        guard let place = fields["place"]?.stringValue.flatMap(Base64.decode), place.count == 16 else { throw damaged("has no readable place") }
        guard let current = fields["current"]?.stringValue, !current.isEmpty else { throw damaged("names no current key") }
        guard let text = fields["keys"]?.stringValue, case .object(let keys)? = try? JSONParser.parse(text) else { throw damaged("has no readable keys") }
        var wrapped: [String: (nonce: [UInt8], key: [UInt8])] = [:]
        for (id, value) in keys {
            let parts = (value.stringValue ?? "").split(separator: ".")
            guard parts.count == 2, let nonce = Base64.decode(String(parts[0])), let key = Base64.decode(String(parts[1])) else {
                throw damaged("holds key \(id) in a form evsync cannot read")
            }
            wrapped[id] = (nonce, key)
        }
        self.init(salt: salt, parameters: KDFParameters(opsLimit: ops, memLimit: memory), place: place, current: current, wrapped: wrapped,
                  passphraseChanged: fields["passphraseChanged"]?.stringValue)
    }

    package init(salt: [UInt8], parameters: KDFParameters, place: [UInt8], current: String, wrapped: [String: (nonce: [UInt8], key: [UInt8])],
                 passphraseChanged: String? = nil) {
        (self.salt, self.parameters, self.place, self.current, self.wrapped) = (salt, parameters, place, current, wrapped)
        self.passphraseChanged = passphraseChanged
    }
}

/// A keyring's keys in the clear, in this process only.
package struct UnlockedKeys: Sendable {
    package let place: [UInt8]
    package var current: String
    package var keys: [String: SymmetricKey]
    /// The key the passphrase stretched to: a rotation wraps its new key with it.
    package let wrapping: SymmetricKey
}

/// Base64 (RFC 4648, with padding), as Foundation writes it.
enum Base64 {
    static func encode(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }
    static func decode(_ text: String) -> [UInt8]? { Data(base64Encoded: text).map(Array.init) }
}
