@testable import EventStore
import EventSync
import Foundation
@testable import Sealing
import Testing
import TestSupport

/// The keyring and the envelope without a server: what opens, and what is refused.
@Suite struct KeyringTests {
    @Test func theKeyringReadsBackAndRefusesWhatIsNotItsOwn() throws {
        let (keyring, keys) = try Keyring.create(passphrase: Array("pass".utf8), parameters: KDFParameters(opsLimit: 1, memLimit: 8 << 20))
        let read = try Keyring(fields: keyring.fields, remote: "r")
        #expect(read == keyring)
        #expect(try read.unlock(passphrase: Array("pass".utf8), remote: "r").keys == keys.keys)
        #expect(throws: SealingError(.wrongPassphrase, "the passphrase does not open the keys of r; nothing was written")) {
            try read.unlock(passphrase: Array("Pass".utf8), remote: "r")
        }
        var greedy = keyring.fields
        greedy["kdf"] = .string("argon2id13:3:\(KDFParameters.largestMemory * 2):\(Base64.encode(keyring.salt))")
        #expect(throws: SealingError.self) { try Keyring(fields: greedy, remote: "r").unlock(passphrase: Array("pass".utf8), remote: "r") }
        // The envelope is bound to the record: the same contents under another id do not open.
        let envelope = SealedEnvelope(keys: keys)
        let sealed = try envelope.seal(.init(counter: 1, fields: ["name": "x"]), entity: "Holiday", id: "one")
        #expect(try envelope.open(sealed, entity: "Holiday", id: "one").get() == .init(counter: 1, fields: ["name": "x"]))
        #expect((try? envelope.open(sealed, entity: "Holiday", id: "two").get()) == nil)
        #expect((try? envelope.open(sealed, entity: "Birthday", id: "one").get()) == nil)
    }
}
