import EventStore
import Foundation

/// How records and events are shown: JSON for scripts, aligned text for people.
///
/// Text for people never carries what a terminal would act on or hide: every
/// string from the store or a server goes through `safe` (or `display`), while
/// `--json` keeps strings exact (JSON escapes their control characters anyway).
enum Output {
    static func json(_ value: JSONValue) -> String { JSONWriter.string(value) }

    /// A value as JSON, for people: strings quoted, and safe (see `safe`).
    static func display(_ value: JSONValue) -> String { safe(json(value)) }

    /// `text` with every character a terminal would act on, or that would
    /// disguise the line, made visible as an escape: C0 controls (ESC starts
    /// the sequences that retitle a window or move the cursor; CR rewrites
    /// the line), DEL and C1 controls as `\n`, `\r`, `\t` or `\u001b`, and
    /// the bidirectional controls that reorder a line's display (U+061C,
    /// U+200E, U+200F, U+202A–U+202E, U+2066–U+2069) as `\u202e`. Backslashes
    /// stay as they are: in JSON text (`display`) escapes are JSON's own.
    static func safe(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isUnsafe) else { return text }
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": result.append(contentsOf: #"\n"#.unicodeScalars)
            case "\r": result.append(contentsOf: #"\r"#.unicodeScalars)
            case "\t": result.append(contentsOf: #"\t"#.unicodeScalars)
            case _ where isUnsafe(scalar):
                let hex = String(scalar.value, radix: 16)
                result.append(contentsOf: ("\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex).unicodeScalars)
            default: result.append(scalar)
            }
        }
        return String(result)
    }

    private static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F, 0x61C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    /// A value as a table cell: strings bare, everything else as JSON, longer than `width` shortened; safe.
    /// (`TableWriter` fits cells to a terminal, and cuts nothing through a pipe.)
    static func cell(_ value: JSONValue?, width: Int = .max) -> String {
        let text: String
        switch value {
        case nil: text = ""
        case .string(let string)?: text = safe(string)
        case let value?: text = display(value)
        }
        return shortened(text, to: width)
    }

    static func shortened(_ text: String, to width: Int) -> String {
        text.count > width ? String(text.prefix(width - 1)) + "…" : text
    }

    /// An event as one JSON object (`format`, `seq`, `kind`, `origin`, `at`, `entity`, `id`, `set`, …): `EventJSON`, whatever its stored form.
    static func json(_ event: Event) -> String {
        String(decoding: EventJSON.encode(event), as: UTF8.self)
    }

    /// An event as one line for people: `#12  2026-…Z  updated  local  Holiday/abc  by root@host  name="X"`.
    /// Values are JSON (so a string is quoted, spaces and all), shortened, and safe; the time is local.
    static func line(_ event: Event) -> String {
        var parts = ["#\(event.seq)", LocalTime.iso8601(milliseconds: event.at), event.kind.rawValue, event.origin.rawValue,
                     safe("\(event.entity)/\(event.recordID)"), "by \(quotedIfSpaced(event.author))"]
        if let version = event.version { parts.append(safe("v\(version)")) }
        let changes = event.set.keys.sorted().map { "\(safe($0))=\(shortened(event.set[$0].map(display) ?? "", to: 30))" }
            + event.unset.map { "-\(safe($0))" }
        if !changes.isEmpty { parts.append(changes.joined(separator: " ")) }
        if let policy = event.policy { parts.append("(\(policy))") }
        if let resolves = event.resolves { parts.append("(resolves #\(resolves))") }
        if let reason = event.reason { parts.append("(\(safe(reason)))") }
        return parts.joined(separator: "  ")
    }

    /// `text`, safe, and quoted as JSON when it holds white space (or is empty), so a line's
    /// fields stay apart: `by "Jane Doe"`, `by jane@host`.
    static func quotedIfSpaced(_ text: String) -> String {
        text.isEmpty || text.contains(where: \.isWhitespace) ? display(.string(text)) : safe(text)
    }

    /// A record's history for people: each event, then each field it changed as `old → new`.
    /// - Parameter misstamped: events stamped while the clock ran ahead (`Store.misstampedEvents`), each said to be.
    static func history(_ events: [Event], misstamped: [ClosedRange<UInt64>] = []) -> String {
        var states: [String: RecordProjection] = [:]
        var lines: [String] = []
        for event in events {
            let key = event.entity
            let before = states[key, default: RecordProjection()]
            var after = before
            after.apply(event)
            states[key] = after
            var header = "#\(event.seq)  \(LocalTime.iso8601(milliseconds: event.at))  \(event.kind.rawValue)  \(event.origin.rawValue)  \(safe(event.entity))  by \(safe(event.author))"
            if let version = event.version { header += safe("  server version \(version)") }
            if let policy = event.policy { header += "  resolved \(policy)" }
            if let resolves = event.resolves { header += "  resolves conflict #\(resolves)" }
            lines.append(header)
            if misstamped.contains(where: { $0.contains(event.seq) }) {
                lines.append("    time wrong: stamped while the clock ran ahead of the events after it; --as-of, diff and revert take it at the time of the event before it")
            }
            if event.kind == .left {
                lines.append("    (left this store, not deleted: \(safe(event.reason ?? "no longer readable")))")
            } else {
                lines.append(contentsOf: fieldChanges(from: before.row, to: after.row).map { "    " + $0 })
                if let reason = event.reason { lines.append("    \(event.kind == .rejected ? "refused" : "not stored"): \(safe(reason))") }
            }
            if event.kind == .conflict {
                lines.append("    local was:  \(event.local?.fields.map { display(.object($0)) } ?? "deleted")")
                lines.append("    server had: \(event.server?.fields.map { display(.object($0)) } ?? "deleted")")
            }
        }
        return lines.joined(separator: "\n")
    }

    static func fieldChanges(from old: JSONObject?, to new: JSONObject?) -> [String] {
        switch (old, new) {
        case (nil, nil): return []
        case (_?, nil): return ["(record deleted)"]
        default: break
        }
        let old = old ?? [:], new = new ?? [:]
        return Set(old.keys).union(new.keys).sorted().compactMap { field in
            switch (old[field], new[field]) {
            case let (a, b) where a == b: nil
            case (nil, let b?): "\(safe(field)): \(display(b))"
            case (let a?, nil): "\(safe(field)): \(display(a)) → (unset)"
            case let (a?, b?): "\(safe(field)): \(display(a)) → \(display(b))"
            default: nil
            }
        }
    }
}
