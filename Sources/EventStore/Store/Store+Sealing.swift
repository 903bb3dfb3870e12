import Storage

/// What a sealed (end-to-end encrypted) sync keeps beside the log, in `meta` under a namespace of its own
/// (`sealing`): the place of the keyring the store synced with, and the highest version counter seen or sent of
/// each record, against which an older version a server replays is refused (Sealing's `SealedRemote`).
extension Store {
    private enum SealingKey {
        static func value(_ name: String, remote: String) -> String { "sealing\u{0}\(name)\u{0}\(remote)" }
        static func counter(remote: String, entity: String, id: String) -> String {
            "sealing\u{0}counter\u{0}\(remote)\u{0}\(entity.lowercased())\u{0}\(id)"
        }
    }

    /// A value the sealed remote keeps for `remote` under `name` (`place`: the keyring this store synced with,
    /// Base64; `current`: the key id it last saw current; `reseal <entity>`: where the re-sealing of records under
    /// older keys goes on); nil if none.
    package func sealingValue(_ name: String, remote: String) throws(StoreError) -> String? {
        try snapshot { try meta(SealingKey.value(name, remote: remote), in: $0) }
    }

    /// The highest counter known of each of `ids` (absent: none known).
    package func sealedCounters(remote: String, entity: String, ids: [String]) throws(StoreError) -> [String: UInt64] {
        try snapshot { transaction in
            var counters: [String: UInt64] = [:]
            for id in ids {
                if let text = try meta(SealingKey.counter(remote: remote, entity: entity, id: id), in: transaction), let counter = UInt64(text) {
                    counters[id] = counter
                }
            }
            return counters
        }
    }

    /// Records what a sealed sync learned, in one write transaction, and only what changes it: the values named
    /// (nil removes one), and the counters of `entity`'s records raised to these (a lower one than known is left
    /// as it is). Nothing to change, no write transaction: a sync that re-reads what it knows waits on no lock.
    package func recordSealing(remote: String, values: [String: String?] = [:], entity: String = "",
                               counters: [String: UInt64] = [:]) throws(StoreError) {
        guard !values.isEmpty || !counters.isEmpty else { return }
        let keyed = values.map { (key: SealingKey.value($0.key, remote: remote), value: $0.value) }
        let (changed, raised) = try snapshot { transaction in
            (try keyed.filter { try meta($0.key, in: transaction) != $0.value },
             try counters.filter { try self.counter(SealingKey.counter(remote: remote, entity: entity, id: $0.key), in: transaction) < $0.value })
        }
        guard !changed.isEmpty || !raised.isEmpty else { return }
        do {
            try environment.write { transaction in
                for (key, value) in changed {
                    if let value { try setMeta(key, value, in: transaction) } else { _ = try transaction.delete(Array(key.utf8), in: meta) }
                }
                // Checked again: another process may have raised one since the snapshot.
                for (id, counter) in raised {
                    let key = SealingKey.counter(remote: remote, entity: entity, id: id)
                    if try self.counter(key, in: transaction) < counter { try setMeta(key, String(counter), in: transaction) }
                }
            }
        } catch {
            throw wrap(error)
        }
    }

    private func counter(_ key: String, in transaction: Transaction) throws -> UInt64 {
        try meta(key, in: transaction).flatMap(UInt64.init) ?? 0
    }

    /// The number of the last write transaction committed (LMDB's transaction id): tests count commits by it.
    package func lastCommit() throws(StoreError) -> Int {
        try snapshot { $0.id }
    }
}
