import Foundation
import Testing
@testable import EventStore
import TestSupport

/// A power cut that loses meta pages, an emptied data file, lost databases
/// and flipped bytes, each made for real in `data.mdb`: every read command
/// either shows everything committed before or refuses with exit 74 and one
/// line naming the store; never a signal, never an existing store turned
/// into an empty one, and reading never changes the store.
@Suite("CLI damaged stores")
struct StoreDamageCLITests {
    static let readCommands: [[String]] = [
        ["status", "--json"], ["list", "Holiday", "--json"], ["show", "Holiday", "h", "--json"], ["history", "h", "--json"],
        ["log", "tail", "-n", "100000", "--json"], ["rebuild-views", "--verify"],
    ]

    static let writeCommands: [[String]] = [
        ["add", "Holiday", "name=New", "date=2026-01-01"], ["edit", "Holiday", "h", "details=More"], ["delete", "Holiday", "h"],
        ["import", "Holiday", "-"], ["rebuild-views"],
    ]

    /// A store of `count` imported Holidays and Holiday `h` with one edit.
    static func seed(_ sandbox: Sandbox, count: Int) throws {
        try sandbox.succeed(["import", "Holiday", "-"], stdin: StoreFailureCLITests.holidays(count))
        try sandbox.succeed(["add", "Holiday", "--id", "h", "name=Christmas", "date=2026-12-25"])
        try sandbox.succeed(["edit", "Holiday", "h", "details=Presents"])
    }

    static func dataFile(_ sandbox: Sandbox) -> URL { sandbox.store.appendingPathComponent("data.mdb") }

    /// LMDB's two meta pages (pages 0 and 1; the page size is in the first one's header, at 16 + 24).
    static func metaPages(_ sandbox: Sandbox) throws -> Data {
        let bytes = try Data(contentsOf: dataFile(sandbox))
        let pageSize = Int(bytes[40]) | Int(bytes[41]) << 8 | Int(bytes[42]) << 16 | Int(bytes[43]) << 24
        return bytes.prefix(2 * pageSize)
    }

    /// Of the two meta pages `pages`, the one with the higher transaction id (at 16 + 128), and where it goes.
    static func newerMetaPage(of pages: Data) -> (Data, offset: UInt64) {
        let pageSize = pages.count / 2
        let id = { (page: Int) in (0..<8).reduce(UInt64(0)) { $0 | UInt64(pages[page * pageSize + 144 + $1]) << (8 * $1) } }
        return id(0) > id(1) ? (pages.prefix(pageSize), 0) : (pages.suffix(pageSize), UInt64(pageSize))
    }

    /// Writes `pages` back over the start of the data file, as a disk that never wrote the newer ones would have it.
    static func restore(_ pages: Data, at offset: UInt64 = 0, in sandbox: Sandbox) throws {
        let handle = try FileHandle(forWritingTo: dataFile(sandbox))
        try handle.seek(toOffset: offset)
        try handle.write(contentsOf: pages)
        try handle.close()
    }

    /// What every read command prints, to compare a store with after the crash.
    static func readings(_ sandbox: Sandbox) throws -> [String] {
        try readCommands.map { try sandbox.succeed($0).stdout }
    }

