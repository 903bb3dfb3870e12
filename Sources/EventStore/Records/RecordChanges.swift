/// What changed in one entity's records between two points of the log: what
/// `Store.observeChanges` delivers, for a table to apply instead of reloading.
public struct RecordChanges<Value: Sendable>: Sendable {
    /// Records that did not exist before, as they are now, in the order of their first event.
    public var inserted: [Value] = []
    /// Records whose fields changed, as they are now.
    public var updated: [Value] = []
    /// The ids of records that existed before and no longer do.
    public var deleted: [String] = []
    /// The last event these changes account for: the point to observe from next.
    public var seq: UInt64

    public init(inserted: [Value] = [], updated: [Value] = [], deleted: [String] = [], seq: UInt64) {
        (self.inserted, self.updated, self.deleted, self.seq) = (inserted, updated, deleted, seq)
    }

    /// True when no record changed.
    public var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty }
}

extension RecordChanges: Equatable where Value: Equatable {}
