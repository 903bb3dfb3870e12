import Foundation
import Testing
@testable import EventStore
import TestSupport

/// `evsync backup DIR`: a copy of the store that opens as a store, made while others write.
@Suite("evsync backup")
struct BackupCLITests {
    /// The names in `directory`, sorted.
    static func entries(_ directory: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
    }

    static func mode(_ path: String) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }

    @Test("a backup made while another process adds records opens, verifies and matches its views")
    func backupWhileWriting() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "--id", "seed", "name=Seed", "date=2026-01-01"])
            // One writer process after another, until told to stop; each prints a line once its record is in.
            let writer = try sandbox.launchShell("""
                i=0
                while [ ! -e stop ] && [ $i -lt 2000 ]; do
                  i=$((i+1)); "$EVSYNC_BINARY_PATH" add Holiday --id "w$i" name="Writer $i" date=2026-02-01 >/dev/null || exit 1
                  echo "$i"
                done
                """)
            try #require(MultiProcessTests.waitFor(writer) { $0.split(separator: "\n").count >= 3 })
            var backups: [(path: String, events: Int64)] = []
            for name in ["b1", "b2", "b3"] {
                let result = try sandbox.succeed(["backup", name, "--json"])
                let object = try #require(try result.json().objectValue)
                backups.append((sandbox.root.appendingPathComponent(name).path, try #require(object["events"]?.int64Value)))
                #expect(object["backup"] == .string(name) && object["store"] == .string(sandbox.store.path), "\(result)")
                // Only the data file: opening a store (as the checks below do) makes its lock file.
                #expect(try Self.entries(sandbox.root.appendingPathComponent(name)) == ["data.mdb"])
            }
            #expect(writer.isRunning, "the writer was still adding records after the last backup: they ran at once")
            try sandbox.write("stop", "")
            #expect(writer.wait().status == Exit.ok)
            let total = try sandbox.eventCount()
            #expect(backups[0].events >= 4, "the backups began after the writer's first records")
            #expect(backups.last.map { $0.events < total } == true, "the writer added records after the backups: \(backups), \(total)")
            for backup in backups {
                let verified = try sandbox.succeed(["--store", backup.path, "log", "verify"])
                #expect(verified.stdout == "log is sound: \(backup.events) events checked\n", "\(verified)")
                try sandbox.succeed(["--store", backup.path, "rebuild-views", "--verify"])
                // Each add is one event: the records are the log's, as it was at one moment.
                let records = try sandbox.succeed(["--store", backup.path, "list", "Holiday", "--json"])
                #expect(try records.json().arrayValue?.count == Int(backup.events))
            }
            #expect(!(try Self.entries(sandbox.root)).contains { $0.contains(".partial-") }, "no partial backup left behind")
        }
    }

    @Test("the backup is its owner's only, whatever the umask")
    func ownerOnly() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "name=A", "date=2026-01-01"])
            let backup = try sandbox.launchShell(#"umask 000; "$EVSYNC_BINARY_PATH" backup open-umask"#).wait()
            #expect(backup.status == Exit.ok, "\(backup)")
            let directory = sandbox.root.appendingPathComponent("open-umask")
            #expect(try Self.mode(directory.path) == 0o700)
            #expect(try Self.entries(directory) == ["data.mdb"])
            #expect(try Self.mode(directory.appendingPathComponent("data.mdb").path) == 0o600)
        }
    }

    @Test("a non-empty directory, a file or a missing parent is refused with one line, and left as it was")
    func refusals() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "name=A", "date=2026-01-01"])
            let kept = try sandbox.write("full/notes.txt", "mine")
            let file = try sandbox.write("a-file", "mine too")
            for (target, code, mention) in [("full", Exit.usage, "is not empty"), ("a-file", Exit.usage, "is not a directory"),
                                            ("no-such-dir/backup", Exit.noInput, "no directory no-such-dir")] {
                let result = try sandbox.run(["backup", target])
                #expect(result.status == code, "\(target): \(result)")
                #expect(result.stderr.split(separator: "\n").count == 1 && result.stderr.contains(mention), "\(target): \(result)")
                #expect(result.stdout.isEmpty)
            }
            #expect(try String(contentsOfFile: kept, encoding: .utf8) == "mine")
            #expect(try Self.entries(sandbox.root.appendingPathComponent("full")) == ["notes.txt"])
            #expect(try String(contentsOfFile: file, encoding: .utf8) == "mine too")
            #expect(!FileManager.default.fileExists(atPath: sandbox.root.appendingPathComponent("no-such-dir").path))
            #expect(!(try Self.entries(sandbox.root)).contains { $0.contains(".partial-") })
            // An empty directory is taken, and becomes the backup.
            try FileManager.default.createDirectory(at: sandbox.root.appendingPathComponent("empty"), withIntermediateDirectories: false)
            let result = try sandbox.succeed(["backup", "empty/"])
            #expect(result.stdout == "backed up 1 event to empty (\(try Self.size(sandbox.root.appendingPathComponent("empty/data.mdb"))) bytes)\n")
        }
    }

    static func size(_ file: URL) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int)
    }

    @Test("a backup copied to a store's place is that store: its records, its remote, and it takes writes")
    func restore() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "--id", "kept", "name=Kept", "date=2026-01-01"])
            try sandbox.succeed(["remote", "http://127.0.0.1:1/v1/buckets/x"])
            try sandbox.succeed(["backup", "backup"])
            try sandbox.succeed(["add", "Holiday", "--id", "later", "name=Later", "date=2026-01-02"])
            // The store is lost; the backup is copied in its place.
            try FileManager.default.removeItem(at: sandbox.store)
            try FileManager.default.copyItem(at: sandbox.root.appendingPathComponent("backup"), to: sandbox.store)
            #expect(try sandbox.records("Holiday").keys.sorted() == ["kept"])
            #expect(try sandbox.status()["remote"] == "http://127.0.0.1:1/v1/buckets/x")
            try sandbox.succeed(["add", "Holiday", "--id", "after", "name=After", "date=2026-01-03"])
            try sandbox.succeed(["log", "verify"])
            #expect(try sandbox.records("Holiday").keys.sorted() == ["after", "kept"])
        }
    }
}
