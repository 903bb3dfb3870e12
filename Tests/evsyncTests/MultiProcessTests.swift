import Foundation
import Synchronization
import Testing
@testable import EventStore
import TestSupport

/// Several processes on one store: followers see what writers append, and concurrent writers lose nothing.
@Suite("CLI with several processes")
struct MultiProcessTests {
    /// Polls the follower's output until `condition` holds; records an issue after a generous deadline.
    @discardableResult
    static func waitFor(_ command: RunningProcess, timeout: TimeInterval = 30, sourceLocation: SourceLocation = #_sourceLocation,
                        _ condition: (String) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition(command.currentOutput) { return true }
            guard command.isRunning else { break }
            usleep(20_000)
        }
        if condition(command.currentOutput) { return true }
        Issue.record("the follower's output never met the condition; it printed:\n\(command.currentOutput)", sourceLocation: sourceLocation)
        return false
    }

    /// How many bytes the import spool file of process `pid` holds (it is unlinked as soon as made:
    /// only its open descriptor, in /proc, finds it); nil while it has none.
    static func spooled(by pid: Int32) -> Int? {
        let descriptors = "/proc/\(pid)/fd"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: descriptors)) ?? [] {
            let path = descriptors + "/" + name
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: path), target.contains("/import-spool.") else { continue }
            var status = stat()
            if stat(path, &status) == 0 { return Int(status.st_size) }
        }
        return nil
    }

    static func seqs(_ output: String) throws -> [Int64] {
        try output.split(separator: "\n").map { line in
            try #require(try JSONParser.parse(String(line)).objectValue?["seq"]?.int64Value)
        }
    }

    @Test("log tail --follow prints events appended by other processes")
    func follow() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "--id", "first", "name=First", "date=2026-01-01"])
            let follower = try sandbox.launch(["log", "tail", "--follow", "--json"])
            defer { follower.kill() }
            try #require(Self.waitFor(follower) { $0.contains(#""id":"first""#) })

            try sandbox.succeed(["add", "Holiday", "--id", "later", "name=Later", "date=2026-01-02"])
            try #require(Self.waitFor(follower) { $0.contains(#""id":"later""#) })
            try sandbox.succeed(["edit", "Holiday", "later", "details=Edited"])
            try sandbox.succeed(["delete", "Holiday", "first"])
            let file = try sandbox.write("more.jsonl", (1...300).map { #"{"id":"m\#($0)","name":"M","date":"2026-01-01"}"# }.joined(separator: "\n"))
            try sandbox.succeed(["import", "Holiday", file])
            try #require(Self.waitFor(follower) { $0.contains(#""id":"m300""#) })

            #expect(follower.isRunning, "--follow keeps running")
            let output = follower.currentOutput
            #expect(try Self.seqs(output) == Array(1...304), "every event once, in order")
            let lines = output.split(separator: "\n").map(String.init)
            let events = try lines.map { try EventCoding.decode(Array($0.utf8)) }
            #expect(events[1].recordID == "later" && events[1].kind == .created)
            #expect(events[2].kind == .updated && events[2].set == ["details": "Edited"])
            #expect(events[3].kind == .deleted && events[3].recordID == "first")
        }
    }

    @Test("log tail -f prints lines for people as events arrive")
    func followText() throws {
        try withSandbox { sandbox in
            for index in 1...3 { try sandbox.succeed(["add", "Holiday", "--id", "h\(index)", "name=H", "date=2026-01-01"]) }
            let follower = try sandbox.launch(["log", "tail", "-f", "-n", "2"])
            defer { follower.kill() }
            try #require(Self.waitFor(follower) { $0.contains("Holiday/h3") })
            try sandbox.succeed(["add", "Birthday", "--id", "ada", "name=Ada", "date=1815-12-10"])
            try #require(Self.waitFor(follower) { $0.contains("Birthday/ada") })
            let lines = follower.currentOutput.split(separator: "\n").map(String.init)
            #expect(lines.count == 3)
            #expect(lines.map { $0.prefix(3) } == ["#2 ", "#3 ", "#4 "])
            #expect(lines[2].contains("created  local  Birthday/ada  by \(Sandbox.author)"), "\(lines)")
        }
    }

    /// Shared between the test and the writer thread.
    final class Writer: Sendable {
        let stopped = Atomic<Bool>(false)
        let written = Atomic<Int>(0)
        let failed = Atomic<Bool>(false)
        let done = DispatchSemaphore(value: 0)

        /// Stops the writer and waits for it to finish; later calls return at once.
        func stop() {
            if !stopped.exchange(true, ordering: .relaxed) { done.wait() }
        }
    }

    @Test("a follower started while events are being appended prints each event once")
    func followWhileWriting() throws {
        try withSandbox { sandbox in
            // A writer thread in this process (not a task: it must not hold a
            // cooperative thread) appends events back to back while followers start.
            let store = try Store(directory: sandbox.store.path, create: true)
            for index in 0..<5 { try store.add("Holiday", id: "seed\(index)", fields: ["name": "S", "date": "2026-01-01"]) }
            let writer = Writer()
            Thread {
                while !writer.stopped.load(ordering: .relaxed) {
                    do {
                        try store.add("Holiday", id: "w\(writer.written.load(ordering: .relaxed))", fields: ["name": "W", "date": "2026-01-01"])
                        writer.written.add(1, ordering: .relaxed)
                    } catch {
                        writer.failed.store(true, ordering: .relaxed)
                        break
                    }
                }
                writer.done.signal()
            }.start()
            defer { writer.stop() }
            // The window between printing the newest events and starting to follow is
            // short, so try several times; before the fix, a few of a dozen followers
            // printed some events twice.
            for _ in 0..<12 {
                let follower = try sandbox.launch(["log", "tail", "-n", "3", "--follow", "--json"])
                defer { follower.kill() }
                try #require(Self.waitFor(follower) { $0.split(separator: "\n").count >= 8 })
                follower.kill()
                // Whole lines only: the last one may have been cut by the kill.
                let output = follower.currentOutput
                let lines = output.split(separator: "\n").dropLast(output.hasSuffix("\n") ? 0 : 1)
                let seqs = try Self.seqs(lines.joined(separator: "\n"))
                #expect(seqs.count >= 8)
                #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $1 == $0 + 1 }, "each event once, in order: \(seqs)")
            }
            writer.stop()
            let failed = writer.failed.load(ordering: .relaxed)
            let written = writer.written.load(ordering: .relaxed)
            #expect(!failed)
            #expect(written > 0)
            #expect(try store.lastSeq() == UInt64(5 + written))
        }
    }

    @Test("an import from a slow pipe holds no lock while it waits: another writer goes on meanwhile")
    func slowPipeImport() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "--id", "before", "name=Before", "date=2026-01-01"])
            let lines = (0..<2_000).map { #"{"id":"p\#($0)","name":"Piped \#($0)","date":"2026-04-01"}"# + "\n" }
            let pipe = Pipe()
            let importer = try sandbox.launch(["import", "Holiday", "-"], input: .pipe(pipe))
            let input = pipe.fileHandleForWriting
            let first = Data(lines[..<1_000].joined().utf8)
            try input.write(contentsOf: first)
            // The handshake: the importer has opened the store and spooled all there is, and waits for more.
            let deadline = Date().addingTimeInterval(30)
            while Self.spooled(by: importer.pid) != first.count, importer.isRunning, Date() < deadline {
                usleep(20_000)
            }
            try #require(Self.spooled(by: importer.pid) == first.count, "the importer never spooled its input")
            let add = try sandbox.launch(["add", "Holiday", "--id", "meanwhile", "name=Meanwhile", "date=2026-01-02"])
            // Generous: an import reading its input inside its write transaction keeps the add waiting until the input ends.
            let added = add.wait(timeout: 30)
            #expect(added.status == Exit.ok, "\(added)")
            #expect(importer.isRunning, "the importer still waits for the rest of its input")
            // The spool file is unlinked as soon as it is made.
            #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.store.path).sorted() == ["data.mdb", "lock.mdb"])

            try input.write(contentsOf: Data(lines[1_000...].joined().utf8))
            try input.close()
            let imported = importer.wait()
            #expect(imported.status == Exit.ok && imported.stdout == "imported 2000 Holiday records\n", "\(imported)")
            #expect(Set(try sandbox.records("Holiday").keys) == Set(["before", "meanwhile"] + (0..<2_000).map { "p\($0)" }))
            #expect(try sandbox.eventCount() == 2_002)
        }
    }

    @Test("an import killed while it writes in place leaves the store as it was; the next write gives back the file's extra length")
    func killedImportWritingInPlace() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "--id", "before", "name=Before", "date=2026-01-01"])
            let dataFile = sandbox.store.appendingPathComponent("data.mdb").path
            func size() -> (length: Int, allocated: Int) {
                var status = stat()
                guard stat(dataFile, &status) == 0 else { return (0, 0) }
                return (Int(status.st_size), Int(status.st_blocks) * 512)
            }
            let before = size()
            let input = try sandbox.write("big.jsonl", (0..<150_000).map { #"{"name":"Holiday \#($0)","date":"2026-01-01"}"# }.joined(separator: "\n"))
            let importer = try sandbox.launch(["import", "Holiday", input])
            // Writing in place, the import made the file as long as its map and reserved blocks ahead of its first chunk.
            let deadline = Date().addingTimeInterval(60)
            while importer.isRunning, Date() < deadline, size().length < 1 << 30 || size().allocated < before.allocated + (4 << 20) {
                usleep(10_000)
            }
            let during = size()
            kill(importer.pid, SIGKILL)
            let killed = importer.wait()
            #expect(killed.status != Exit.ok, "killed before it finished: \(killed)")
            #expect(during.length >= 1 << 30 && during.allocated >= before.allocated + (4 << 20), "\(during)")

            #expect(try sandbox.eventCount() == 1)
            #expect(Array(try sandbox.records("Holiday").keys) == ["before"])
            try sandbox.succeed(["add", "Holiday", "--id", "after", "name=After", "date=2026-01-02"])
            let after = size()
            #expect(after.length < 1 << 20 && after.allocated <= after.length + (64 << 10), "trimmed to its used pages: \(after)")
            #expect(try sandbox.eventCount() == 2)
            #expect(try sandbox.succeed(["rebuild-views", "--verify"]).stdout == "views match the log (2 events)\n")
        }
    }

    @Test("concurrent imports and adds from several processes lose nothing")
    func concurrentWriters() throws {
        try withSandbox { sandbox in
            let count = 2_000
            let holidays = try sandbox.write("a.jsonl", (0..<count).map { #"{"id":"a\#($0)","name":"Holiday \#($0)","date":"2026-01-01"}"# }.joined(separator: "\n"))
            let birthdays = try sandbox.write("b.jsonl", (0..<count).map { #"{"id":"b\#($0)","name":"Person \#($0)","date":"2000-01-01"}"# }.joined(separator: "\n"))
            let adds = 25
            // The store does not exist yet: the processes also race to create it.
            #expect(!FileManager.default.fileExists(atPath: sandbox.store.path))
            let loops = try (0..<2).map { loop in
                try sandbox.launchShell("""
                i=0
                while [ $i -lt \(adds) ]; do
                  "$EVSYNC_BINARY_PATH" add Holiday --id loop\(loop)-$i name=Loop date=2026-02-01 >/dev/null || exit 1
                  i=$((i + 1))
                done
                """)
            }
            let imports = [try sandbox.launch(["import", "Holiday", holidays]), try sandbox.launch(["import", "Birthday", birthdays])]
            let loopResults = loops.map { $0.wait() }
            let importResults = imports.map { $0.wait() }
            for result in loopResults { #expect(result.status == Exit.ok, "\(result)") }
            #expect(importResults[0].status == Exit.ok && importResults[0].stdout == "imported \(count) Holiday records\n", "\(importResults[0])")
            #expect(importResults[1].status == Exit.ok && importResults[1].stdout == "imported \(count) Birthday records\n", "\(importResults[1])")

            let total = 2 * count + 2 * adds
            #expect(try sandbox.eventCount() == Int64(total))
            let status = try sandbox.status()
            #expect(status["records"] == ["Holiday": .number(JSONNumber(count + 2 * adds)), "Birthday": .number(JSONNumber(count))])
            #expect(status["pendingRecords"] == .number(JSONNumber(total)))

            let holidayIDs = Set(try sandbox.records("Holiday").keys)
            let expectedHolidays = Set((0..<count).map { "a\($0)" } + (0..<2).flatMap { loop in (0..<adds).map { "loop\(loop)-\($0)" } })
            #expect(holidayIDs == expectedHolidays)
            #expect(Set(try sandbox.records("Birthday").keys) == Set((0..<count).map { "b\($0)" }))

            // The log: seqs 1...N without gaps, each import one contiguous run (one transaction each).
            let tail = try sandbox.succeed(["log", "tail", "-n", "\(total)", "--json"])
            let events = try tail.lines.map { try EventCoding.decode(Array($0.utf8)) }
            #expect(events.map(\.seq) == (1...UInt64(total)).map { $0 })
            for prefix in ["a", "b"] {
                let seqs = events.filter { $0.recordID.hasPrefix(prefix) }.map(\.seq)
                #expect(seqs.count == count)
                #expect(seqs.last! - seqs.first! == UInt64(count - 1), "import \(prefix) is contiguous")
            }
            for loop in 0..<2 {
                let ids = events.filter { $0.recordID.hasPrefix("loop\(loop)-") }.map(\.recordID)
                #expect(ids == (0..<adds).map { "loop\(loop)-\($0)" }, "each loop's adds in its order")
            }
            #expect(try sandbox.succeed(["rebuild-views", "--verify"]).stdout == "views match the log (\(total) events)\n")
            // Both imports wrote in place; the last one to end cut the data file back to its used pages.
            var file = stat()
            #expect(stat(sandbox.store.appendingPathComponent("data.mdb").path, &file) == 0 && file.st_size < 64 << 20)
        }
    }

    @Test("shrinks racing writers in other processes: each swaps in a whole copy or leaves the file; no add fails or is lost")
    func shrinksRacingWriters() throws {
        try withSandbox { sandbox in
            let count = 3_000
            let file = try sandbox.write("h.jsonl", (0..<count).map { #"{"id":"h\#($0)","name":"Holiday \#($0)","date":"2026-01-01"}"# }.joined(separator: "\n"))
            try sandbox.succeed(["import", "Holiday", file])
            let adds = 80
            let writer = try sandbox.launchShell("""
            i=0
            while [ $i -lt \(adds) ]; do
              "$EVSYNC_BINARY_PATH" add Holiday --id w$i name=Writer date=2026-02-01 >/dev/null || exit 1
              i=$((i + 1))
            done
            """)
            var outcomes: [String: Int] = [:]
            while writer.isRunning {
                let shrink = try sandbox.succeed(["log", "compact", "--before", "1", "--wait", "0", "--json"])
                let dataFile = try #require(try JSONParser.parse(shrink.stdout).objectValue?["dataFile"]?.objectValue, "\(shrink)")
                outcomes[dataFile["heldOpenBy"] == nil ? "swapped" : "left", default: 0] += 1
            }
            let written = writer.wait()
            #expect(written.status == Exit.ok, "an add failed beside shrinks (\(outcomes)): \(written)")
            let alone = try sandbox.succeed(["log", "compact", "--before", "1", "--json"])
            #expect(try JSONParser.parse(alone.stdout).objectValue?["dataFile"]?.objectValue?["heldOpenBy"] == nil, "alone, it swaps: \(alone)")
            #expect(Set(try sandbox.records("Holiday").keys) == Set((0..<count).map { "h\($0)" } + (0..<adds).map { "w\($0)" }))
            #expect(try sandbox.eventCount() == Int64(count + adds))
            #expect(try sandbox.succeed(["rebuild-views", "--verify"]).stdout == "views match the log (\(count + adds) events)\n")
            #expect(try sandbox.run(["log", "verify"]).status == Exit.ok)
        }
    }
}
