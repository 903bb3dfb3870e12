import EventStore
import Foundation
import Synchronization

/// A keyring's key being derived from the passphrase on a thread of its own (`SealedRemote.beginUnlocking`): the
/// derivation is pure computation, and what waits for it (`keys()`) is the first record to open or seal.
final class KeyDerivation: Sendable {
    let keyring: Keyring
    let version: RemoteVersion
    /// The entities whose records are re-sealed when the keyring's current key changed.
    let entities: [String]
    private let outcome = Outcome()

    init(_ keyring: Keyring, version: RemoteVersion, passphrase: [UInt8], remote: String, entities: [String]) {
        (self.keyring, self.version, self.entities) = (keyring, version, entities)
        let outcome = outcome
        Thread {
            outcome.settle(Result { () throws(SealingError) in try SealedRemote.unlocking(keyring, passphrase: passphrase, remote: remote) })
        }.start()
    }

    /// The keys, once derived: the derivation's own error for a wrong passphrase.
    func keys() throws(SealingError) -> UnlockedKeys {
        try outcome.wait().get()
    }

    /// The derivation's result, handed from its thread to the one that waits.
    private final class Outcome: Sendable {
        private let result = Mutex<Result<UnlockedKeys, SealingError>?>(nil)
        private let settled = DispatchSemaphore(value: 0)

        func settle(_ value: Result<UnlockedKeys, SealingError>) {
            result.withLock { $0 = value }
            settled.signal()
        }

        func wait() -> Result<UnlockedKeys, SealingError> {
            if let value = result.withLock({ $0 }) { return value }
            settled.wait()
            return result.withLock { $0 } ?? .failure(SealingError(.unavailable, "the key's derivation ended without a result"))
        }
    }
}
