import Foundation

/// How many pages a write transaction has dirtied so far, estimated from
/// what it wrote: LMDB does not say. A transaction holds its dirty pages in
/// memory until it commits, so a long job that writes in a chain of
/// transactions commits when the estimate reaches its budget.
///
/// `k` records with unrelated keys written to a tree of `L` leaf pages land
/// on about `L(1 - e^(-k/L))` distinct leaves; what they add to the trees
/// fills new pages besides.
struct DirtyPageEstimate {
    /// Leaf pages, at the transaction's start, of each tree that every record is written to.
    private let leafPages: [Double]
    /// Records counted so far.
    private(set) var records = 0
    private var bytes = 0

    init(leafPages: [Int]) {
        self.leafPages = leafPages.map { Double(max($0, 1)) }
    }

    /// Counts `records` more records, which wrote `bytes` (keys and values, all trees together).
    mutating func add(records: Int, bytes: Int) {
        self.records += records
        self.bytes += bytes
    }

    var pages: Int {
        let touched = leafPages.reduce(0.0) { $0 + $1 * (1 - exp(-Double(records) / $1)) }
        // Leaves are kept half to fully filled; the branch pages above the dirty leaves are few.
        let added = Double(bytes) / 2048
        return Int((touched * 1.05 + added).rounded(.up))
    }
}
