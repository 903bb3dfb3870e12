import Storage
/// Events stamped while the clock ran ahead (`faketime -f +365d`, a dead RTC battery's guess corrected
/// later): their `at` is in the future of the events that follow them. Kept beside the log in `meta`
/// as seq ranges (`3-3,17-20`), never by rewriting an event: the log is append-only and its format a
/// promise (docs/decisions/clock-jumps-forward.md).
///
/// A misstamped event's time is wrong, and every reading of the past takes it at the time of the event
/// before it (its *effective* time): times then only go up again, a time names one point, and the
/// events made once the clock was right are found at their real times.
struct MisstampedEvents: Sendable, Equatable {
    static let metaKey = "misstamped"

    private(set) var ranges: [ClosedRange<UInt64>] = []

    init() {}

    /// Reads the meta value; a part it cannot read is left out (an event then keeps its own time).
    init(text: String) {
        for part in text.split(separator: ",") {
            let bounds = part.split(separator: "-").compactMap { UInt64($0) }
            if bounds.count == 2, bounds[0] >= 1, bounds[0] <= bounds[1] { ranges.append(bounds[0]...bounds[1]) }
        }
        ranges.sort { $0.lowerBound < $1.lowerBound }
    }

    var text: String { ranges.map { "\($0.lowerBound)-\($0.upperBound)" }.joined(separator: ",") }

    var isEmpty: Bool { ranges.isEmpty }

    /// The range holding `seq`, if it is misstamped.
    func range(holding seq: UInt64) -> ClosedRange<UInt64>? {
        // Few ranges (one per jump of a clock): a scan is enough.
        ranges.first { $0.contains(seq) }
    }

    /// Adds `range`, merged with any it touches.
    mutating func insert(_ range: ClosedRange<UInt64>) {
        var merged = range
        ranges.removeAll { other in
            guard other.lowerBound <= merged.upperBound + 1, merged.lowerBound <= other.upperBound + 1 else { return false }
            merged = min(merged.lowerBound, other.lowerBound)...max(merged.upperBound, other.upperBound)
            return true
        }
        ranges.append(merged)
        ranges.sort { $0.lowerBound < $1.lowerBound }
    }
}

extension EventLog {
    func misstamped(in transaction: Transaction) throws -> MisstampedEvents {
        guard let bytes = try transaction.get(Array(MisstampedEvents.metaKey.utf8), in: meta) else { return MisstampedEvents() }
        return MisstampedEvents(text: String(decoding: bytes, as: UTF8.self))
    }

    func setMisstamped(_ events: MisstampedEvents, in transaction: Transaction) throws {
        try transaction.put(Array(MisstampedEvents.metaKey.utf8), Array(events.text.utf8), in: meta)
    }

    /// The time every reading of the past takes event `seq` at: its own, or for a misstamped event that of
    /// the last event before its range (nil when there is none, or no such event).
    /// - Parameter time: an event's own time (the archive's, for a moved one).
    func effectiveTime(of seq: UInt64, misstamped: MisstampedEvents, time: (UInt64) throws -> Int64?) throws -> Int64? {
        guard let range = misstamped.range(holding: seq) else { return try time(seq) }
        return range.lowerBound > 1 ? try time(range.lowerBound - 1) ?? .min : .min
    }
}

extension Store {
    /// The events stamped while the clock ran ahead, as seq ranges: their times are wrong, and every reading
    /// of the past takes each at the time of the event before it (`MisstampedEvents`).
    public func misstampedEvents() throws(StoreError) -> [ClosedRange<UInt64>] {
        try snapshot { try log.misstamped(in: $0).ranges }
    }
}
