import EventStore
import Foundation

/// The decisions of one pull of a Kinto collection, with no I/O: which
/// request comes first, what its answer means, and for each page what the
/// driver (`KintoRemote.changes`) must also read and which cursor the page
/// carries. The driver sends, parses and yields; every rule is here.
///
/// A pull goes: the first list request (`listing`: `_since` and, once the
/// cursor has settled, `If-None-Match`); its answer to `open` (a missing
/// collection is created and asked again, a 304 ends the pull, a collection
/// older than the cursor is read again from the start); then each page of
/// records to `step`, which says which history to read before it and whether
/// to count the server's records after it, and gives the page its cursor.
struct KintoPull {
    /// What a list request asks for: changes after `since`, and the ETag that makes an unchanged collection a 304.
    struct Listing: Equatable {
        var since: Int64?
        var ifNoneMatch: Int64?

        /// The first request of a pull from `cursor`.
        init(from cursor: RemoteCursor?) {
            let position = PullPosition(cursor)
            since = position?.start
            // The collection's ETag is its newest change: equal to our cursor means nothing new (304).
            // Not while the cursor is still settling: a late commit below it leaves the ETag as it was.
            ifNoneMatch = position.flatMap { $0.isSettled ? $0.newest : nil }
        }

        init(since: Int64?, ifNoneMatch: Int64?) {
            (self.since, self.ifNoneMatch) = (since, ifNoneMatch)
        }

        /// The rest of a listing whose pages are asked for by the pull, not by the server's `Next-Page` (their
        /// limit changed, `PageLimit`): changes after the newest one read, `upTo` (records have distinct versions).
        static func continuing(after upTo: Int64?) -> Listing {
            Listing(since: upTo, ifNoneMatch: nil)
        }
    }

    /// What the first answer means.
    enum Opening: Equatable {
        /// The collection (or its bucket) is missing: create it, tell `created`, send `listing` again and `open` its answer.
        case create
        /// Nothing new since the cursor (304): the pull is over.
        case unchanged
        /// The server holds less than the cursor says we pulled: send this listing (everything), its answer the first page.
        case readAgain(Listing)
        /// The answer is the first page.
        case read
    }

    /// What the driver does around one page, besides yielding `page`.
    struct Step {
        /// The page to yield: its flags set, its cursor the position after it, skips already reported removed.
        var page: RemotePage
        /// History entries to read and yield first, record versions in `(after, upTo]`; the page then loses the
        /// versions they held, and the driver tells `historyRead` whether the history could be read.
        var history: (after: Int64, upTo: Int64)?
        /// Whether to count the server's live records (one HEAD) into `page.liveRecords`.
        var countsLiveRecords: Bool
    }

    /// How far behind the server's clock the cursor stays (`KintoRemote.settleWindow`).
    let settleWindow: Int64
    /// The request to send first; after `open` answers `readAgain`, that one.
    private(set) var listing: Listing
    /// The position the pull was asked to start from.
    private let since: PullPosition?
    /// The position the last pull left (nil when this one reads everything).
    private var previous: PullPosition?
    /// The position after the last page handed on.
    private var position: PullPosition?
    /// A first pull (or its resumption after a crash) reads only the current records, not the history.
    private(set) var isFirstPull = true
    /// The newest version whose history has been read; nil when this pull reads none.
    private(set) var historyFloor: Int64?
    /// The collection's newest change, from the first answer's ETag.
    private var collectionVersion: Int64?
    private var newest: Int64?
    private var triedCreating = false
    private var isRecreated = false
    private var isReread = false

    init(since cursor: RemoteCursor?, settleWindow: Int64) {
        self.settleWindow = settleWindow
        self.listing = Listing(from: cursor)
        self.since = PullPosition(cursor)
        settle()
    }

    /// Takes the first answer (and, after `create`, the answer to the same request sent again).
    /// - Parameter etag: the answer's ETag as a timestamp (`timestamp(fromETag:)`).
    mutating func open(status: Int, etag: Int64?) -> Opening {
        // Missing (Kinto answers 403 for a bucket that does not exist): created, once.
        if status == 403 || status == 404, !triedCreating { return .create }
        if status == 304 { return .unchanged }
        // The collection's ETag is its newest change. Below our cursor, the
        // server has lost changes we pulled (restored from a backup): `_since`
        // would answer "nothing new" forever, so read it all again.
        collectionVersion = etag
        if status == 200, let newest = since?.newest, let etag, etag < newest {
            isReread = true
            listing = Listing(from: nil)
            settle()
            return .readAgain(listing)
        }
        return .read
    }

    /// The entity's records are now read from another place (its schema names another bucket): everything is
    /// read again from the start, as after a server restored from a backup, so that a record the new place lacks
    /// is kept and named, never taken for a deletion.
    mutating func readFromStartAfterMove() {
        isReread = true
        listing = Listing(from: nil)
        settle()
    }

    /// After `create`: whether creating made the bucket or the collection. With a cursor,
    /// an earlier pull read it, so the server lost it: the sync must not take that for deletions.
    mutating func created(_ made: Bool) {
        triedCreating = true
        isRecreated = made && since != nil
    }

    /// Where the pull stands before its first page, once `open` has decided whether it reads everything.
    private mutating func settle() {
        previous = isReread ? nil : since
        position = previous
        isFirstPull = previous?.isFirstPull ?? true
        // With a cursor, each page's changes are also read from the server's history, for their
        // authors and intermediate versions (KintoHistory.swift), past the newest version the last
        // pull read. Not from where this pull starts, the settle window behind it: a late commit
        // there comes as its record alone, and history below what the last pull read is not this
        // store's (after a first pull, a record created and deleted before its snapshot would be
        // replayed into the log). A first pull, and its resumption after a crash, reads only the
        // current records.
        historyFloor = isReread || isFirstPull ? nil : previous?.newest
    }

