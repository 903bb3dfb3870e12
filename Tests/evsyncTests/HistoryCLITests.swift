import Foundation
import Testing
@testable import EventStore
import TestSupport

@Suite("CLI history and as-of")
struct HistoryCLITests {
    @Test("history --json, and show/list --as-of a sequence number or a time")
    func historyAndAsOf() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "--id", "may", "name=May Day", "date=2026-05-01"])                   // 1
            try sandbox.succeed(["add", "Holiday", "--id", "xmas", "name=Christmas", "date=2026-12-25"])               // 2
            try sandbox.succeed(["edit", "Holiday", "may", "name=Labour Day", "observedBy:=[\"FR\",\"DE\"]"])           // 3
            try sandbox.succeed(["edit", "Holiday", "may", "--unset", "observedBy", "details=Parades"])                // 4
            try sandbox.succeed(["delete", "Holiday", "may"])                                                            // 5

            let history = try sandbox.succeed(["history", "may", "--json"])
            let events = try #require(try history.json().arrayValue).map { try #require($0.objectValue) }
            #expect(events.map { $0["seq"] } == [1, 3, 4, 5])
            #expect(events.map { $0["kind"] } == ["created", "updated", "updated", "deleted"])
            #expect(events.allSatisfy { $0["origin"] == "local" && $0["entity"] == "Holiday" && $0["id"] == "may" })
            #expect(events.allSatisfy { $0["at"]?.stringValue.flatMap(Timestamp.parse) != nil })
            #expect(events[0]["set"] == ["name": "May Day", "date": "2026-05-01"])
            #expect(events[1]["set"] == ["name": "Labour Day", "observedBy": ["FR", "DE"]])
            #expect(events[2]["set"] == ["details": "Parades"])
            #expect(events[2]["unset"] == ["observedBy"])
            #expect(events[3]["set"] == nil)
            #expect(try JSONSerialization.jsonObject(with: Data(history.stdout.utf8)) is [Any], "valid JSON for any parser")

            // For people: one header per event, then what each field became.
            let text = try sandbox.succeed(["history", "may"])
            let headers = text.lines.filter { $0.hasPrefix("#") }
            #expect(headers.count == 4)
            #expect(headers[0].hasPrefix("#1  ") && headers[0].contains("created  local  Holiday  by \(Sandbox.author)"), "\(text)")
            #expect(headers[3].hasPrefix("#5  ") && headers[3].contains("deleted"))
            #expect(text.stdout.contains(#"name: "May Day" → "Labour Day""#), "\(text)")
            #expect(text.stdout.contains(#"observedBy: ["FR","DE"] → (unset)"#), "\(text)")
            #expect(text.stdout.contains("(record deleted)"), "\(text)")

            // As of each event.
            let states: [Int: JSONValue?] = [
                1: ["id": "may", "name": "May Day", "date": "2026-05-01"],
                2: ["id": "may", "name": "May Day", "date": "2026-05-01"],
                3: ["id": "may", "name": "Labour Day", "date": "2026-05-01", "observedBy": ["FR", "DE"]],
                4: ["id": "may", "name": "Labour Day", "date": "2026-05-01", "details": "Parades"],
                5: nil,
            ]
            for (seq, state) in states {
                let show = try sandbox.run(["show", "Holiday", "may", "--json", "--as-of", "\(seq)"])
                if let state {
                    #expect(show.status == Exit.ok, "as of \(seq): \(show)")
                    #expect(try show.json() == state, "as of \(seq)")
                } else {
                    #expect(show.status == Exit.noInput, "as of \(seq): \(show)")
                    #expect(show.stderr.contains("as of \(seq)"))
                }
            }
            #expect(try sandbox.run(["show", "Holiday", "may", "--as-of", "0"]).status == Exit.noInput)
            #expect(try sandbox.run(["show", "Holiday", "may"]).status == Exit.noInput)
            #expect(try sandbox.records("Holiday", ["--as-of", "1"]).keys.sorted() == ["may"])
            #expect(try sandbox.records("Holiday", ["--as-of", "4"]).keys.sorted() == ["may", "xmas"])
            #expect(try sandbox.records("Holiday", ["--as-of", "4"])["may"]?["details"] == "Parades")
            #expect(try sandbox.records("Holiday", ["--as-of", "5"]).keys.sorted() == ["xmas"])
            #expect(try sandbox.records("Holiday", ["--as-of=0"]).isEmpty)
            // The table form works as of a point too.
            #expect(try sandbox.succeed(["list", "Holiday", "--as-of", "3"]).stderr == "(2 Holiday records)\n")

            // As of a time: each event's own `at` includes it (events of one process may share a millisecond,
            // so compare with the state after the last event at that same time).
            let times = events.compactMap { $0["at"]?.stringValue }
            for (index, time) in times.enumerated() {
                let lastAtThatTime = times.lastIndex(of: time)!
                let expected = [states[1]!, states[3]!, states[4]!, states[5]!][lastAtThatTime]
                let show = try sandbox.run(["show", "Holiday", "may", "--json", "--as-of", time])
                if let expected {
                    #expect(try show.json() == expected, "as of \(time) (event \(index))")
                } else {
                    #expect(show.status == Exit.noInput)
                }
            }
            #expect(try sandbox.records("Holiday", ["--as-of", "2000-01-01"]).isEmpty)
            #expect(try sandbox.records("Holiday", ["--as-of", "2999-01-01T00:00:00Z"]).keys.sorted() == ["xmas"])
        }
    }

    @Test("history covers every entity with the id")
    func historyAcrossEntities() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "--id", "x", "name=H", "date=2026-01-01"])
            try sandbox.succeed(["add", "Birthday", "--id", "x", "name=B", "date=2000-01-01"])
            try sandbox.succeed(["add", "Birthday", "--id", "y", "name=Y", "date=2000-01-01"])
            let events = try #require(try sandbox.succeed(["history", "x", "--json"]).json().arrayValue)
            #expect(events.compactMap { $0.objectValue?["entity"] } == ["Holiday", "Birthday"])
            #expect(events.compactMap { $0.objectValue?["seq"] } == [1, 2])
        }
    }
}
