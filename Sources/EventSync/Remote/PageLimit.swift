/// How many records a pull asks for in its next page, so that no page outgrows the most a response may hold
/// (`HTTPClient.maximumResponseBytes`, 256 MiB): a collection of large records must not be unpullable because its
/// pages are fixed at a thousand. Pure; each adapter's pull drives it (Kinto's records and history, Parse's objects).
///
/// A page over the cap is asked for again with half the records, down to one; one record that alone is over the
/// cap is skipped (`tooLarge()` false). After a page that fit, the limit grows back, at most doubling and only
/// as far as pages of such records stay within half the cap: a page over the cap costs a request (and, from a server
/// that does not say its length first, a download up to the cap) for nothing, so growing back must not make the
/// next one over it again.
package struct PageLimit: Equatable, Sendable {
    /// The most records a page asks for (the adapter's `pageSize`).
    package let largest: Int
    /// The most bytes a response may hold.
    package let cap: Int
    /// What the next page asks for.
    package private(set) var current: Int

    package init(largest: Int, cap: Int) {
        self.largest = max(1, largest)
        self.cap = max(1, cap)
        current = self.largest
    }

    /// The page asked for with `current` records was over the cap: true when it is to be asked for again with
    /// fewer (the new `current`), false when it held a single record, too large alone.
    package mutating func tooLarge() -> Bool {
        guard current > 1 else { return false }
        current /= 2
        return true
    }

    /// A page of `records` records in `bytes` bytes fit: the next may ask for more, up to what half the cap holds.
    package mutating func fit(records: Int, bytes: Int) {
        guard records > 0, current < largest else { return }
        let room = cap / 2 / max(1, bytes / records)
        current = max(current, min(largest, current * 2, room))
    }

    /// Why a record is skipped that alone makes an answer over the cap, the cap spelt `size` (`256 MiB`).
    package static func oversizedReason(size: String) -> String {
        "it is too large to read: alone it makes a response larger than \(size), the most evsync accepts"
    }
}
