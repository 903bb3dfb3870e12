import EventStore

/// Where a pull of one Kinto collection stands, as its cursor spells it.
///
/// `start` is the next pull's `_since`, `newest` the newest `last_modified`
/// read so far. `start` stays up to `KintoRemote.settleWindow` behind the
/// server's clock, so it can lag behind `newest`: the token is then
/// `"start:newest"`; once `start` has caught up it is just `"newest"`, the
/// only form earlier versions of evsync wrote, which therefore still reads.
/// A first pull not yet finished ends its token with `~first`, so that,
/// resumed after a crash, it still reads only the current records (not the
/// server's history), as the uninterrupted pull would have.
struct PullPosition: Equatable {
    var start: Int64
    var newest: Int64
    var isFirstPull = false

    static let firstPullMark = "~first"

    init(start: Int64, newest: Int64, isFirstPull: Bool = false) {
        self.start = start
        self.newest = newest
        self.isFirstPull = isFirstPull
    }

    /// Our own cursor; nil for none, or for one this adapter never wrote (a pull then reads everything).
    init?(_ cursor: RemoteCursor?) {
        guard var token = cursor?.token else { return nil }
        let isFirstPull = token.hasSuffix(Self.firstPullMark)
        if isFirstPull { token.removeLast(Self.firstPullMark.count) }
        let parts = token.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2, let start = parts.first.flatMap({ Int64($0) }), let newest = parts.last.flatMap({ Int64($0) }),
              start <= newest
        else { return nil }
        self.init(start: start, newest: newest, isFirstPull: isFirstPull)
    }

    var cursor: RemoteCursor {
        RemoteCursor((start == newest ? String(newest) : "\(start):\(newest)") + (isFirstPull ? Self.firstPullMark : ""))
    }

    /// Everything up to `newest` has been read and has settled: an unchanged collection may answer 304.
    var isSettled: Bool { start == newest }

    /// The position after a page whose newest record is `pageNewest`, read when
    /// the server's clock said `serverTime`; nil when the page moves nothing.
    ///
    /// `start` is the page's newest record, but no later than `window` before
    /// the server's clock, and never goes back. A record stamped ahead of that
    /// clock had its `last_modified` given by a client, not taken from the
    /// clock by a transaction, so it is not held back. Without the server's
    /// clock (no `Date`), `start` is the newest record, as before.
    static func after(_ previous: PullPosition?, pageNewest: Int64?, serverTime: Int64?, window: Int64) -> PullPosition? {
        guard let pageNewest else { return nil }
        var start = pageNewest
        if let serverTime, pageNewest <= serverTime { start = min(pageNewest, serverTime - window) }
        let newest = max(pageNewest, previous?.newest ?? pageNewest)
        let position = PullPosition(start: min(max(start, previous?.start ?? start), newest), newest: newest)
        return position == previous ? nil : position
    }
}
