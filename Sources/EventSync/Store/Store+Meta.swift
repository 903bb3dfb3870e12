/// Small settings kept beside the log in the `meta` database: the remote,
/// the pull cursors and the last sync. None of them says what is pending:
/// that comes from the log alone.
extension Store {
    enum MetaKey {
        static let remote = "remote"
        static let lastSync = "last-sync"
        /// The newest server version pulled for one entity from one remote.
        static func cursor(remote: String, entity: String) -> String { "cursor\u{0}\(remote)\u{0}\(entity.lowercased())" }
    }

    func meta(_ key: String, in transaction: Transaction) throws -> String? {
        try transaction.get(Array(key.utf8), in: meta).map { String(decoding: $0, as: UTF8.self) }
    }

    func setMeta(_ key: String, _ value: String, in transaction: Transaction) throws {
        try transaction.put(Array(key.utf8), Array(value.utf8), in: meta)
    }

    /// The remote used last (a Kinto bucket URL, without credentials).
    public func rememberedRemote() throws(StoreError) -> String? {
        try read { try meta(MetaKey.remote, in: $0) }
    }

    /// The last sync that finished: when (ISO 8601) and its result.
    public func lastSync() throws(StoreError) -> (at: String, result: String)? {
        try read { transaction in
            guard let text = try meta(MetaKey.lastSync, in: transaction),
                  let object = try? JSONParser.parse(text).objectValue,
                  let at = object["at"]?.stringValue, let result = object["result"]?.stringValue
            else { return nil }
            return (at, result)
        }
    }
}
