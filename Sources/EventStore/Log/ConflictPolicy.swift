/// Which side wins a field changed on both sides, or an update against a delete.
public enum ConflictPolicy: String, Sendable, CaseIterable, Codable {
    case serverWins = "server-wins"
    case clientWins = "client-wins"
}
