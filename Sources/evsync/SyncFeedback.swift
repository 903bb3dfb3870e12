import EventSync
import Foundation
import Synchronization

/// What `sync` shows a person while it works, all on stderr: on a terminal a
/// progress line and each retry ("retrying in 2 s, 2/5"); with `-v` each HTTP
/// request and its status, wherever stderr goes; in a pipe without `-v`,
/// nothing. With `--watch`, lines start with the local time.
final class SyncFeedback: Sendable {
    let terminal: Bool
    let verbose: Bool
    let timestamped: Bool
    /// Whether a progress line is on screen, to be cleared before anything else is written.
    private let progressShown = Atomic<Bool>(false)

    init(terminal: Bool, verbose: Bool, timestamped: Bool) {
        self.terminal = terminal
        self.verbose = verbose
        self.timestamped = timestamped
    }

    /// Whether the remote should report its requests and retries at all.
    var wantsActivity: Bool { terminal || verbose }

    func show(_ activity: RemoteActivity) {
        switch activity {
        case let .request(method, url, status, failure):
            guard verbose else { return }
            say("evsync: \(method) \(url) → \(status.map { "HTTP \($0)" } ?? "no answer (\(failure ?? "?"))")")
        case let .retrying(failure, delay, attempt, attempts):
            say("evsync: \(failure); retrying in \(String(format: delay < 10 ? "%.1f" : "%.0f", delay)) s, \(attempt)/\(attempts)")
        }
    }

    /// `pulling Holiday: 3000 of 10000 records, 3 pages`, redrawn in place.
    func showProgress(_ step: SyncProgress) {
        let records = step.total.map { "\(step.records) of \(Plural.count($0, "record"))" } ?? Plural.count(step.records, "record")
        let pages = step.phase == .pulling ? Plural.count(step.pages, "page") : Plural.count(step.pages, "batch", plural: "batches")
        let text = "\(step.phase.rawValue) \(step.entity): \(records), \(pages)"
        progressShown.store(true, ordering: .relaxed)
        FileHandle.standardError.write(Data("\r\u{1B}[K\(Output.safe(text))".utf8))
    }

    func clearProgress() {
        if progressShown.exchange(false, ordering: .relaxed) { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
    }

    /// `text`, after the local time when watching: `2026-12-01T06:03:07+01:00 nothing to do: already in sync`.
    func line(_ text: String) -> String {
        guard timestamped else { return text }
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = .current
        return formatter.string(from: Date()) + " " + text
    }

    /// One line on stderr, after clearing the progress line (a line written over it would keep its tail).
    func say(_ text: String) {
        clearProgress()
        printError(line(text))
    }
}
