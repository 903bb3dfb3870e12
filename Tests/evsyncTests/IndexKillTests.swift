import Foundation
import Testing
@testable import EventStore
import TestSupport

/// Indexes are written in the transaction that appends the events: a writer killed with SIGKILL leaves them
/// as its last commit left the log, whichever process wrote (the CLI here, opened without the schema that
/// declares the index: it keeps the store's indexes all the same).
@Suite("indexes and a killed writer")
struct IndexKillTests {
    static let schema = """
        {"title": "Holiday", "type": "object", "required": ["name", "date"], "x-evsync-index": ["date"],
         "properties": {"name": {"type": "string"}, "date": {"type": "string", "format": "date"}, "details": {"type": "string"}}}
        """

    /// The records from 2026-03-01 on, by the index and by a scan of every record: they must agree.
    static func checkIndex(_ store: Store, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let query = Query("Holiday").where("date", .atLeast, "2026-03-01").order("date")
        let (records, rowsRead) = try store.read { try $0.run(query) }
        let scanned = try store.records("Holiday").filter { ($0.fields["date"]?.stringValue ?? "") >= "2026-03-01" }
            .sorted { SortKey.areInOrder($0, $1, by: query.sortKeys) }
        #expect(records == scanned, sourceLocation: sourceLocation)
        #expect(rowsRead == records.count, "read by the index", sourceLocation: sourceLocation)
        #expect(try store.verifyViews() == [], sourceLocation: sourceLocation)
    }

    @Test("an import and a run of edits killed with SIGKILL leave the index as the log says")
    func killedWriters() throws {
        try withSandbox { sandbox in
            let schemas = try SchemaRegistry(directory: (sandbox.write("schemas/holiday.schema.json", Self.schema) as NSString).deletingLastPathComponent)
            try {
                let store = try Store(directory: sandbox.store.path, schemas: schemas, create: true)
                for month in 1...9 { try store.add("Holiday", id: "m\(month)", fields: ["name": "M", "date": .string("2026-0\(month)-01")]) }
            }()
            // An import of many records, killed while it writes its one transaction.
            let dataFile = sandbox.store.appendingPathComponent("data.mdb").path
            func allocated() -> Int {
                var status = stat()
                return stat(dataFile, &status) == 0 ? Int(status.st_blocks) * 512 : 0
            }
            let before = allocated()
            let input = try sandbox.write("big.jsonl", (0..<150_000).map { #"{"name":"H\#($0)","date":"2026-04-\#(10 + $0 % 10)"}"# }.joined(separator: "\n"))
            let importer = try sandbox.launch(["import", "Holiday", input])
            let deadline = Date().addingTimeInterval(60)
            while importer.isRunning, Date() < deadline, allocated() < before + (4 << 20) { usleep(10_000) }
            kill(importer.pid, SIGKILL)
            #expect(importer.wait().status != Exit.ok, "killed before it finished")
            try Self.checkIndex(try Store(directory: sandbox.store.path, schemas: schemas))

            // Edits that move records in and out of the range, one process each, the last killed wherever it was.
            let script = """
                i=0
                while true; do
                  "$EVSYNC_BINARY_PATH" edit Holiday m$((i % 9 + 1)) date=2026-0$(( (i * 5) % 9 + 1 ))-1$(( (i / 9) % 2 )) >/dev/null || exit 1
                  i=$((i + 1))
                done
                """
            let editor = try sandbox.launchShell(script)
            let store = try Store(directory: sandbox.store.path, schemas: schemas)
            let start = try store.lastSeq()
            while editor.isRunning, try store.lastSeq() < start + 20, Date() < deadline.addingTimeInterval(60) { usleep(10_000) }
            // The shell's running `evsync edit`, if it is in one, then the shell.
            let children = (try? String(contentsOfFile: "/proc/\(editor.pid)/task/\(editor.pid)/children", encoding: .utf8)) ?? ""
            for child in children.split(separator: " ").compactMap({ Int32($0) }) { kill(child, SIGKILL) }
            kill(editor.pid, SIGKILL)
            _ = editor.wait()
            #expect(try store.lastSeq() >= start + 20, "the editor wrote: \(editor.wait().stderr)")
            try Self.checkIndex(store)
            #expect(try store.records("Holiday").count == 9, "none of the import's records")
        }
    }
}
