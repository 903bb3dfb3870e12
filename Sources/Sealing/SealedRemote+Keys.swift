import EventStore
public import EventSync
import Foundation
import Synchronization

/// The keyring's life on the server: opened (or made) at the first sync of a process, a key rotated, the
/// passphrase changed, and records under an older key re-sealed a few at each sync.
extension SealedRemote {
    /// Opens the remote's keyring with the passphrase, creating it at the first sealed sync; nothing is written
    /// here or there until it opens. `entities`: those whose records are re-sealed when the current key changed.
    func unlock(entities: [String]) throws {
        try beginUnlocking(entities: entities)
        try finishUnlocking()
    }

    /// The first half of `unlock`: reads the keyring and starts deriving its key on a thread of its own (Argon2id
    /// costs a fifth of a second by design), so that a pull's first requests go out meanwhile; a remote without
    /// a keyring yet gets one made, and is unlocked at once.
    func beginUnlocking(entities: [String]) throws {
        guard keys == nil, derivation == nil else { return }
        let remembered = try store.sealingValue("place", remote: address)
        let opened: (Keyring, RemoteVersion, UnlockedKeys)
        if let found = try readKeyring() {
            if let remembered, remembered != Base64.encode(found.record.place) {
                throw SealingError(.damagedKeyring, "the keyring on \(address) is not the one this store synced with (replaced on the server?): nothing was sent")
            }
            derivation = KeyDerivation(found.record, version: found.version, passphrase: try words(), remote: address, entities: entities)
            return
        } else {
            if remembered != nil {
                throw SealingError(.keyringMissing, "\(address) no longer holds the keyring this store synced with (a wiped or replaced server?): nothing was sent")
            }
            if try store.hasSynced(with: address) {
                throw SealingError(.notSupported, "this store synced with \(address) in clear: an encrypted sync needs a bucket of its own (the server keeps what it was sent)")
            }
            let made = try Keyring.create(passphrase: try words())
            switch try inner.push([.create(id: Keyring.recordID, fields: made.0.fields)], of: try Keyring.schema()).first {
            case .applied(let version)?:
                opened = (made.0, version, made.1)
            case .preconditionFailed(let current?)? where current.fields != nil:
                // Another device made one meanwhile: that one is the remote's.
                let keyring = try Keyring(fields: current.fields ?? [:], remote: address)
                opened = (keyring, current.version, try Self.unlocking(keyring, passphrase: try words(), remote: address))
            case .rejected(let status, let message)?:
                throw SealingError(.unavailable, "\(address) refused the keyring (\(status)): \(message)")
            default:
                throw SealingError(.unavailable, "\(address) did not store the keyring")
            }
        }
        try opening(opened, entities: entities)
    }

    /// The second half of `unlock`: waits for the key `beginUnlocking` is deriving, and opens the keys with it (a
    /// wrong passphrase is refused here, before anything is written).
    func finishUnlocking() throws {
        guard keys == nil else { return }
        guard let derivation else { return try unlock(entities: []) }
        self.derivation = nil
        try opening((derivation.keyring, derivation.version, try derivation.keys()), entities: derivation.entities)
    }

    /// Keeps the opened keyring, and what this store must remember of it.
    private func opening(_ opened: (Keyring, RemoteVersion, UnlockedKeys), entities: [String]) throws {
        var values: [String: String?] = ["place": Base64.encode(opened.0.place), "current": opened.0.current]
        // A key made current since this store last looked: its records under older keys are re-sealed, a few a sync.
        if let seen = try store.sealingValue("current", remote: address), seen != opened.0.current {
            for entity in entities { values["reseal \(entity)"] = "" }
        }
        try store.recordSealing(remote: address, values: values)
        (keyring, keys) = ((opened.0, opened.1), opened.2)
    }

