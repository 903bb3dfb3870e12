import EventStore
import Foundation

/// How records and events are shown: JSON for scripts, aligned text for people.
enum Output {
    static func json(_ value: JSONValue) -> String { JSONWriter.string(value) }

    /// A value as a table cell: strings bare, everything else as JSON, long ones shortened.
    static func cell(_ value: JSONValue?, width: Int = 40) -> String {
        let text: String
        switch value {
        case nil: text = ""
        case .string(let string)?: text = string
        case let value?: text = json(value)
        }
        let flat = text.replacingOccurrences(of: "\n", with: " ")
        return flat.count > width ? String(flat.prefix(width - 1)) + "…" : flat
    }

    /// Rows of cells as a table with a header and aligned columns.
    static func table(header: [String], rows: [[String]]) -> String {
        var widths = header.map(\.count)
        for row in rows {
            for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { column, cell in
                column == cells.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
        return ([line(header)] + rows.map(line)).joined(separator: "\n")
    }

    /// An event as one JSON object (`format`, `seq`, `kind`, `origin`, `at`, `entity`, `id`, `set`, …): `EventJSON`, whatever its stored form.
    static func json(_ event: Event) -> String {
        String(decoding: EventJSON.encode(event), as: UTF8.self)
    }

    /// An event as one line for people: `#12  2026-…Z  updated  local  Holiday/abc  by root@host  name="X"`.
    static func line(_ event: Event) -> String {
        var parts = ["#\(event.seq)", Timestamp.iso8601(milliseconds: event.at), event.kind.rawValue, event.origin.rawValue,
                     "\(event.entity)/\(event.recordID)", "by \(event.author)"]
        if let version = event.version { parts.append("v\(version)") }
        let changes = event.set.keys.sorted().map { "\($0)=\(cell(event.set[$0], width: 30))" } + event.unset.map { "-\($0)" }
        if !changes.isEmpty { parts.append(changes.joined(separator: " ")) }
        if let policy = event.policy { parts.append("(\(policy))") }
        if let reason = event.reason { parts.append("(\(reason))") }
        return parts.joined(separator: "  ")
    }

    /// A record's history for people: each event, then each field it changed as `old → new`.
    static func history(_ events: [Event]) -> String {
        var states: [String: RecordProjection] = [:]
        var lines: [String] = []
        for event in events {
            let key = event.entity
            let before = states[key, default: RecordProjection()]
            var after = before
            after.apply(event)
            states[key] = after
            var header = "#\(event.seq)  \(Timestamp.iso8601(milliseconds: event.at))  \(event.kind.rawValue)  \(event.origin.rawValue)  \(event.entity)  by \(event.author)"
            if let version = event.version { header += "  server version \(version)" }
            if let policy = event.policy { header += "  resolved \(policy)" }
            lines.append(header)
            lines.append(contentsOf: fieldChanges(from: before.row, to: after.row).map { "    " + $0 })
            if let reason = event.reason { lines.append("    not stored: \(reason)") }
            if event.kind == .conflict {
                lines.append("    local was:  \(event.local?.fields.map { json(.object($0)) } ?? "deleted")")
                lines.append("    server had: \(event.server?.fields.map { json(.object($0)) } ?? "deleted")")
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
            case (nil, let b?): "\(field): \(json(b))"
            case (let a?, nil): "\(field): \(json(a)) → (unset)"
            case let (a?, b?): "\(field): \(json(a)) → \(json(b))"
            default: nil
            }
        }
    }
}
