import Foundation

/// How many pages a write transaction has dirtied so far, estimated from
/// what it wrote: LMDB does not say. A transaction holds its dirty pages in
/// memory until it commits, so a long job that writes in a chain of
/// transactions commits when the estimate reaches its budget.
///
/// `k` records with unrelated keys written to a tree land on about
/// `n(1 - e^(-k/n))` of its `n` leaves, and as many of its branch pages by
/// the same rule (each record dirties its whole path); what they add to the
/// trees fills new pages besides.
package struct DirtyPageEstimate {
    /// Leaf and branch pages, at the transaction's start, of each tree that every record is written to.
    private let levels: [Double]
    /// Records counted so far.
    package private(set) var records = 0
    private var bytes = 0

    package init(trees: [(leaves: Int, branches: Int)]) {
        levels = trees.flatMap { [Double(max($0.leaves, 1)), Double(max($0.branches, 1))] }
    }

    /// Counts `records` more records, which wrote `bytes` (keys and values, all trees together).
    package mutating func add(records: Int, bytes: Int) {
        self.records += records
        self.bytes += bytes
    }

    package var pages: Int {
        let touched = levels.reduce(0.0) { $0 + $1 * (1 - exp(-Double(records) / $1)) }
        // Leaves are kept half to fully filled.
        return Int((touched + Double(bytes) / 2048).rounded(.up))
    }
}