    /// Whether `passphrase` opens the keys of `remote` (true, too, when it holds no keyring yet: the first sealed
    /// sync makes one with it). Nothing is written anywhere: an app, or the CLI, checks a passphrase before it
    /// makes a store, so that a wrong one leaves nothing behind.
    /// - Throws: `SealingError` `.wrongPassphrase` in one line, or why the keyring cannot be read.
    public static func checkPassphrase(_ passphrase: String, of remote: any SyncRemote) throws {
        guard let found = try readKeyring(of: remote) else { return }
        guard !passphrase.isEmpty else { throw SealingError(.wrongPassphrase, "the passphrase is empty") }
        _ = try unlocking(found.record, passphrase: Array(passphrase.utf8), remote: remote.address)
    }

    private func readKeyring() throws -> (record: Keyring, version: RemoteVersion)? { try Self.readKeyring(of: inner) }

    private static func readKeyring(of inner: any SyncRemote) throws -> (record: Keyring, version: RemoteVersion)? {
        var found: RemoteRecord?
        try inner.changes(of: try Keyring.schema(), since: nil) { page in
            for entry in page.entries where page.id(of: entry) == Keyring.recordID {
                let record = try page.record(entry)
                if record.fields != nil { found = record }
            }
            return true
        }
        guard let found, let fields = found.fields else { return nil }
        return (try Keyring(fields: fields, remote: inner.address), found.version)
    }

    private func words() throws -> [UInt8] {
        let text = try passphrase()
        guard !text.isEmpty else { throw SealingError(.wrongPassphrase, "the passphrase is empty") }
        return Array(text.utf8)
    }

    /// Argon2id is run once per process for a keyring and passphrase (it costs a fifth of a second by design).
    private static let derived = Mutex<[[UInt8]: SymmetricKey]>([:])

    static func unlocking(_ keyring: Keyring, passphrase: [UInt8], remote: String) throws(SealingError) -> UnlockedKeys {
        let memo = try Sodium.digest(keyring.salt + Array("\(keyring.parameters.opsLimit):\(keyring.parameters.memLimit)".utf8) + [0] + passphrase)
        if let wrapping = derived.withLock({ $0[memo] }) { return try keyring.unlock(with: wrapping, remote: remote) }
        let wrapping = try Sodium.deriveKey(passphrase: passphrase, salt: keyring.salt, parameters: keyring.parameters)
        let keys = try keyring.unlock(with: wrapping, remote: remote)
        derived.withLock { $0[memo] = wrapping }
        return keys
    }

    // MARK: rotation and the passphrase

    /// Makes a new key the one new records are sealed with, and keeps the older ones: records sealed under
    /// them still open everywhere, and are re-sealed a few at each later sync (`resealLimit`), never all at once.
    /// - Parameter entities: the entities whose records are re-sealed (the store's, for the CLI).
    /// - Returns: the new key's id.
    @discardableResult
    public func rotateKey(entities: [String]) throws -> String {
        try unlock(entities: entities)
        guard var (record, _) = keyring, let keys else { throw SealingError(.unavailable, "the keys of \(address) are not open") }
        let id = "k\((record.wrapped.keys.compactMap { Int($0.dropFirst()) }.max() ?? 0) + 1)"
        let key = try Sodium.newKey()
        try record.wrap(key, id: id, under: keys.wrapping)
        record.current = id
        try replaceKeyring(with: record)
        self.keys?.keys[id] = key
        self.keys?.current = id
        var values: [String: String?] = ["current": id]
        for entity in entities { values["reseal \(entity)"] = "" }
        try store.recordSealing(remote: address, values: values)
        return id
    }

