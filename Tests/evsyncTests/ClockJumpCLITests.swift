import Foundation
import Testing
import EventStore

/// Edits made under `faketime` with the clock jumping back and forward: `show --as-of`, `list --as-of`,
/// `diff` and `revert` name one point for one time.
@Suite("Clocks that jump, through the CLI")
struct ClockJumpCLITests {
    static let faketime = ["/usr/bin/faketime", "/bin/faketime"].first(where: FileManager.default.isExecutableFile)

    @Test("a clock set back two hours, then forward: every command that takes a time agrees",
          .enabled(if: faketime != nil, "needs faketime(1)"))
    func commandsAgree() throws {
        try withSandbox { sandbox in
            let faketime = Self.faketime ?? "faketime"
            func at(_ offset: String, _ arguments: String) throws {
                let result = try sandbox.launchShell("\(faketime) -f '\(offset)' \"$EVSYNC_BINARY_PATH\" \(arguments)").wait()
                #expect(result.status == 0, "\(arguments): \(result)")
            }
            try at("+0", "add Holiday --id h name=A date=2027-01-01")
            try at("-2h", "edit Holiday h name=B")           // the clock two hours behind
            try at("+1h", "edit Holiday h name=C")           // and then an hour ahead
            let events = try #require(try sandbox.succeed(["history", "h", "--json"]).json().arrayValue)
            let times = events.compactMap { $0.objectValue?["at"]?.stringValue }
            #expect(times.count == 3 && times == times.sorted(), "times never go back: \(times)")

            // An hour ago (inside the jump back), now, and in two hours.
            for (offset, expected) in [(-3_600.0, nil), (1, "B"), (7_200, "C")] as [(Double, String?)] {
                let time = ISO8601DateFormatter().string(from: Date().addingTimeInterval(offset))
                let shown = try sandbox.run(["show", "Holiday", "h", "--as-of", time, "--json"])
                let listed = try sandbox.succeed(["list", "Holiday", "--as-of", time, "--json"]).json().arrayValue ?? []
                let revert = try sandbox.succeed(["revert", "Holiday", "h", "--to", time, "--dry-run", "--json"]).json().objectValue ?? [:]
                let diff = try sandbox.succeed(["diff", "--from", time, "--json"]).json().arrayValue ?? []
                if let expected {
                    #expect(try shown.json().objectValue?["name"]?.stringValue == expected, "show at \(time): \(shown)")
                    #expect(listed.first?.objectValue?["name"]?.stringValue == expected, "list at \(time): \(listed)")
                } else {
                    #expect(shown.status == 66, "show at \(time), before the record: \(shown)")
                    #expect(listed.isEmpty, "list at \(time): \(listed)")
                }
                // revert names the same point; diff from it lists the record exactly when a later change exists.
                let seq = revert["to"]?.int64Value
                #expect(seq == (expected == nil ? 0 : expected == "B" ? 2 : 3), "revert at \(time): \(revert)")
                #expect(diff.isEmpty == (expected == "C"), "diff from \(time): \(diff)")
            }
        }
    }

    @Test("one add under faketime -f +365d: records added after it are listed now, diff and revert find them, history says which time is wrong",
          .enabled(if: faketime != nil, "needs faketime(1)"))
    func oneJumpForwardDoesNotFreezeTime() throws {
        try withSandbox { sandbox in
            let faketime = Self.faketime ?? "faketime"
            try sandbox.succeed(["add", "Holiday", "--id", "first", "name=First", "date=2027-01-01"])
            let jumped = try sandbox.launchShell("\(faketime) -f '+365d' \"$EVSYNC_BINARY_PATH\" add Holiday --id ahead name=Ahead date=2027-01-01").wait()
            #expect(jumped.status == 0, "\(jumped)")
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let before = formatter.string(from: Date())
            try sandbox.succeed(["add", "Holiday", "--id", "later", "name=Later", "date=2027-01-02"])
            let now = ISO8601DateFormatter().string(from: Date().addingTimeInterval(2))
            let listed = try sandbox.succeed(["list", "Holiday", "--as-of", now, "--json"]).json().arrayValue ?? []
            #expect(listed.compactMap { $0.objectValue?["name"]?.stringValue }.sorted() == ["Ahead", "First", "Later"], "\(listed)")
            let diff = try sandbox.succeed(["diff", "--from", before, "--json"]).json().arrayValue ?? []
            #expect(diff.map { $0.objectValue?["id"]?.stringValue } == ["later"], "made since \(before): \(diff)")
            let revert = try sandbox.succeed(["revert", "Holiday", "later", "--to", before, "--dry-run", "--json"]).json().objectValue ?? [:]
            #expect(revert["to"]?.int64Value == 2, "before it, the log up to the event stamped ahead (taken at the time of the one before it): \(revert)")
            let history = try sandbox.succeed(["history", "ahead"]).stdout
            #expect(history.contains("time wrong: stamped while the clock ran ahead"), "\(history)")
            #expect(!(try sandbox.succeed(["history", "later"]).stdout.contains("time wrong")))
            let json = try sandbox.succeed(["history", "ahead", "--json"]).json().arrayValue?.first?.objectValue
            #expect(json?["timeWrong"] == true, "\(String(describing: json))")
            #expect(try sandbox.succeed(["history", "later", "--json"]).json().arrayValue?.first?.objectValue?["timeWrong"] == nil)
        }
    }
}
