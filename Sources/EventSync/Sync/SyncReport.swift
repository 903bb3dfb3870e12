public import EventStore
import Foundation
/// What one sync did: the seeds' background-fetch answer and the counts behind it.
///
/// `Codable` (`SyncReport+Codable.swift`) with the members `sync --json` prints.
public struct SyncReport: Sendable, Equatable {
    public typealias Result = SyncResult

    /// Records created or changed here from the server.
    public var pulled = 0
    /// Records deleted here because the server deleted them.
    public var deletedHere = 0
    /// Local creations and changes the server accepted.
    public var pushed = 0
    /// Local deletions the server accepted.
    public var deletedThere = 0
    /// Conflicts resolved (each one an event with both versions).
    public var conflicts = 0
    /// The records those conflicts were on, in the order met (a record may appear twice).
    public var conflicted: [RecordReference] = []
    /// Changes the server refused (validation, permissions) in this sync, with its reasons. They stay pending, held.
    public var rejected: [Rejection] = []
    /// Changes the server refused at an earlier sync, unchanged since: not sent again by themselves (a
    /// refusal is an answer, not a failure to retry), until they are edited or reverted here, or a sync is
    /// asked to resend them (`resendRefused`). `Store.why` gives the server's reason.
    public var held: [RecordReference] = []
    /// Entities the server no longer lets this account read (a permission withdrawn), with what it said: left as
    /// they are here, neither pulled nor pushed, until access is given back. Nothing is deleted for it.
    public var unreadable: [Skip] = []
    /// Records that left this store's tables without being deleted, here or there (a `left` event each), with why:
    /// the server no longer lets this account read them (access given back brings them back; records this device
    /// created or changed without the server's acknowledgement stay), or an edit elsewhere moved them out of the
    /// store's scope (`Store.setScope`).
    public var left: [Skip] = []
    /// Server records that could not be stored, passed over (each logged as a `skipped` event); the sync went on.
    public var skipped: [Skip] = []
    /// Entities whose server data turned out older than the last pull (a
    /// server restored from a backup), so they were read again from the start.
    public var reread: [String] = []
    /// Entities the sync checked against a listing of the server's records
    /// (`verify --remote --repair`), having seen a sign that the server lost changes.
    public var verified: [String] = []
    /// Records the log holds as live on the server that a check found gone from it without a tombstone, after
    /// the server was restored from a backup: kept here (the backup may have lost them), for
    /// `verify --remote --repair` to delete.
    public var goneFromServer: [Skip] = []
    /// Set when the sync stopped on an error; what was done before it is kept.
    public var error: String?
    /// The error the sync stopped on, with its code and cause (`error` is its message); nil when it went through.
    /// Its own `partialReport` is nil: the report is this one.
    public var failure: SyncError? {
        get { failureBox?.error }
        set { failureBox = newValue.map { FailureBox(error: $0) } }
    }
    private var failureBox: FailureBox?
    /// After a failed sync that the engine's scheduler ran (`SyncEngine.start(every:)`): how long it waits before
    /// trying again on its own. Nil otherwise.
    public var retryIn: Duration?
    /// True when the sync was asked to stop and did so between pages.
    public var interrupted = false

    public init() {}

    /// `.newData` when the sync changed something here or there or found records the server lost, `.noData` when there was nothing to do,
    /// `.failed` when the server refused changes (`rejected`, or earlier: `held`) or the sync stopped on an error (`error`).
    ///
    /// A report that `SyncEngine.sync()` returns is only ever `.failed` for refusals: a sync that stops on
    /// an error (the server cannot be reached, refuses the credentials) throws a `SyncError` instead, whose
    /// `partialReport`, like the `.finished` report of `statusUpdates()`, is `.failed` with `error` set.
    public var result: Result {
        if error != nil || !rejected.isEmpty || !held.isEmpty || !unreadable.isEmpty { return .failed }
        // Records the server lost, and records that left this store, are news however little moved: a sync that finds
        // them never says "nothing to do".
        return pulled + deletedHere + pushed + deletedThere + conflicts + skipped.count + reread.count + goneFromServer.count
            + left.count > 0 ? .newData : .noData
    }
}

/// Holds a report's `failure` out of line: a `SyncError` holds a report of its own (`partialReport`).
/// Two are equal when their code and message are (the cause is for reading, not comparing).
private final class FailureBox: Sendable, Equatable {
    let error: SyncError

    init(error: SyncError) {
        var error = error
        error.partialReport = nil
        self.error = error
    }

    static func == (left: FailureBox, right: FailureBox) -> Bool {
        left.error.code == right.error.code && left.error.message == right.error.message
    }
}

/// One record, by entity and id: `Holiday abc`. `Codable` as `{entity, id}`.
public struct RecordReference: Sendable, Equatable, Codable, CustomStringConvertible {
    public let entity: String
    public let id: String

    public init(entity: String, id: String) {
        self.entity = entity
        self.id = id
    }

    public var description: String { "\(entity) \(id)" }
}

/// A server record a pull could not store, and why (logged as a `skipped` event), or one a restored server lost.
/// One type with what a remote's page passes over, so that a skip keeps its version from the page to the report.
public typealias Skip = SkippedRecord

/// A local change the server refused, and why. It stays pending, held: not sent again by itself (`SyncReport.held`).
/// `Codable` as `{entity, id, status?, message}`.
public struct Rejection: Sendable, Equatable, Codable, CustomStringConvertible {
    public let entity: String
    public let id: String
    /// The server's code for the refusal (an HTTP status, a protocol's error code), when it gave one.
    public let status: Int?
    /// The server's reason, as the remote words it.
    public let message: String

    public init(entity: String, id: String, status: Int?, message: String) {
        self.entity = entity
        self.id = id
        self.status = status
        self.message = message
    }

    /// `Holiday 1234: HTTP 400: …`: the form `sync` prints.
    public var description: String { "\(entity) \(id): \(message)" }
}

/// Progress of a running sync, for a progress line or an activity indicator.
/// `Codable` as `{phase, entity, records, pages, total?}`.
public struct SyncProgress: Sendable, Equatable, Codable {
    public enum Phase: String, Sendable, Codable { case pulling, pushing }
    public var phase: Phase
    public var entity: String
    /// Records handled so far in this phase for this entity.
    public var records: Int
    public var pages: Int
    /// Records the server announced, when it did.
    public var total: Int?
}

/// The state an app observes: the seeds' activity indicator and "sync completed" notice.
///
/// Every sync, whoever starts it (`sync()`, the scheduler, `syncNow()`), is `.inProgress(nil)` when it
/// starts, `.inProgress(step)` after each page or batch, and `.finished(report)` once when it ends, whether it
/// went through or not: a failed one's report is `.failed` with `failure` (and, when the scheduler ran it,
/// `retryIn`) set. A sync that found another one running (`.busy`) is only `.finished`.
/// `Codable` as `{"inProgress": {"progress": …}}` (`{}` before the first progress) or `{"finished": {"report": …}}`.
public enum SyncStatus: Sendable, Equatable, Codable {
    case inProgress(SyncProgress?)
    case finished(SyncReport)

    enum InProgressCodingKeys: String, CodingKey { case _0 = "progress" }
    enum FinishedCodingKeys: String, CodingKey { case _0 = "report" }

    /// Whether a sync runs: what an activity indicator shows.
    public var isInProgress: Bool {
        if case .inProgress = self { true } else { false }
    }

    /// The report of a sync that has just ended: the "sync completed" notice, once per sync.
    public var finishedReport: SyncReport? {
        if case .finished(let report) = self { report } else { nil }
    }
}
