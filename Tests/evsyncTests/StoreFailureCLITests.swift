import Foundation
import Testing
@testable import EventStore
import TestSupport

/// A full disk, a full map, read-only media and a damaged store, each provoked
/// for real: every one is one line on stderr naming the store, with its exit
/// code (73 cannot write, 74 damaged), never a signal, and the store keeps
/// everything committed before.
@Suite("CLI store failures")
struct StoreFailureCLITests {
    /// JSON Lines of `count` Holidays, about 150 bytes each.
    static func holidays(_ count: Int, from first: Int = 0) -> Data {
        Data((first..<first + count).map { #"{"name":"Holiday \#($0) \#(String(repeating: "x", count: 100))","date":"2026-01-01"}"# + "\n" }
            .joined().utf8)
    }

    /// Imports chunks of 500 Holidays into `store` until one fails (at most `limit` chunks).
    /// - Returns: the failed run, and how many events are in the store.
    static func fill(_ sandbox: Sandbox, store: String, environment: [String: String?] = [:],
                     limit: Int = 40) throws -> (CLIResult?, events: Int64) {
        var events = try eventCount(sandbox, store: store, environment: environment)
        for index in 0..<limit {
            let result = try sandbox.run(["--store", store, "import", "Holiday", "-"], stdin: holidays(500, from: index * 500),
                                         environment: environment)
            guard result.status == Exit.ok else { return (result, events) }
            events += 500
        }
        return (nil, events)
    }

    static func eventCount(_ sandbox: Sandbox, store: String, environment: [String: String?] = [:],
                           sourceLocation: SourceLocation = #_sourceLocation) throws -> Int64 {
        let result = try sandbox.succeed(["--store", store, "status", "--json"], environment: environment, sourceLocation: sourceLocation)
        return try #require(try result.json().objectValue?["events"]?.int64Value, sourceLocation: sourceLocation)
    }

    static let mapSizeHookWorks: Bool = {
        #if DEBUG
        true
        #else
        false
        #endif
    }()

    @Test("a full disk: 'no space left on the device holding DIR', exit 73; every event committed before is kept",
          .enabled(if: Mounts.permitted, "needs root to mount a tmpfs"))
    func diskFull() throws {
        try withSandbox { sandbox in
            let disk = sandbox.root.appendingPathComponent("disk")
            try FileManager.default.createDirectory(at: disk, withIntermediateDirectories: true)
            try Mounts.tmpfs(at: disk, size: "2m")
            defer { Mounts.unmount(disk) }
            let store = disk.appendingPathComponent("store").path
            try sandbox.succeed(["--store", store, "add", "Holiday", "--id", "first", "name=First", "date=2026-01-01"])

            let (failed, events) = try Self.fill(sandbox, store: store)
            let result = try #require(failed, "2 MiB never filled up")
            #expect(result.status == Exit.cannotWrite, "\(result)")
            #expect(result.stderr == "evsync: no space left on the device holding \(store): nothing was written; free some space and retry\n")
            #expect(events > 1, "some imports went in before the disk was full")

            // The full store still opens, and holds exactly what was committed.
            #expect(try Self.eventCount(sandbox, store: store) == events)
            let list = try sandbox.succeed(["--store", store, "list", "Holiday", "--json"])
            #expect(try list.json().arrayValue?.count == Int(events))
            try sandbox.succeed(["--store", store, "rebuild-views", "--verify"])
        }
    }

    @Test("import from a pipe onto a full device: exit 73, nothing imported, and the data file cut back to its used pages",
          .enabled(if: Mounts.permitted, "needs root to mount a tmpfs"))
    func pipedImportOntoAFullDevice() throws {
        try withSandbox { sandbox in
            let disk = sandbox.root.appendingPathComponent("disk")
            try FileManager.default.createDirectory(at: disk, withIntermediateDirectories: true)
            try Mounts.tmpfs(at: disk, size: "1m")
            defer { Mounts.unmount(disk) }
            let store = disk.appendingPathComponent("store").path
            try sandbox.succeed(["--store", store, "add", "Holiday", "--id", "first", "name=First", "date=2026-01-01"])
            let before = try Self.eventCount(sandbox, store: store)
            // More input than the device holds: the spool fills it. Through a pipe (cat), as a user would.
            let input = sandbox.root.appendingPathComponent("input.jsonl")
            try Self.holidays(6_000).write(to: input)
            let result = try sandbox.launchShell("cat '\(input.path)' | \"$EVSYNC_BINARY_PATH\" --store '\(store)' import Holiday -").wait()
            #expect(result.status == Exit.cannotWrite, "\(result)")
            #expect(result.stderr.lowercased().contains("no space left on") && result.stderr.split(separator: "\n").count == 1, "\(result)")
            #expect(try Self.eventCount(sandbox, store: store) == before)
            var status = stat()
            #expect(stat(store + "/data.mdb", &status) == 0 && status.st_size < 1 << 20, "the data file is \(status.st_size) bytes long")
        }
    }

    @Test("a small import into a store larger than the disk's free space: it reserves room for what it touches, not a copy of the store",
          .enabled(if: Mounts.permitted, "needs root to mount a tmpfs"))
    func smallImportIntoLargeStore() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["import", "Holiday", "-"], stdin: Self.holidays(12_000))
            let disk = sandbox.root.appendingPathComponent("disk")
            try FileManager.default.createDirectory(at: disk, withIntermediateDirectories: true)
            try Mounts.tmpfs(at: disk, size: "9m")
            defer { Mounts.unmount(disk) }
            let store = disk.appendingPathComponent("store")
            try FileManager.default.copyItem(at: sandbox.store, to: store)
            var status = stat()
            #expect(stat(store.appendingPathComponent("data.mdb").path, &status) == 0 && status.st_size > 9 << 19,
                    "the store takes more than half the disk: a copy of it would not fit")

            let result = try sandbox.run(["--store", store.path, "import", "Holiday", "-"], stdin: Self.holidays(10, from: 12_000))
            #expect(result.status == Exit.ok && result.stdout == "imported 10 Holiday records\n", "\(result)")
            #expect(try Self.eventCount(sandbox, store: store.path) == 12_010)
        }
    }

    @Test("a full map: 'the store at DIR is full (its 256 KiB map)', exit 73; nothing of the failed write is kept",
          .enabled(if: mapSizeHookWorks, "EVSYNC_MAP_SIZE is read by debug builds only"))
    func mapFull() throws {
        try withSandbox { sandbox in
            let store = sandbox.store.path
            let small: [String: String?] = ["EVSYNC_MAP_SIZE": String(256 << 10)]
            try sandbox.succeed(["add", "Holiday", "--id", "first", "name=First", "date=2026-01-01"], environment: small)

            let (failed, events) = try Self.fill(sandbox, store: store, environment: small)
            let result = try #require(failed, "256 KiB never filled up")
            #expect(result.status == Exit.cannotWrite, "\(result)")
            #expect(result.stderr == "evsync: the store at \(store) is full (its 256 KiB map): nothing was written; "
                + "a store cannot grow past its map, so sync it, then start a new store and pull into it\n")
            #expect(try Self.eventCount(sandbox, store: store, environment: small) == events)
            // With its usual map, the same store takes the import.
            try sandbox.succeed(["import", "Holiday", "-"], stdin: Self.holidays(500, from: 100_000))
            #expect(try sandbox.eventCount() == events + 500)
        }
    }

    static let readOnlyWrites: [[String]] = [
        ["add", "Holiday", "name=New", "date=2026-01-01"],
        ["edit", "Holiday", "h", "details=More"],
        ["delete", "Holiday", "h"],
        ["import", "Holiday", "-"],
        ["rebuild-views"],
    ]

    /// Runs every write command on `store` and expects each to fail with exit 73 and `line`;
    /// the read commands still work there.
    static func expectReadOnly(_ sandbox: Sandbox, store: String, line: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        for words in readOnlyWrites {
            let result = try sandbox.run(["--store", store] + words, stdin: holidays(3), sourceLocation: sourceLocation)
            #expect(result.status == Exit.cannotWrite, "\(words.joined(separator: " ")): \(result)", sourceLocation: sourceLocation)
            #expect(result.stderr == line + "\n", "\(words.joined(separator: " "))", sourceLocation: sourceLocation)
            #expect(result.stdout.isEmpty, sourceLocation: sourceLocation)
        }
        let show = try sandbox.succeed(["--store", store, "show", "Holiday", "h", "--json"], sourceLocation: sourceLocation)
        #expect(try show.json().objectValue?["name"] == "Christmas", sourceLocation: sourceLocation)
        #expect(try eventCount(sandbox, store: store, sourceLocation: sourceLocation) == 1, sourceLocation: sourceLocation)
    }

    static func seedOne(_ sandbox: Sandbox) throws {
        try sandbox.succeed(["add", "Holiday", "--id", "h", "name=Christmas", "date=2026-12-25"])
    }

    @Test("a store on a read-only mount: every write command says it is read-only, exit 73; reading works",
          .enabled(if: Mounts.permitted, "needs root for a read-only bind mount"))
    func readOnlyMount() throws {
        try withSandbox { sandbox in
            try Self.seedOne(sandbox)
            let mounted = sandbox.root.appendingPathComponent("read-only")
            try FileManager.default.createDirectory(at: mounted, withIntermediateDirectories: true)
            try Mounts.readOnlyBind(sandbox.store, at: mounted)
            defer { Mounts.unmount(mounted) }
            try Self.expectReadOnly(sandbox, store: mounted.path, line: "evsync: the store at \(mounted.path) is read-only "
                + "(its file system is mounted read-only): nothing can be written to it; remount it read-write or copy the store elsewhere")
        }
    }

    @Test("an immutable data file: every write command says the store is read-only, exit 73; reading works",
          .enabled(if: Mounts.immutablePermitted, "needs root and a file system with chattr +i"))
    func immutableFile() throws {
        try withSandbox { sandbox in
            try Self.seedOne(sandbox)
            let data = sandbox.store.appendingPathComponent("data.mdb")
            try Mounts.setImmutable(data, true)
            defer { try? Mounts.setImmutable(data, false) }
            try Self.expectReadOnly(sandbox, store: sandbox.store.path, line: "evsync: the store at \(sandbox.store.path) is read-only "
                + "(its files may not be changed): nothing can be written to it; clear their immutable flag (chattr -i) or copy the store elsewhere")
        }
    }

    // MARK: Damage

    static let readAndWrite: [[String]] = [
        ["status"], ["list", "Holiday"], ["show", "Holiday", "h"], ["history", "h"], ["log", "tail", "-n", "100000"],
        ["rebuild-views"], ["add", "Holiday", "name=New", "date=2026-01-01"],
    ]

    /// A store of `count` imported Holidays and Holiday `h` with one edit.
    static func seedMany(_ sandbox: Sandbox, count: Int) throws {
        try sandbox.succeed(["import", "Holiday", "-"], stdin: holidays(count))
        try sandbox.succeed(["add", "Holiday", "--id", "h", "name=Christmas", "date=2026-12-25"])
        try sandbox.succeed(["edit", "Holiday", "h", "details=Presents"])
    }

    /// Flips a bit in event `seq`'s stored bytes, in the data file itself: its checksum no longer matches.
    static func flipByte(ofEvent seq: UInt64, in sandbox: Sandbox, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let stored = try #require(try sandbox.storedEvent(seq), sourceLocation: sourceLocation)
        var changed = stored
        changed[changed.count - 3] ^= 0x20
        #expect(try patchDataFile(ofStore: sandbox.store.path, stored, changed) > 0, sourceLocation: sourceLocation)
    }

    @Test("a data file cut short: every command says the store is damaged, exit 74, no signal")
    func truncated() throws {
        try withSandbox { sandbox in
            try Self.seedMany(sandbox, count: 2000)
            let data = sandbox.store.appendingPathComponent("data.mdb")
            let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
            let size = try #require(try FileManager.default.attributesOfItem(atPath: data.path)[.size] as? Int)
            let pages = size / pageSize / 2
            #expect(truncate(data.path, off_t(pages * pageSize)) == 0)
            let pattern = try Regex(#"^evsync: the store at (.*) is damaged \(data\.mdb is cut short: it ends at page (\d+), "#
                + #"but the store uses pages up to (\d+)\): rebuild-views cannot help; restore it from a backup \(see evsync help backup\)\n$"#)
            for words in Self.readAndWrite {
                let result = try sandbox.run(words)
                #expect(result.status == Exit.damaged, "\(words.joined(separator: " ")): \(result)")
                let match = try #require(try pattern.wholeMatch(in: result.stderr), "\(result.stderr)")
                #expect(match.output[1].substring.map(String.init) == sandbox.store.path)
                #expect(match.output[2].substring.flatMap { Int($0) } == pages)
                #expect(match.output[3].substring.flatMap { Int($0) }.map { $0 >= pages } == true)
            }
        }
    }

    @Test("an event whose bytes changed: reading the log, or a row stored as a reference to it, says the store is damaged, exit 74; other rows still answer")
    func undecodableEvent() throws {
        try withSandbox { sandbox in
            try Self.seedMany(sandbox, count: 10)
            try Self.flipByte(ofEvent: 3, in: sandbox)
            let line = "evsync: the store at \(sandbox.store.path) is damaged (corrupt event 3 in the log: its checksum does not match its bytes): "
                + "rebuild-views cannot help; restore it from a backup (see evsync help backup)\n"
            for words in [["log", "tail", "-n", "100"], ["log", "verify"], ["rebuild-views"], ["rebuild-views", "--verify"], ["conflicts"]] {
                let result = try sandbox.run(words)
                #expect(result.status == Exit.damaged, "\(words.joined(separator: " ")): \(result)")
                #expect(result.stderr == line, "\(words.joined(separator: " "))")
            }
            // An imported record's row is its event's `set` (a reference, not a copy): listing reads event 3.
            let list = try sandbox.run(["list", "Holiday"])
            #expect(list.status == Exit.damaged, "\(list)")
            #expect(list.stderr == line)
            // rebuild-views refused before changing anything: the views are as they were.
            try sandbox.succeed(["show", "Holiday", "h"])
            // status still answers from the views, and says the conflicts could not be counted rather than "none".
            let status = try sandbox.run(["status"])
            #expect(status.status == Exit.ok, "\(status)")
            #expect(status.stdout.contains("\nconflicts unknown: an event of the log cannot be read (evsync log verify says which)\n"), "\(status)")
            #expect(status.stdout.contains("; open conflicts unknown: the log cannot be read (evsync log verify)"), "\(status)")
            #expect(try sandbox.status()["openConflicts"] == .null)
        }
    }

    @Test("a view entry that cannot be read: the views are damaged, exit 74, and rebuild-views repairs them")
    func damagedView() throws {
        try withSandbox { sandbox in
            try Self.seedMany(sandbox, count: 10)
            // A field removed, h's row is no longer what events set: the view holds a copy of it.
            try sandbox.succeed(["edit", "Holiday", "h", "--unset", "details"])
            #expect(try patchDataFile(ofStore: sandbox.store.path, #"R{"date":"2026-12-25","name":"Christmas""#, #"Q{"date":"2026-12-25","name":"Christmas""#) > 0)
            let result = try sandbox.run(["show", "Holiday", "h"])
            #expect(result.status == Exit.damaged, "\(result)")
            #expect(result.stderr == "evsync: the views of the store at \(sandbox.store.path) are damaged (a view entry has an unknown layout): "
                + "run evsync rebuild-views to replay them from the log\n")
            try sandbox.succeed(["rebuild-views"])
            let show = try sandbox.succeed(["show", "Holiday", "h", "--json"])
            #expect(try show.json().objectValue?["name"] == "Christmas")
        }
    }

    @Test("meta pages that are not LMDB's: the store is damaged, exit 74")
    func invalidMetaPages() throws {
        try withSandbox { sandbox in
            try Self.seedMany(sandbox, count: 10)
            let handle = try FileHandle(forWritingTo: sandbox.store.appendingPathComponent("data.mdb"))
            try handle.write(contentsOf: Data(repeating: 0xAB, count: 2 * Int(sysconf(Int32(_SC_PAGESIZE)))))
            try handle.close()
            for words in Self.readAndWrite {
                let result = try sandbox.run(words)
                #expect(result.status == Exit.damaged, "\(words.joined(separator: " ")): \(result)")
                #expect(result.stderr == "evsync: the store at \(sandbox.store.path) is damaged (MDB_INVALID: File is not an LMDB file): "
                    + "rebuild-views cannot help; restore it from a backup (see evsync help backup)\n")
            }
        }
    }

    /// What is written over the middle third of the data file.
    enum Overwrite: String, CaseIterable {
        case zeros, ones, random
    }

    /// The commands that only read. LMDB 0.9 copies a page before changing
    /// it without checking its header, so a write through a page of garbage
    /// can overrun the heap before anything faults: writes are not promised
    /// a clean error on such a store (reads are: see `CLMDBGuard`).
    static let readOnlyCommands: [[String]] = [
        ["status"], ["list", "Holiday"], ["show", "Holiday", "h"], ["history", "h"], ["log", "tail", "-n", "100000"],
    ]

    @Test("pages overwritten in the middle: each read works or says the store is damaged, never a signal",
          arguments: Overwrite.allCases)
    func overwrittenPages(_ overwrite: Overwrite) throws {
        try withSandbox { sandbox in
            try Self.seedMany(sandbox, count: 3000)
            let url = sandbox.store.appendingPathComponent("data.mdb")
            var bytes = try Data(contentsOf: url)
            let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
            let pages = bytes.count / pageSize
            var generator = SplitMix64(seed: 10)
            for offset in (pages / 3 * pageSize)..<(2 * pages / 3 * pageSize) {
                bytes[offset] = switch overwrite {
                case .zeros: 0
                case .ones: 0xFF
                case .random: UInt8.random(in: 0...255, using: &generator)
                }
            }
            try bytes.write(to: url)
            let store = sandbox.store.path
            var damaged = 0
            for words in Self.readOnlyCommands {
                let result = try sandbox.run(words)
                let command = words.joined(separator: " ")
                #expect(result.status >= 0, "\(command) was killed by signal \(-result.status): \(result)")
                if result.status == 0 { continue }
                damaged += 1
                #expect(result.status == Exit.damaged, "\(command): \(result)")
                #expect(result.stderr.hasPrefix("evsync: the store at \(store) is damaged (")
                    || result.stderr.hasPrefix("evsync: the views of the store at \(store) are damaged ("), "\(command): \(result)")
                #expect(result.stderr.filter { $0 == "\n" }.count == 1 && result.stderr.hasSuffix("\n"), "\(command): \(result)")
            }
            #expect(damaged > 0, "a third of the store overwritten and nothing noticed")
        }
    }
}
