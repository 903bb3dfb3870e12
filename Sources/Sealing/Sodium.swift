internal import CSodium

/// The three things evsync asks of libsodium, and nothing of its own: random bytes, Argon2id to stretch a
/// passphrase into a key, and XChaCha20-Poly1305 (IETF) to seal and open with associated data. Every buffer
/// handed to C is sized here from libsodium's own constants.
package enum Sodium {
    package static let keyBytes = Int(crypto_aead_xchacha20poly1305_ietf_KEYBYTES)
    package static let nonceBytes = Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
    package static let tagBytes = Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)
    package static let saltBytes = Int(crypto_pwhash_SALTBYTES)
    package static let argon2id = Int32(crypto_pwhash_ALG_ARGON2ID13)

    /// `sodium_init` once per process; it fails only where the system gives no random source.
    private static let initialised: Bool = sodium_init() >= 0

    private static func ready() throws(SealingError) {
        guard initialised else { throw SealingError(.unavailable, "libsodium could not start (no source of random bytes)") }
    }

    package static func randomBytes(_ count: Int) throws(SealingError) -> [UInt8] {
        try ready()
        var bytes = [UInt8](repeating: 0, count: max(count, 1))
        writing(&bytes) { randombytes_buf($0, count) }
        return Array(bytes.prefix(count))
    }

    /// BLAKE2b (`crypto_generichash`, 32 bytes): a name for a secret that is not the secret.
    package static func digest(_ bytes: [UInt8]) throws(SealingError) -> [UInt8] {
        try ready()
        var out = [UInt8](repeating: 0, count: Int(crypto_generichash_BYTES))
        writing(&out) { out in reading(bytes) { _ = crypto_generichash(out, Int(crypto_generichash_BYTES), $0, UInt64(bytes.count), nil, 0) } }
        return out
    }

    /// A random key, for records.
    package static func newKey() throws(SealingError) -> SymmetricKey {
        SymmetricKey(bytes: try randomBytes(keyBytes))
    }

    /// Argon2id (`crypto_pwhash`, ALG_ARGON2ID13) of the passphrase: the key that wraps the record keys.
    package static func deriveKey(passphrase: [UInt8], salt: [UInt8], parameters: KDFParameters) throws(SealingError) -> SymmetricKey {
        try ready()
        guard salt.count == saltBytes else { throw SealingError(.damagedKeyring, "the keyring's salt is \(salt.count) bytes, not \(saltBytes)") }
        guard (Int(crypto_pwhash_OPSLIMIT_MIN)...Int(crypto_pwhash_OPSLIMIT_MAX)).contains(parameters.opsLimit),
              (Int(crypto_pwhash_MEMLIMIT_MIN)...KDFParameters.largestMemory).contains(parameters.memLimit) else {
            throw SealingError(.damagedKeyring, "the keyring asks for Argon2id with \(parameters.opsLimit) passes over "
                + "\(parameters.memLimit) bytes, outside what evsync accepts (at most \(KDFParameters.largestMemory >> 20) MiB)")
        }
        var key = [UInt8](repeating: 0, count: keyBytes)
        let status = writing(&key) { out in
            reading(passphrase) { word in
                reading(salt) { salt in
                    UnsafeRawPointer(word).withMemoryRebound(to: CChar.self, capacity: max(passphrase.count, 1)) { text in
                        crypto_pwhash(out, UInt64(keyBytes), text, UInt64(passphrase.count), salt, UInt64(parameters.opsLimit),
                                      parameters.memLimit, argon2id)
                    }
                }
            }
        }
        guard status == 0 else { throw SealingError(.unavailable, "Argon2id could not get the \(parameters.memLimit >> 20) MiB it needs") }
        return SymmetricKey(bytes: key)
    }

    /// XChaCha20-Poly1305 of `message` under `key` with a fresh random nonce; `associatedData` is authenticated, not sent.
    package static func seal(_ message: [UInt8], associatedData: [UInt8], key: SymmetricKey) throws(SealingError) -> (nonce: [UInt8], ciphertext: [UInt8]) {
        let nonce = try randomBytes(nonceBytes)
        let messageLength = message.count
        var ciphertext = [UInt8](repeating: 0, count: message.count + tagBytes)
        var written: UInt64 = 0
        writing(&ciphertext) { out in
            reading(message) { message in
                reading(associatedData) { data in
                    reading(nonce) { nonce in
                        reading(key.bytes) { key in
                            _ = crypto_aead_xchacha20poly1305_ietf_encrypt(out, &written, message, UInt64(messageLength),
                                                                           data, UInt64(associatedData.count), nil, nonce, key)
                        }
                    }
                }
            }
        }
        return (nonce, ciphertext)
    }

    /// The message, if `ciphertext` was sealed under `key` with this nonce and associated data; nil otherwise
    /// (another key, another record's data, a byte changed anywhere).
    package static func open(_ ciphertext: [UInt8], nonce: [UInt8], associatedData: [UInt8], key: SymmetricKey) -> [UInt8]? {
        guard initialised, nonce.count == nonceBytes, key.bytes.count == keyBytes, ciphertext.count >= tagBytes else { return nil }
        var message = [UInt8](repeating: 0, count: max(ciphertext.count - tagBytes, 1))
        var read: UInt64 = 0
        let status = writing(&message) { out in
            reading(ciphertext) { sealed in
                reading(associatedData) { data in
                    reading(nonce) { nonce in
                        reading(key.bytes) { key in
                            crypto_aead_xchacha20poly1305_ietf_decrypt(out, &read, nil, sealed, UInt64(ciphertext.count),
                                                                       data, UInt64(associatedData.count), nonce, key)
                        }
                    }
                }
            }
        }
        guard status == 0 else { return nil }
        return Array(message.prefix(Int(read)))
    }

    // libsodium declares its pointers non-null, even beside a length of zero: an empty array, which has no
    // address, is lent as one zero byte (its length still says 0).
    private static func reading<R>(_ bytes: [UInt8], _ body: (UnsafePointer<UInt8>) -> R) -> R {
        (bytes.isEmpty ? [0] : bytes).withUnsafeBufferPointer { body($0.baseAddress.unsafelyUnwrapped) }
    }

    private static func writing<R>(_ bytes: inout [UInt8], _ body: (UnsafeMutablePointer<UInt8>) -> R) -> R {
        if bytes.isEmpty { bytes = [0] }
        return bytes.withUnsafeMutableBufferPointer { body($0.baseAddress.unsafelyUnwrapped) }
    }
}

/// A 32-byte key: a record key, or the key a passphrase stretches to. Swift's arrays are copied and moved
/// freely, so no wiping of memory is promised; the key never leaves the process but sealed.
package struct SymmetricKey: Sendable, Equatable {
    package let bytes: [UInt8]

    package init(bytes: [UInt8]) {
        self.bytes = bytes
    }
}

/// Argon2id's cost, stored in the keyring beside the salt, so that a later evsync may choose another.
package struct KDFParameters: Sendable, Equatable {
    /// Passes over memory.
    package var opsLimit: Int
    /// Bytes of memory.
    package var memLimit: Int

    /// Three passes over 64 MiB: about a fifth of a second here, once per process (docs/encryption.md).
    package static let standard = KDFParameters(opsLimit: 3, memLimit: 64 << 20)
    /// A keyring asking for more is refused: a server must not make a device allocate what it likes.
    package static let largestMemory = 1 << 30
}