    /// Expects `result` to be the store's refusal: exit 74, one line on stderr naming the store, nothing on stdout.
    static func expectRefusal(_ result: CLIResult, _ sandbox: Sandbox, _ command: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let store = sandbox.store.path
        #expect(result.status == Exit.damaged, "\(command): \(result)", sourceLocation: sourceLocation)
        #expect(result.stderr.hasPrefix("evsync: the store at \(store) is damaged (")
            || result.stderr.hasPrefix("evsync: the views of the store at \(store) are damaged ("), "\(command): \(result)",
            sourceLocation: sourceLocation)
        #expect(result.stderr.filter { $0 == "\n" }.count == 1 && result.stderr.hasSuffix("\n"), "\(command): \(result)",
                sourceLocation: sourceLocation)
    }

    // MARK: Power cut

    /// What is committed after the meta pages are saved.
    enum LaterCommits: CustomStringConvertible {
        case adds(Int)
        case imports(Int)
        case edits(Int)

        var description: String {
            switch self {
            case .adds(let count): "\(count) adds"
            case .imports(let count): "\(count) imports"
            case .edits(let count): "\(count) edits"
            }
        }

        func run(in sandbox: Sandbox) throws {
            switch self {
            case .adds(let count):
                for index in 0..<count { try sandbox.succeed(["add", "Holiday", "name=Later \(index)", "date=2026-02-01"]) }
            case .imports(let count):
                for index in 0..<count {
                    try sandbox.succeed(["import", "Holiday", "-"], stdin: StoreFailureCLITests.holidays(1000, from: 10_000 * (index + 1)))
                }
            case .edits(let count):
                for index in 0..<count { try sandbox.succeed(["edit", "Holiday", "h", "details=Edit \(index)"]) }
            }
        }
    }

    /// Expects `now`, what `words` printed after the power cut, to hold everything it printed
    /// before the later commits (the old tree, or a later one whose pages all survived).
    static func expectEverything(of before: String, in now: String, _ words: [String], _ command: String,
                                 sourceLocation: SourceLocation = #_sourceLocation) throws {
        switch words[0] {
        case "status":
            let events = { (text: String) in try JSONParser.parse(text).objectValue?["events"]?.int64Value ?? -1 }
            #expect(try events(now) >= events(before), "\(command): \(now)", sourceLocation: sourceLocation)
        case "list":
            let ids = { (text: String) in Set(try JSONParser.parse(text).arrayValue?.compactMap { $0.objectValue?["id"]?.stringValue } ?? []) }
            #expect(try ids(before).isSubset(of: ids(now)), "\(command) lost records", sourceLocation: sourceLocation)
        case "history":
            let (old, new) = (try JSONParser.parse(before).arrayValue ?? [], try JSONParser.parse(now).arrayValue ?? [])
            #expect(!old.isEmpty && new.starts(with: old), "\(command) lost or changed events", sourceLocation: sourceLocation)
        case "log":
            // Earlier events, unchanged and in order, then maybe later ones.
            let (old, new) = (before.split(separator: "\n"), now.split(separator: "\n"))
            #expect(!old.isEmpty && new.starts(with: old), "\(command) lost or changed events", sourceLocation: sourceLocation)
        case "rebuild-views":
            #expect(now.hasPrefix("views match the log ("), "\(command): \(now)", sourceLocation: sourceLocation)
        default:
            #expect(!now.isEmpty, "\(command)", sourceLocation: sourceLocation)
        }
    }

    @Test("a power cut that kept later data pages but not the newer meta pages: each read shows all 2,000 earlier events or exits 74")
    func olderMetaPagesWrittenBack() throws {
        // (what is committed after the meta pages are saved, whether only the newer of the two is written back)
        let cases: [(LaterCommits, Bool)] = (1...6).map { (.adds($0), false) } + [(.imports(1), false), (.imports(3), false),
            (.edits(2), false), (.edits(5), false), (.adds(1), true), (.adds(4), true)]
        var opened: [String] = []
        var refused: [String] = []
        for (later, onlyNewer) in cases {
            try withSandbox { sandbox in
                try Self.seed(sandbox, count: 2000)
                let before = try Self.readings(sandbox)
                let saved = try Self.metaPages(sandbox)
                try later.run(in: sandbox)
                if onlyNewer {
                    let (page, offset) = Self.newerMetaPage(of: saved)
                    try Self.restore(page, at: offset, in: sandbox)
                } else {
                    try Self.restore(saved, in: sandbox)
                }
                var answers: [Int32] = []
                for (words, expected) in zip(Self.readCommands, before) {
                    let result = try sandbox.run(words)
                    let command = "after \(later)\(onlyNewer ? " (newer meta page written back)" : ""), \(words.joined(separator: " "))"
                    #expect(result.status >= 0, "\(command) was killed by signal \(-result.status): \(result)")
                    answers.append(result.status)
                    if result.status == Exit.ok {
                        try Self.expectEverything(of: expected, in: result.stdout, words, command)
                    } else {
                        Self.expectRefusal(result, sandbox, command)
                    }
                }
                // Each command answers on its own: one that reads only sound pages of a damaged store may answer.
                if Set(answers) == [Exit.ok] { opened.append("\(later)") } else { refused.append("\(later)") }
            }
        }
        // Both outcomes came up, so both were checked: an old tree still whole, and one whose pages were reused.
        #expect(!opened.isEmpty && !refused.isEmpty, "opened: \(opened), refused: \(refused)")
    }

    @Test("a power cut right after an import that wrote in place: the disk holds every imported event",
          .enabled(if: Mounts.loopPermitted, "needs root to mount an ext4 image through a loop device"))
    func powerCutAfterImportWritingInPlace() throws {
        try withSandbox { sandbox in
            let disk = try Mounts.LoopDisk(in: sandbox.root, size: "256M")
            defer { disk.detach() }
            let store = disk.mountPoint.appendingPathComponent("store").path
            try sandbox.succeed(["--store", store, "add", "Holiday", "--id", "h", "name=Christmas", "date=2026-12-25"])
            // Written and not flushed: a power cut now takes it, which shows the copy below is one. The import
            // writes far more pages than the 16 MiB it keeps mapped, so pages it unmapped must reach the disk too.
            let unflushed = disk.mountPoint.appendingPathComponent("unflushed")
            let file = open(unflushed.path, O_WRONLY | O_CREAT, 0o600)
            #expect(file >= 0 && [UInt8](repeating: 7, count: 1 << 20).withUnsafeBytes { write(file, $0.baseAddress, $0.count) } == 1 << 20)
            close(file)
            try sandbox.succeed(["--store", store, "import", "Holiday", "-"], stdin: StoreFailureCLITests.holidays(60_000))

            let cut = try disk.powerCut()
            defer { cut.detach() }
            let lost = (try? Data(contentsOf: cut.mountPoint.appendingPathComponent("unflushed")))?.count ?? 0
            #expect(lost < 1 << 20, "the copy holds what was flushed only, yet has all of a file never synced")
            let after = cut.mountPoint.appendingPathComponent("store").path
            #expect(try StoreFailureCLITests.eventCount(sandbox, store: after) == 60_001)
            #expect(try sandbox.succeed(["--store", after, "rebuild-views", "--verify"]).stdout == "views match the log (60001 events)\n")
            try sandbox.succeed(["--store", after, "log", "verify"])
        }
    }

    @Test("a power cut that lost only the last meta page: the store opens with everything up to the commit before, and takes writes")
    func lastMetaPageLost() throws {
        try withSandbox { sandbox in
            try Self.seed(sandbox, count: 2000)
            for index in 0..<4 {
                let before = try Self.readings(sandbox)
                let saved = try Self.metaPages(sandbox)
                // Each kind of commit: one event, many, an edit, and one that appends none (a rebuild).
                switch index {
                case 0: try sandbox.succeed(["add", "Holiday", "name=Lost", "date=2026-02-01"])
                case 1: try sandbox.succeed(["import", "Holiday", "-"], stdin: StoreFailureCLITests.holidays(500, from: 50_000))
                case 2: try sandbox.succeed(["edit", "Holiday", "h", "details=Lost"])
                default: try sandbox.succeed(["rebuild-views"])
                }
                try Self.restore(saved, in: sandbox)
                #expect(try Self.readings(sandbox) == before, "commit \(index)")
            }
            try sandbox.succeed(["add", "Holiday", "name=After", "date=2026-03-01"])
            #expect(try sandbox.eventCount() == 2003)
            try sandbox.succeed(["rebuild-views", "--verify"])
        }
    }

    // MARK: An existing store never becomes an empty one

    @Test("an empty data file: every command says the store is damaged, exit 74; nothing writes a new store into it")
    func emptyDataFile() throws {
        try withSandbox { sandbox in
            try Self.seed(sandbox, count: 10)
            #expect(truncate(Self.dataFile(sandbox).path, 0) == 0)
            let line = "evsync: the store at \(sandbox.store.path) is damaged (data.mdb is empty: it holds not even LMDB's header): "
                + "rebuild-views cannot help; restore it from a backup (see evsync help backup)\n"
            for words in Self.readCommands + Self.writeCommands {
                let result = try sandbox.run(words, stdin: StoreFailureCLITests.holidays(2))
                #expect(result.status == Exit.damaged, "\(words.joined(separator: " ")): \(result)")
                #expect(result.stderr == line, "\(words.joined(separator: " "))")
                #expect(try FileManager.default.attributesOfItem(atPath: Self.dataFile(sandbox).path)[.size] as? Int == 0)
            }
        }
    }

    @Test("processes racing to create one new store: none takes the store being created for a damaged or an empty one")
    func racingCreators() throws {
        for round in 0..<20 {
            try withSandbox { sandbox in
                let writers = try (0..<6).map { try sandbox.launch(["add", "Holiday", "--id", "w\($0)", "name=W", "date=2026-01-01"]) }
                let readers = try (0..<2).map { _ in try sandbox.launch(["status", "--json"]) }
                for result in writers.map({ $0.wait() }) { #expect(result.status == Exit.ok, "round \(round): \(result)") }
                // A reader finds no store yet, or the store: never a damaged one.
                for result in readers.map({ $0.wait() }) {
                    #expect([Exit.ok, Exit.noInput].contains(result.status), "round \(round): \(result)")
                }
                #expect(try sandbox.eventCount() == 6, "round \(round)")
            }
        }
    }

    @Test("no store: the read commands exit 66 and create nothing, neither the directory nor a file in an empty one")
    func missingStore() throws {
        try withSandbox { sandbox in
            for words in Self.readCommands + [["edit", "Holiday", "h", "details=More"], ["delete", "Holiday", "h"]] {
                let result = try sandbox.run(words)
                #expect(result.status == Exit.noInput, "\(words.joined(separator: " ")): \(result)")
                #expect(result.stderr == "evsync: no store at \(sandbox.store.path) (`evsync add` or `evsync import` creates one; --store DIR or EVSYNC_STORE picks another)\n")
                #expect(!FileManager.default.fileExists(atPath: sandbox.store.path))
            }
            try FileManager.default.createDirectory(at: sandbox.store, withIntermediateDirectories: true)
            for words in Self.readCommands {
                #expect(try sandbox.run(words).status == Exit.noInput, "\(words.joined(separator: " "))")
                #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.store.path).isEmpty)
            }
        }
    }

    @Test("a lost view database: the reads say the views are damaged, exit 74, without creating it; rebuild-views repairs them")
    func lostView() throws {
        try withSandbox { sandbox in
            try Self.seed(sandbox, count: 10)
            let before = try Self.readings(sandbox)
            #expect(try patchDataFile(ofStore: sandbox.store.path, "records", "recordz") > 0)
            let damaged = try Data(contentsOf: Self.dataFile(sandbox))
            for words in Self.readCommands {
                let result = try sandbox.run(words)
                #expect(result.status == Exit.damaged, "\(words.joined(separator: " ")): \(result)")
                #expect(result.stderr == "evsync: the views of the store at \(sandbox.store.path) are damaged (its records database is missing): "
                    + "run evsync rebuild-views to replay them from the log\n", "\(words.joined(separator: " "))")
                #expect(try Data(contentsOf: Self.dataFile(sandbox)) == damaged, "\(words.joined(separator: " ")) changed the store")
            }
            #expect(try sandbox.succeed(["rebuild-views"]).stdout == "rebuilt the views from 12 events\n")
            #expect(try Self.readings(sandbox) == before)
        }
    }

    @Test("a log that ends before the last event committed: the store is damaged, exit 74")
    func logEndsEarly() throws {
        try withSandbox { sandbox in
            try Self.seed(sandbox, count: 10)
            // The mark of a later commit than the log shows, as a meta page from before it would leave.
            #expect(try patchDataFile(ofStore: sandbox.store.path, "log-end12", "log-end92") > 0)
            for words in Self.readCommands {
                let result = try sandbox.run(words)
                #expect(result.status == Exit.damaged, "\(words.joined(separator: " ")): \(result)")
                #expect(result.stderr == "evsync: the store at \(sandbox.store.path) is damaged (its log ends at event 12, but events up to 92 were committed): "
                    + "rebuild-views cannot help; restore it from a backup (see evsync help backup)\n", "\(words.joined(separator: " "))")
            }
        }
    }

    // MARK: Flipped bytes

    @Test("a byte flipped anywhere in a small store: each read works or exits 74 with one line, never a signal, and changes nothing")
    func flippedBytes() throws {
        try withSandbox { sandbox in
            try Self.seed(sandbox, count: 20)
            try sandbox.succeed(["delete", "Holiday", "h"])
            try sandbox.succeed(["add", "Holiday", "--id", "h", "name=Again", "date=2026-12-26"])
            let original = try Data(contentsOf: Self.dataFile(sandbox))
            let pageSize = Int(original[40]) | Int(original[41]) << 8
            // Every header field of both meta pages, then positions spread over every page.
            var positions = Array(stride(from: 0, to: 160, by: 8)) + Array(stride(from: pageSize + 4, to: pageSize + 160, by: 8))
            var generator = SplitMix64(seed: 11)
            for page in 2..<original.count / pageSize {
                positions += [page * pageSize, page * pageSize + 10, page * pageSize + 12]
                positions.append(page * pageSize + Int.random(in: 16..<pageSize, using: &generator))
            }
            var refusals = 0
            for position in positions {
                var damaged = original
                damaged[position] ^= 0xFF
                try damaged.write(to: Self.dataFile(sandbox))
                for words in Self.readCommands {
                    let result = try sandbox.run(words)
                    let command = "byte \(position) flipped, \(words.joined(separator: " "))"
                    #expect(result.status >= 0, "\(command) was killed by signal \(-result.status): \(result)")
                    if result.status == Exit.failure, words == ["rebuild-views", "--verify"] {
                        // Its documented answer when the views differ from the log: the damage was found.
                        #expect(result.stderr.hasPrefix("evsync: the views differ from the log"), "\(command): \(result)")
                    } else if result.status == Exit.noInput, words[0] == "show" {
                        // A flip in the record's key: LMDB finds no such key, nothing can tell it from a record never made.
                        #expect(result.stderr == "evsync: no Holiday with id 'h'\n", "\(command): \(result)")
                    } else if result.status == Exit.noInput, words[0] == "history" {
                        // The same in the history index: no events found for the id, as for an id never used.
                        #expect(result.stderr == "evsync: no events for id 'h'\n", "\(command): \(result)")
                    } else if result.status != Exit.ok {
                        refusals += 1
                        Self.expectRefusal(result, sandbox, command)
                    }
                }
                #expect(try Data(contentsOf: Self.dataFile(sandbox)) == damaged, "byte \(position) flipped: a read changed the store")
            }
            #expect(refusals > 0)
        }
    }

    // MARK: Reading changes nothing

    /// Each file of the store directory: name, permissions, time of change and bytes (of `lock.mdb`, LMDB's
    /// reader table, which every reader writes its slot in, only the permissions).
    static func snapshot(_ sandbox: Sandbox) throws -> [String: String] {
        var files: [String: String] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: sandbox.store.path) {
            let path = sandbox.store.appendingPathComponent(name).path
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            let mode = String(attributes[.posixPermissions] as? Int ?? -1, radix: 8)
            guard name != "lock.mdb" else {
                files[name] = mode
                continue
            }
            let bytes = try Data(contentsOf: URL(fileURLWithPath: path)).base64EncodedString()
            files[name] = "\(mode) \(attributes[.modificationDate] as? Date ?? .distantPast) \(bytes)"
        }
        return files
    }

    @Test("the read commands create and change nothing in the store but LMDB's reader table")
    func readsChangeNothing() throws {
        try withSandbox { sandbox in
            try Self.seed(sandbox, count: 10)
            let before = try Self.snapshot(sandbox)
            for words in Self.readCommands + [["log", "tail"], ["list", "Holiday"], ["show", "Holiday", "h"], ["history", "h"], ["status"]] {
                try sandbox.succeed(words)
                #expect(try Self.snapshot(sandbox) == before, "\(words.joined(separator: " "))")
            }
        }
    }

    @Test("on read-only media every read command answers as it does on the store itself",
          .enabled(if: Mounts.permitted, "needs root for a read-only bind mount"))
    func readsOnReadOnlyMedia() throws {
        try withSandbox { sandbox in
            try Self.seed(sandbox, count: 10)
            let expected = try Self.readings(sandbox).map { $0.replacingOccurrences(of: sandbox.store.path, with: "STORE") }
            let mounted = sandbox.root.appendingPathComponent("read-only")
            try FileManager.default.createDirectory(at: mounted, withIntermediateDirectories: true)
            try Mounts.readOnlyBind(sandbox.store, at: mounted)
            defer { Mounts.unmount(mounted) }
            for (words, output) in zip(Self.readCommands, expected) {
                let result = try sandbox.succeed(["--store", mounted.path] + words)
                #expect(result.stdout.replacingOccurrences(of: mounted.path, with: "STORE") == output, "\(words.joined(separator: " "))")
            }
        }
    }

    // MARK: Permissions

    static func mode(_ url: URL) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int)
    }

    @Test("a new store is its owner's only whatever the umask (0700, files 0600); an existing store's permissions are left alone")
    func permissions() throws {
        try withSandbox { sandbox in
            let binary = "\"$EVSYNC_BINARY_PATH\""
            let result = try sandbox.launchShell("umask 0; \(binary) add Holiday --id h name=A date=2026-01-01 && "
                + "EVSYNC_RETRIES=1 \(binary) sync --remote http://127.0.0.1:1/v1/buckets/b; echo $?").wait()
            #expect(result.stdout.hasSuffix("h\n69\n"), "\(result)")
            #expect(try Self.mode(sandbox.store) == 0o700)
            for name in ["data.mdb", "lock.mdb", "sync.lock"] {
                #expect(try Self.mode(sandbox.store.appendingPathComponent(name)) == 0o600, "\(name)")
            }
            // The owner chose to share the store with the group: evsync keeps that.
            try FileManager.default.setAttributes([.posixPermissions: 0o750], ofItemAtPath: sandbox.store.path)
            try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: Self.dataFile(sandbox).path)
            try sandbox.succeed(["add", "Holiday", "name=B", "date=2026-01-01"])
            #expect(try Self.mode(sandbox.store) == 0o750)
            #expect(try Self.mode(Self.dataFile(sandbox)) == 0o640)
        }
    }

    // MARK: Following a store that goes away

    /// Starts `log tail --follow`, waits for its first line, does `change`, and waits for it to exit.
    static func follow(_ sandbox: Sandbox, then change: () throws -> Void) throws -> CLIResult {
        let follower = try sandbox.launch(["log", "tail", "--follow"])
        let deadline = Date().addingTimeInterval(30)
        while follower.currentOutput.isEmpty, follower.isRunning, Date() < deadline { usleep(10_000) }
        try change()
        return follower.wait(timeout: 30)
    }

    @Test("log tail --follow notices its store was removed: one line, exit 66")
    func followRemoved() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "--id", "h", "name=A", "date=2026-01-01"])
            let result = try Self.follow(sandbox) { try FileManager.default.removeItem(at: sandbox.store) }
            #expect(result.status == Exit.noInput, "\(result)")
            #expect(result.stderr == "evsync: the store at \(sandbox.store.path) was removed\n")
            #expect(result.lines.count == 1)
        }
    }

    @Test("log tail --follow notices its store was replaced by another: one line, exit 66")
    func followReplaced() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "--id", "h", "name=A", "date=2026-01-01"])
            let other = sandbox.root.appendingPathComponent("other")
            try sandbox.succeed(["--store", other.path, "add", "Holiday", "--id", "o", "name=B", "date=2026-01-01"])
            // In one step (a rename over the data file, as a restore does): a follower woken by each change
            // would otherwise see the store removed first.
            let result = try Self.follow(sandbox) {
                #expect(rename(other.appendingPathComponent("data.mdb").path, sandbox.store.appendingPathComponent("data.mdb").path) == 0)
            }
            #expect(result.status == Exit.noInput, "\(result)")
            #expect(result.stderr == "evsync: the store at \(sandbox.store.path) was replaced by another one: start again to read the new one\n")
        }
    }

    @Test("log compact that moved nothing does not wait for another process that has the store open; with --wait it does")
    func compactMovingNothingWaitsForNoOne() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "--id", "h", "name=A", "date=2026-01-01"])
            let follower = try sandbox.launch(["log", "tail", "--follow"])
            defer { follower.signal(SIGTERM) }
            let deadline = Date().addingTimeInterval(30)
            while follower.currentOutput.isEmpty, follower.isRunning, Date() < deadline { usleep(10_000) }
            let started = Date()
            let result = try sandbox.succeed(["log", "compact", "--before", "1"])
            #expect(Date().timeIntervalSince(started) < 5, "it waited (the default wait is 10 s): \(result)")
            #expect(result.stdout.contains("nothing to compact") && result.stdout.contains("data file left as it is"), "\(result)")
            #expect(!result.stderr.contains("waiting"), "\(result)")
            let told = try sandbox.succeed(["log", "compact", "--before", "1", "--wait", "0.5"])
            #expect(told.stderr.contains("waiting up to 1 second"), "--wait given: it waits, and says so: \(told)")
        }
    }
}
