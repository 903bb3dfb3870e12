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

    /// Sets it; nil removes it.
    package func setSealingValue(_ name: String, remote: String, to value: String?) throws(StoreError) {
        do {
            try environment.write { transaction in
                let key = Array(SealingKey.value(name, remote: remote).utf8)
                if let value { try transaction.put(key, Array(value.utf8), in: meta) } else { _ = try transaction.delete(key, in: meta) }
            }
        } catch {
            throw wrap(error)
        }
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

    /// Raises the known counters to these, in one transaction; a lower one than known is left as it is.
    package func raiseSealedCounters(_ counters: [String: UInt64], remote: String, entity: String) throws(StoreError) {
        guard !counters.isEmpty else { return }
        do {
            try environment.write { transaction in
                for (id, counter) in counters {
                    let key = SealingKey.counter(remote: remote, entity: entity, id: id)
                    if let known = try meta(key, in: transaction).flatMap(UInt64.init), known >= counter { continue }
                    try setMeta(key, String(counter), in: transaction)
                }
            }
        } catch {
            throw wrap(error)
        }
    }
}
