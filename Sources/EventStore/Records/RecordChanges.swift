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

/// An entity's records and what the last commit changed in them: what `Store.observe` delivers.
public struct ObservedRecords<Value: Sendable>: Sendable {
    /// Every record of the entity, sorted by id, as of `changes.seq`.
    public var records: [Value]
    /// What changed since the previous element; in the first, every record, as inserted.
    public var changes: RecordChanges<Value>

    public init(records: [Value], changes: RecordChanges<Value>) {
        (self.records, self.changes) = (records, changes)
    }

    /// Patches `records` with `change`: a binary search per record changed, in the order `id` sorts by.
    mutating func apply(_ change: RecordChanges<Value>, id: (Value) -> String) {
        func index(of key: String) -> (Int, found: Bool) {
            var (low, high) = (0, records.count)
            while low < high {
                let middle = (low + high) / 2
                if id(records[middle]) < key { low = middle + 1 } else { high = middle }
            }
            return (low, low < records.count && id(records[low]) == key)
        }
        for deleted in change.deleted {
            let (position, found) = index(of: deleted)
            if found { records.remove(at: position) }
        }
        for record in change.inserted + change.updated {
            let (position, found) = index(of: id(record))
            if found { records[position] = record } else { records.insert(record, at: position) }
        }
        changes = change
    }
}

extension ObservedRecords: Equatable where Value: Equatable {}
