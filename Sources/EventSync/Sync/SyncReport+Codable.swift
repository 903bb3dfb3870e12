/// `SyncReport` as `Codable`, with the members `sync --json` prints and the same names: `result`,
/// `pulled`, `pushed`, `deletedHere`, `deletedThere`, `conflicts`, `conflicted` (`{entity, id}`),
/// `rejected`, `held` (`{entity, id}`), `unreadable` (`{entity, reason}`), `left` (`{entity, id}`), `skipped`, `reread`, `verified`, `goneFromServer`, `interrupted`, and `error` when set.
/// Where the CLI prints words, the report keeps what an app branches on: a rejection is
/// `{entity, id, status?, message}` (the CLI prints `Holiday abc: …`), and a skipped record holds its
/// `version` when it had one.
///
/// `result` is written for readers of the JSON and not read back (it follows from the rest). Decoding
/// takes a missing member as its initial value, so a report stored by an earlier evsync still reads
/// after members are added.
extension SyncReport: Codable {
    enum CodingKeys: String, CodingKey {
        case result, pulled, pushed, deletedHere, deletedThere, conflicts, conflicted, rejected, held, unreadable, left, skipped, reread,
             verified, goneFromServer, interrupted, error
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func decode<Value: Decodable>(_ key: CodingKeys, _ initial: Value) throws -> Value {
            try container.decodeIfPresent(Value.self, forKey: key) ?? initial
        }
        self.init()
        (pulled, pushed, deletedHere, deletedThere, conflicts) =
            (try decode(.pulled, 0), try decode(.pushed, 0), try decode(.deletedHere, 0), try decode(.deletedThere, 0),
             try decode(.conflicts, 0))
        (conflicted, rejected, held, skipped) = (try decode(.conflicted, []), try decode(.rejected, []), try decode(.held, []),
                                                 try decode(.skipped, []))
        (unreadable, left) = (try decode(.unreadable, []), try decode(.left, []))
        (reread, verified, goneFromServer) = (try decode(.reread, []), try decode(.verified, []), try decode(.goneFromServer, []))
        (interrupted, error) = (try decode(.interrupted, false), try container.decodeIfPresent(String.self, forKey: .error))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(result, forKey: .result)
        try container.encode(pulled, forKey: .pulled)
        try container.encode(pushed, forKey: .pushed)
        try container.encode(deletedHere, forKey: .deletedHere)
        try container.encode(deletedThere, forKey: .deletedThere)
        try container.encode(conflicts, forKey: .conflicts)
        try container.encode(conflicted, forKey: .conflicted)
        try container.encode(rejected, forKey: .rejected)
        try container.encode(held, forKey: .held)
        try container.encode(unreadable, forKey: .unreadable)
        try container.encode(left, forKey: .left)
        try container.encode(skipped, forKey: .skipped)
        try container.encode(reread, forKey: .reread)
        try container.encode(verified, forKey: .verified)
        try container.encode(goneFromServer, forKey: .goneFromServer)
        try container.encode(interrupted, forKey: .interrupted)
        try container.encodeIfPresent(error, forKey: .error)
    }
}
