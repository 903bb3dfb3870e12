public import EventStore

/// `version: 7` in tests, for the integer versions of Kinto and `InMemoryRemote`.
extension RemoteVersion: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int64) {
        self.init(value)
    }
}