    /// The server has no history plugin: the pull reads the records alone.
    mutating func withoutHistory() {
        historyFloor = nil
    }

    /// After a step's `history`: whether it could be read (nil from `emitHistory`: the rest of the pull goes on without it).
    mutating func historyRead(upTo top: Int64, readable: Bool) {
        historyFloor = readable ? top : nil
    }

    /// Takes one page of records as read from an answer (its cursor the newest version listed, `KintoRemote.page`).
    /// - Parameters:
    ///   - hasNext: whether the answer gave a `Next-Page`.
    ///   - serverTime: the answer's `Date`, in milliseconds (`milliseconds(fromHTTPDate:)`).
    mutating func step(_ page: RemotePage, hasNext: Bool, serverTime: Int64?) -> Step {
        var page = page
        page.isRecreated = isRecreated
        isRecreated = false
        if isReread {
            page.isReread = true
            isReread = false
            // A restored collection with no records: start the next pull from its version, not ours again.
            if !hasNext, page.cursor == nil { page.cursor = collectionVersion.map { RemoteCursor(String($0)) } }
        }
        var history: (after: Int64, upTo: Int64)?
        if let floor = historyFloor, let top = page.cursor.flatMap({ Int64($0.token) }), top > floor { history = (floor, top) }
        var pageNewest = page.cursor.flatMap { Int64($0.token) }
        // A first pull lists the live records as of the collection's newest change (its ETag,
        // a deletion included): the next pull, and its history, start from there. From the newest
        // record listed instead, the history would replay a record created and deleted before this
        // snapshot, one this store never had, and call its deletion "deleted here".
        if isFirstPull, !hasNext, let collectionVersion { pageNewest = max(pageNewest ?? collectionVersion, collectionVersion) }
        if let top = pageNewest { newest = max(newest ?? top, top) }
        // The collection's newest change is past every record listed since our cursor:
        // a deletion whose tombstone was purged (`kinto purge-deleted`). No pull can bring it.
        if !hasNext, !isFirstPull, let floor = previous?.newest, !page.isReread, let collectionVersion,
           collectionVersion > max(newest ?? floor, floor) {
            page.needsVerification = "its newest change (\(collectionVersion)) is missing from the changes it lists since \(floor)"
            pageNewest = collectionVersion
        }
        // Something changed since our cursor: one HEAD says how many records the server holds (Total-Records), for
        // the sync to compare with the log's count. Only on the pull that settles the cursor (below), when writes
        // still committing (another device pushing) have had the settle window to show in the listing: before,
        // the count runs ahead of what any listing has shown, and each sync would list the whole collection.
        let countsLiveRecords = !hasNext && !isFirstPull && !page.isReread
        // A record we cannot hold, read again while the cursor settles, was reported by the pull that read it first.
        if let known = previous?.newest { page.skipped.removeAll { ($0.version?.integer).map { $0 <= known } ?? false } }
        var after = PullPosition.after(position, pageNewest: pageNewest, serverTime: serverTime, window: settleWindow)
        // A first pull still under way says so in its cursor; its last page clears the mark.
        let stillFirst = isFirstPull && hasNext
        if after == nil, let position, position.isFirstPull != stillFirst { after = position }
        after?.isFirstPull = stillFirst
        page.cursor = after?.cursor
        position = after ?? position
        return Step(page: page, history: history, countsLiveRecords: countsLiveRecords && position?.isSettled == true)
    }

    /// The live records a count (`HEAD`) found, if they can be compared with what the pull read: only when the
    /// collection's ETag is still the one the last page was listed at. A write committed between the two would
    /// be counted, not listed, and look like a change the server lost.
    static func liveRecords(total: String?, countETag: Int64?, pageETag: Int64?) -> Int? {
        guard let countETag, countETag == pageETag else { return nil }
        return total.flatMap { Int($0) }
    }
}

// MARK: The headers a pull reads

extension KintoPull {
    /// An HTTP `Date` (`Tue, 01 Dec 2026 04:42:18 GMT`) in milliseconds since 1970, or nil if it is not one.
    static func milliseconds(fromHTTPDate text: String) -> Int64? {
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let parts = text.split(separator: " ")
        guard parts.count == 6, parts[5] == "GMT", let month = months.firstIndex(of: String(parts[2])),
              let day = Int(parts[1]), (1...31).contains(day), let year = Int(parts[3]), (1970...9999).contains(year)
        else { return nil }
        let clock = parts[4].split(separator: ":").compactMap { Int($0) }
        guard clock.count == 3, (0..<24).contains(clock[0]), (0..<60).contains(clock[1]), (0...60).contains(clock[2]) else { return nil }
        var time = tm()
        (time.tm_year, time.tm_mon, time.tm_mday) = (Int32(year - 1900), Int32(month), Int32(day))
        (time.tm_hour, time.tm_min, time.tm_sec) = (Int32(clock[0]), Int32(clock[1]), Int32(clock[2]))
        let seconds = timegm(&time)
        return seconds < 0 ? nil : Int64(seconds) * 1000
    }

    /// A Kinto timestamp as its ETag spells it (`"1796093009071"`).
    static func timestamp(fromETag text: String) -> Int64? {
        Int64(text.trimmingCharacters(in: CharacterSet(charactersIn: "\" ")))
    }
}
