/// A stored event, or an entry of the views, that cannot be decoded: the store is damaged (or newer).
package struct EventDecodingError: Error, Sendable, CustomStringConvertible {
    public let reason: String
    /// The entry is one of the views' (replaying the log can rebuild it), not an event of the log.
    public let inViews: Bool
    /// The event is in a format newer than this evsync's, rather than damaged.
    public let isNewerFormat: Bool
    /// The event's position in the log (its key), when the reader knows it.
    public internal(set) var seq: UInt64?

    init(reason: String, inViews: Bool = false, isNewerFormat: Bool = false, seq: UInt64? = nil) {
        self.reason = reason
        self.inViews = inViews
        self.isNewerFormat = isNewerFormat
        self.seq = seq
    }

    public var description: String {
        if inViews { return "corrupt entry in the views: \(reason)" }
        return "corrupt event \(seq.map { "\($0) " } ?? "")in the log: \(reason)"
    }
}