    /// Wraps every key under a new passphrase (a new salt); other devices are told, when they give the old
    /// one, that it was changed and when.
    public func changePassphrase(to newPassphrase: String) throws {
        try unlock(entities: [])
        guard var (record, _) = keyring, let keys else { throw SealingError(.unavailable, "the keys of \(address) are not open") }
        guard !newPassphrase.isEmpty else { throw SealingError(.wrongPassphrase, "the new passphrase is empty") }
        record.salt = try Sodium.randomBytes(Sodium.saltBytes)
        record.parameters = .standard
        let wrapping = try Sodium.deriveKey(passphrase: Array(newPassphrase.utf8), salt: record.salt, parameters: record.parameters)
        record.wrapped = [:]
        for (id, key) in keys.keys { try record.wrap(key, id: id, under: wrapping) }
        record.passphraseChanged = ISO8601DateFormatter().string(from: Date())
        try replaceKeyring(with: record)
        self.keys = UnlockedKeys(place: keys.place, current: keys.current, keys: keys.keys, wrapping: wrapping)
    }

    /// Replaces the keyring on the server, only if it is still the version this process opened.
    private func replaceKeyring(with record: Keyring) throws {
        guard let version = keyring?.version else { throw SealingError(.unavailable, "the keys of \(address) are not open") }
        switch try inner.push([.update(id: Keyring.recordID, fields: record.fields, version: version)], of: try Keyring.schema()).first {
        case .applied(let new)?:
            keyring = (record, new)
        case .rejected(let status, let message)?:
            throw SealingError(.unavailable, "\(address) refused the new keyring (\(status)): \(message); nothing was changed")
        default:
            throw SealingError(.unavailable, "the keyring of \(address) changed meanwhile (another device?): nothing was changed; try again")
        }
    }

    // MARK: re-sealing

    /// Re-seals up to `resealLimit` records of `entity` sealed under an older key, walking the server's records
    /// from where the last sync stopped (a cursor of its own, beside the pull's); each is a conditional replace
    /// with the same contents at the next counter, which the next pull brings back as a change of nothing.
    func resealOlderRecords(of entity: String, wire: EntitySchema, envelope: SealedEnvelope) throws {
        guard let start = try store.sealingValue("reseal \(entity)", remote: address) else { return }
        var cursor = start.isEmpty ? nil : RemoteCursor(start)
        var found: [(id: String, version: RemoteVersion, contents: SealedEnvelope.Contents)] = []
        var finished = true
        try inner.changes(of: wire, since: cursor) { page in
            var cut = false
            for entry in page.entries {
                guard let record = try? page.record(entry), let fields = record.fields,
                      case .success(let contents) = envelope.open(fields, entity: entity, id: record.id),
                      contents.keyID != envelope.keys.current else { continue }
                // A page holds more than the limit (a server's pages are long): the rest of it waits for a later sync,
                // which walks this page again; what is re-sealed now is under the current key by then.
                if found.count >= resealLimit { cut = true; break }
                found.append((record.id, record.version, contents))
            }
            if !cut { cursor = page.cursor ?? cursor }
            finished = found.count < resealLimit
            return finished
        }
        var counters: [String: UInt64] = [:]
        let operations = try found.map { old in
            counters[old.id] = old.contents.counter + 1
            return RemoteOperation.update(id: old.id, fields: try envelope.seal(.init(counter: old.contents.counter + 1, fields: old.contents.fields),
                                                                                entity: entity, id: old.id), version: old.version)
        }
        let limit = max(try inner.batchLimit(), 1)
        let starts = Array(stride(from: 0, to: operations.count, by: limit))
        // Where the walk goes on next sync, recorded with the last batch's counters (or alone, with none).
        let walk: [String: String?] = ["reseal \(entity)": finished ? nil : cursor?.token ?? ""]
        if starts.isEmpty { try store.recordSealing(remote: address, values: walk) }
        for start in starts {
            let batch = Array(operations[start..<min(start + limit, operations.count)])
            let outcomes = try inner.push(batch, of: wire)
            // Applied ones only: one changed meanwhile was re-sealed by whoever changed it.
            let applied = Set(zip(batch, outcomes).compactMap { operation, outcome in
                if case .applied = outcome { operation.id } else { nil }
            })
            try store.recordSealing(remote: address, values: start == starts.last ? walk : [:], entity: entity,
                                    counters: counters.filter { applied.contains($0.key) })
        }
    }
}
