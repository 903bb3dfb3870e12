import Storage

/// What a remote keeps beside its pull cursors (`RemotePage.state`): each adapter in a part of `meta` of its own,
/// named by its `metaNamespace`, one entry per remote address and entity, written with a page's cursor.
extension Store {
    /// Whether `namespace` can name an adapter's part of meta: 1 to 8 lower-case ASCII letters and digits. The key
    /// then fits LMDB's 511 bytes beside the longest remote address and entity name (as a cursor's key does).
    public static func isValidMetaNamespace(_ namespace: String) -> Bool {
        (1...8).contains(namespace.utf8.count) && namespace.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) }
    }

    /// `dav:` then the remote and the entity: no key of the store's own has a `:`, so no namespace meets one.
    static func remoteStateKey(namespace: String, remote: String, entity: String) throws(StoreError) -> String {
        guard isValidMetaNamespace(namespace) else {
            throw StoreError(.invalidData, "'\(namespace)' cannot name a remote's part of the store's meta (1 to 8 lower-case letters and digits)")
        }
        return "\(namespace):\u{0}\(remote)\u{0}\(entity.lowercased())"
    }

    /// What the remote stored with its last page of `entity` (`RemotePage.state`) in its `namespace`; nil before any.
    package func remoteState(namespace: String, remote: String, entity: String) throws(StoreError) -> String? {
        let key = try Self.remoteStateKey(namespace: namespace, remote: remote, entity: entity)
        return try snapshot { try meta(key, in: $0) }
    }

    func setRemoteState(_ state: String, namespace: String, remote: String, entity: String, in transaction: Transaction) throws {
        try setMeta(try Self.remoteStateKey(namespace: namespace, remote: remote, entity: entity), state, in: transaction)
    }
}
