// LibraryBench: the issue-24 numbers, evsync's library API against SQLite's C API doing the same work.
//
//   LibraryBench evsync|sqlite CASE DIR [--n N] [--seconds S] [--durability full|normal]
//
// CASE: single, batch, threads, sequential (evsync only), concurrent, readid, read100, observe, crossprocess, idle,
// query, count, observequery and addindex (evsync only; issue 51) (and `writer`, the other process
// of crossprocess). Prints one JSON object on stdout: what was measured, in seconds. Run by Tools/bench (case 13).
import CSQLite
import EventStore
import Foundation
import Synchronization

struct Holiday: EntityRecord {
    static let entityName = "Holiday"
    var id = Store.newRecordID()
    var name: String
    var date: Date
    var details: String?
}

/// CLOCK_MONOTONIC, which every process on the machine shares: the cross-process case compares them.
func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// Bytes this process has handed to write(2) and its kin so far (`wchar` in /proc/self/io).
func bytesWritten() -> Int {
    let text = (try? String(contentsOfFile: "/proc/self/io", encoding: .utf8)) ?? ""
    return text.split(separator: "\n").first { $0.hasPrefix("wchar:") }.flatMap { Int($0.dropFirst(6).trimmingCharacters(in: .whitespaces)) } ?? 0
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("LibraryBench: \(message)\n".utf8))
    exit(1)
}

func emit(_ fields: [String: Any]) {
    guard let data = try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys]) else { fail("cannot write the result") }
    print(String(decoding: data, as: UTF8.self))
}

/// `values` sorted: median and 99th percentile (nearest rank).
func percentiles(_ values: [Double]) -> (median: Double, p99: Double, max: Double) {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return (.nan, .nan, .nan) }
    let p99 = sorted[min(sorted.count - 1, Int((0.99 * Double(sorted.count)).rounded(.up)) - 1)]
    return (sorted[sorted.count / 2], p99, sorted[sorted.count - 1])
}

/// Runs `body` on the cooperative pool and blocks this (main) thread until it ends.
func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let result = Mutex<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        let outcome: Result<T, any Error>
        do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
        result.withLock { $0 = outcome }
        done.signal()
    }
    done.wait()
    return try result.withLock { $0 }!.get()
}

let dayFormat: Calendar = {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = .current
    return calendar
}()

func holiday(_ i: Int, id: String = Store.newRecordID()) -> Holiday {
    Holiday(id: id, name: "Holiday \(i)", date: dayFormat.date(from: DateComponents(year: 2027, month: 1 + i % 12, day: 1 + i % 28))!,
            details: "A day off in the bench's own country, number \(i)")
}

// MARK: arguments

/// The value of `--name VALUE` in `words`, taken out of them.
func option(_ name: String, in words: inout [String]) -> String? {
    guard let index = words.firstIndex(of: name), index + 1 < words.count else { return nil }
    defer { words.removeSubrange(index...index + 1) }
    return words[index + 1]
}
let (arguments, count, seconds, durability) = {
    var words = Array(CommandLine.arguments.dropFirst())
    let count = option("--n", in: &words).flatMap(Int.init)
    let seconds = option("--seconds", in: &words).flatMap(Double.init) ?? 60
    let durability = option("--durability", in: &words) ?? "full"
    return (words, count, seconds, durability)
}()
guard arguments.count == 3, ["evsync", "sqlite"].contains(arguments[0]) else {
    fail("usage: LibraryBench evsync|sqlite CASE DIR [--n N] [--seconds S] [--durability full|normal]")
}
let (side, benchCase, directory) = (arguments[0], arguments[1], arguments[2])

// MARK: SQLite: WAL, synchronous=FULL (or NORMAL), a table per entity and a history table filled by triggers

final class SQLite: @unchecked Sendable {
    let db: OpaquePointer
    private var statements: [String: OpaquePointer] = [:]
    static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    init(path: String, synchronous: String) {
        var db: OpaquePointer?
        guard sqlite3_open(path, &db) == SQLITE_OK, let db else { fail("sqlite3_open \(path)") }
        self.db = db
        exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=\(synchronous);")
        exec("""
        CREATE TABLE IF NOT EXISTS holiday (id TEXT PRIMARY KEY NOT NULL, name TEXT NOT NULL, date TEXT NOT NULL, details TEXT);
        CREATE TABLE IF NOT EXISTS birthday (id TEXT PRIMARY KEY NOT NULL, name TEXT NOT NULL, date TEXT NOT NULL, giftIdeas TEXT);
        CREATE TABLE IF NOT EXISTS history (seq INTEGER PRIMARY KEY, at TEXT NOT NULL, entity TEXT NOT NULL, id TEXT NOT NULL,
          kind TEXT NOT NULL, by TEXT NOT NULL, data TEXT);
        CREATE INDEX IF NOT EXISTS history_id ON history(id);
        CREATE TRIGGER IF NOT EXISTS holiday_created AFTER INSERT ON holiday BEGIN
          INSERT INTO history (at, entity, id, kind, by, data) VALUES (strftime('%Y-%m-%dT%H:%M:%fZ'), 'Holiday', NEW.id, 'created',
            'bench@host', json_object('name', NEW.name, 'date', NEW.date, 'details', NEW.details));
        END;
        CREATE TRIGGER IF NOT EXISTS holiday_updated AFTER UPDATE ON holiday BEGIN
          INSERT INTO history (at, entity, id, kind, by, data) VALUES (strftime('%Y-%m-%dT%H:%M:%fZ'), 'Holiday', NEW.id, 'updated',
            'bench@host', json_object('name', NEW.name, 'date', NEW.date, 'details', NEW.details));
        END;
        CREATE TRIGGER IF NOT EXISTS holiday_deleted AFTER DELETE ON holiday BEGIN
          INSERT INTO history (at, entity, id, kind, by, data) VALUES (strftime('%Y-%m-%dT%H:%M:%fZ'), 'Holiday', OLD.id, 'deleted',
            'bench@host', NULL);
        END;
        """)
    }

    func exec(_ sql: String) {
        var message: UnsafeMutablePointer<CChar>?
        guard sqlite3_exec(db, sql, nil, nil, &message) == SQLITE_OK else {
            fail("sqlite3_exec: \(message.map { String(cString: $0) } ?? "?")")
        }
    }

    func statement(_ sql: String) -> OpaquePointer {
        if let statement = statements[sql] { return statement }
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else { fail("prepare \(sql)") }
        statements[sql] = statement
        return statement
    }

    /// An app's typed write: the record's fields bound as the columns.
    func insert(_ record: Holiday) {
        let insert = statement("INSERT INTO holiday (id, name, date, details) VALUES (?, ?, ?, ?)")
        sqlite3_bind_text(insert, 1, record.id, -1, Self.transient)
        sqlite3_bind_text(insert, 2, record.name, -1, Self.transient)
        let parts = dayFormat.dateComponents([.year, .month, .day], from: record.date)
        sqlite3_bind_text(insert, 3, String(format: "%04d-%02d-%02d", parts.year!, parts.month!, parts.day!), -1, Self.transient)
        if let details = record.details { sqlite3_bind_text(insert, 4, details, -1, Self.transient) } else { sqlite3_bind_null(insert, 4) }
        guard sqlite3_step(insert) == SQLITE_DONE else { fail("insert: \(String(cString: sqlite3_errmsg(db)))") }
        sqlite3_reset(insert)
    }

    /// `SELECT … WHERE date BETWEEN ? AND ? ORDER BY date LIMIT ?`, made into the records.
    func holidays(from first: String, to last: String, limit: Int) -> [Holiday] {
        let select = statement("SELECT id, name, date, details FROM holiday WHERE date BETWEEN ? AND ? ORDER BY date LIMIT ?")
        defer { sqlite3_reset(select) }
        sqlite3_bind_text(select, 1, first, -1, Self.transient)
        sqlite3_bind_text(select, 2, last, -1, Self.transient)
        sqlite3_bind_int64(select, 3, Int64(limit))
        var found: [Holiday] = []
        while sqlite3_step(select) == SQLITE_ROW {
            if let record = row(select) { found.append(record) }
        }
        return found
    }

    func count(from first: String, to last: String) -> Int {
        let select = statement("SELECT COUNT(*) FROM holiday WHERE date BETWEEN ? AND ?")
        defer { sqlite3_reset(select) }
        sqlite3_bind_text(select, 1, first, -1, Self.transient)
        sqlite3_bind_text(select, 2, last, -1, Self.transient)
        guard sqlite3_step(select) == SQLITE_ROW else { return 0 }
        return Int(sqlite3_column_int64(select, 0))
    }

    /// A row of `SELECT id, name, date, details` as the record (the date parsed from its text, as evsync does).
    func row(_ select: OpaquePointer) -> Holiday? {
        func text(_ column: Int32) -> String? { sqlite3_column_text(select, column).map { String(cString: $0) } }
        let day = (text(2) ?? "").split(separator: "-").compactMap { Int($0) }
        guard day.count == 3, let date = dayFormat.date(from: DateComponents(year: day[0], month: day[1], day: day[2])) else { return nil }
        return Holiday(id: text(0) ?? "", name: text(1) ?? "", date: date, details: text(3))
    }

    /// An app's typed read: the columns made into the record (the date parsed from its text, as evsync does).
    func holiday(id: String) -> Holiday? {
        let select = statement("SELECT id, name, date, details FROM holiday WHERE id = ?")
        defer { sqlite3_reset(select) }
        sqlite3_bind_text(select, 1, id, -1, Self.transient)
        guard sqlite3_step(select) == SQLITE_ROW else { return nil }
        return row(select)
    }
}

// MARK: the cases

/// The schemas of the query cases: the built-in Holiday with its date indexed (`x-evsync-index`), as an app
/// that queries by date declares it; the other cases use the built-ins unchanged.
func indexedSchemas() -> SchemaRegistry {
    let folder = directory + ".schemas"
    let text = #"{"title": "Holiday", "x-evsync-collection": "holidays", "type": "object", "properties": {"name": {"type": "string"}, "#
        + #""date": {"type": "string", "format": "date", "x-evsync-index": true}, "details": {"type": "string"}}, "required": ["name", "date"]}"#
    do {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try text.write(toFile: folder + "/holiday.schema.json", atomically: true, encoding: .utf8)
        return try SchemaRegistry(directory: folder)
    } catch { fail("schemas: \(error)") }
}

func openStore(schemas: SchemaRegistry = SchemaRegistry()) -> Store {
    var configuration = Store.Configuration(schemas: schemas, create: true)
    configuration.author = "bench@host"
    configuration.durability = durability == "normal" ? .normal : .full
    do { return try Store(directory: directory, configuration: configuration) } catch { fail("open \(directory): \(error)") }
}

func openSQLite() -> SQLite {
    try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    return SQLite(path: directory + "/bench.sqlite", synchronous: durability == "normal" ? "NORMAL" : "FULL")
}

/// `n` records in the store or the database (in one transaction), their ids.
func populate(_ n: Int) -> [String] {
    let records = (0..<n).map { holiday($0) }
    if side == "evsync" {
        let store = openStore()
        do { try store.write { tx in for record in records { _ = try tx.add(record) } } } catch { fail("populate: \(error)") }
    } else {
        let sqlite = openSQLite()
        sqlite.exec("BEGIN")
        records.forEach(sqlite.insert)
        sqlite.exec("COMMIT")
    }
    return records.map(\.id)
}

/// Observer latencies: `commit(i)` commits record i and returns when it did; `seen` waits until the
/// observer saw it and returns when. Each is the observer's time after the commit returned (0 if before).
func latencies(_ m: Int, commit: (Int) -> Double, seen: (Int) -> Double) -> [Double] {
    (0..<m).map { i in
        let committed = commit(i)
        return max(0, seen(i) - committed)
    }
}

/// Times at which the observer saw each record id, and a semaphore per wait.
final class Sightings: Sendable {
    let times = Mutex<[String: Double]>([:])
    let signal = DispatchSemaphore(value: 0)
    func saw(_ ids: [String]) {
        let at = now()
        times.withLock { for id in ids where $0[id] == nil { $0[id] = at } }
        signal.signal()
    }
    /// Blocks until `id` was seen; its time.
    func wait(for id: String) -> Double {
        while true {
            if let at = times.withLock({ $0[id] }) { return at }
            guard signal.wait(timeout: .now() + 10) == .success else { fail("the observer did not see \(id) in 10 s") }
        }
    }
}

func evsyncObserver(_ store: Store, into sightings: Sightings) {
    Task {
        do {
            for try await observed in store.observe(Holiday.all) {
                sightings.saw(observed.changes.inserted.map(\.id) + ["(yield)"])
            }
        } catch { fail("observe: \(error)") }
    }
    _ = sightings.wait(for: "(yield)")   // the first yield (the current records): the observer is in place
}

switch (side, benchCase) {
case ("evsync", "single"):
    let n = count ?? 10_000, store = openStore(), records = (0..<n).map { holiday($0) }
    let (t0, written) = (now(), bytesWritten())
    do { for record in records { _ = try store.add(record) } } catch { fail("add: \(error)") }
    emit(["seconds": now() - t0, "records": n, "bytes_per_write": (bytesWritten() - written) / n])
case ("sqlite", "single"):
    let n = count ?? 10_000, sqlite = openSQLite(), records = (0..<n).map { holiday($0) }
    let t0 = now()
    for record in records { sqlite.exec("BEGIN"); sqlite.insert(record); sqlite.exec("COMMIT") }
    emit(["seconds": now() - t0, "records": n])

case ("evsync", "batch"):
    let n = count ?? 10_000, store = openStore(), records = (0..<n).map { holiday($0) }
    let t0 = now()
    do { try store.write { tx in for record in records { _ = try tx.add(record) } } } catch { fail("write: \(error)") }
    emit(["seconds": now() - t0, "records": n])
case ("sqlite", "batch"):
    let n = count ?? 10_000, sqlite = openSQLite(), records = (0..<n).map { holiday($0) }
    let t0 = now()
    sqlite.exec("BEGIN"); records.forEach(sqlite.insert); sqlite.exec("COMMIT")
    emit(["seconds": now() - t0, "records": n])

case ("evsync", "threads"), ("evsync", "sequential"):
    // n single adds, each synchronous: from 16 threads through two Store values on one directory (group commit),
    // or one after another on one thread. Threads, not tasks: a synchronous call holds its thread.
    let n = count ?? 1_600, threads = benchCase == "threads" ? 16 : 1
    let stores = [openStore(), openStore()]
    let records = (0..<n).map { holiday($0) }
    let failure = Mutex<String?>(nil)
    let finished = DispatchGroup()
    let t0 = now()
    for thread in 0..<threads {
        finished.enter()
        // Threads of their own: Dispatch's concurrentPerform would run no more at once than there are cores.
        Thread {
            for i in stride(from: thread, to: n, by: threads) {
                do { _ = try stores[i % 2].add(records[i]) } catch { failure.withLock { $0 = "add: \(error)" } }
            }
            finished.leave()
        }.start()
    }
    finished.wait()
    let elapsed = now() - t0
    if let message = failure.withLock({ $0 }) { fail(message) }
    emit(["seconds": elapsed, "records": n, "threads": threads])

case (_, "concurrent"):
    // 16 tasks add n records between them, each add its own transaction; a 10 ms heartbeat on the same pool
    // notes its worst lateness. SQLite: one connection on a serial queue (as GRDB's DatabaseQueue), each add
    // its own transaction, awaited through a continuation.
    let n = count ?? 1_000, tasks = 16
    let store = side == "evsync" ? openStore() : nil
    let sqlite = side == "sqlite" ? openSQLite() : nil
    let queue = DispatchQueue(label: "sqlite writer")
    let result = try blocking { () async throws -> (Double, Double) in
        let stop = Mutex(false)
        let heartbeat = Task { () -> Double in
            var worst = 0.0
            while !stop.withLock({ $0 }) {
                let t = now()
                try? await Task.sleep(for: .milliseconds(10))
                worst = max(worst, now() - t - 0.010)
            }
            return worst
        }
        let t0 = now()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    for i in stride(from: task, to: n, by: tasks) {
                        let record = holiday(i)
                        if let store {
                            _ = try await store.write { tx in try tx.add(record) }
                        } else if let sqlite {
                            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                                queue.async { sqlite.exec("BEGIN"); sqlite.insert(record); sqlite.exec("COMMIT"); done.resume() }
                            }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let elapsed = now() - t0
        stop.withLock { $0 = true }
        return (elapsed, await heartbeat.value)
    }
    emit(["seconds": result.0, "records": n, "tasks": tasks, "heartbeat_worst_wait": result.1])

case (_, "readid"):
    // n records; `reads` one-call reads by id, at random, each its own read transaction.
    let n = count ?? 10_000, reads = 10_000
    let ids = populate(n)
    let picks = (0..<reads).map { _ in ids.randomElement()! }
    let t0: Double
    if side == "evsync" {
        let store = openStore()
        t0 = now()
        do { for id in picks { guard try store.record(Holiday.self, id: id) != nil else { fail("no \(id)") } } } catch { fail("record: \(error)") }
    } else {
        let sqlite = openSQLite()
        t0 = now()
        for id in picks { guard sqlite.holiday(id: id) != nil else { fail("no \(id)") } }
    }
    emit(["seconds": now() - t0, "reads": reads, "records": n, "per_read": (now() - t0) / Double(reads)])

case (_, "read100"):
    // n records; `reads` reads of 100 random records each from one snapshot (store.read; BEGIN … COMMIT).
    let n = count ?? 10_000, reads = 1_000
    let ids = populate(n)
    let picks = (0..<reads).map { _ in (0..<100).map { _ in ids.randomElement()! } }
    let t0: Double
    if side == "evsync" {
        let store = openStore()
        t0 = now()
        do {
            for batch in picks {
                let found = try store.read { db in try batch.compactMap { try db.record(Holiday.self, id: $0) } }
                guard found.count == 100 else { fail("a read found \(found.count) of 100") }
            }
        } catch { fail("read: \(error)") }
    } else {
        let sqlite = openSQLite()
        t0 = now()
        for batch in picks {
            sqlite.exec("BEGIN")
            let found = batch.compactMap { sqlite.holiday(id: $0) }
            sqlite.exec("COMMIT")
            guard found.count == 100 else { fail("a read found \(found.count) of 100") }
        }
    }
    emit(["seconds": now() - t0, "reads": reads, "records_each": 100, "per_read": (now() - t0) / Double(reads)])

case ("evsync", "observe"):
    let m = count ?? 200, store = openStore(), sightings = Sightings()
    evsyncObserver(store, into: sightings)
    let records = (0..<m).map { holiday($0) }
    let times = latencies(m, commit: { i in
        do { _ = try store.add(records[i]) } catch { fail("add: \(error)") }
        return now()
    }, seen: { sightings.wait(for: records[$0].id) })
    let (median, p99, worst) = percentiles(times)
    emit(["median": median, "p99": p99, "max": worst, "commits": m])
case ("sqlite", "observe"):
    // sqlite3_commit_hook → callback: the hook runs inside COMMIT (before it is durable), so it hands the
    // transaction's ids to an observer task through an AsyncStream, as an app must not block in the hook.
    let m = count ?? 200, sqlite = openSQLite(), sightings = Sightings()
    let (stream, continuation) = AsyncStream<[String]>.makeStream()
    let pending = Mutex<[String]>([])
    final class Hook { let fire: () -> Void; init(_ fire: @escaping () -> Void) { self.fire = fire } }
    let hook = Hook { continuation.yield(pending.withLock { ids in defer { ids = [] }; return ids }) }
    sqlite3_commit_hook(sqlite.db, { context in
        Unmanaged<Hook>.fromOpaque(context!).takeUnretainedValue().fire()
        return 0
    }, Unmanaged.passUnretained(hook).toOpaque())
    Task.detached { for await ids in stream { sightings.saw(ids) } }
    let records = (0..<m).map { holiday($0) }
    let times = latencies(m, commit: { i in
        sqlite.exec("BEGIN"); sqlite.insert(records[i]); pending.withLock { $0.append(records[i].id) }; sqlite.exec("COMMIT")
        return now()
    }, seen: { sightings.wait(for: records[$0].id) })
    withExtendedLifetime(hook) {}
    let (median, p99, worst) = percentiles(times)
    emit(["median": median, "p99": p99, "max": worst, "commits": m])

case (_, "query"), (_, "count"):
    // n records with the date indexed (SQLite: CREATE INDEX on date); `reads` queries of a month each:
    // the first 100 by date decoded into the struct, or the count of the month's records.
    let n = count ?? 100_000, reads = benchCase == "query" ? 1_000 : 200
    let months = (0..<reads).map { _ in 1 + Int.random(in: 0..<12) }
    func range(_ month: Int) -> (String, String) { (String(format: "2027-%02d-01", month), String(format: "2027-%02d-31", month)) }
    let records = (0..<n).map { holiday($0) }
    var found = 0
    let t0: Double
    if side == "evsync" {
        let store = openStore(schemas: indexedSchemas())
        do { try store.write { tx in for record in records { _ = try tx.add(record) } } } catch { fail("populate: \(error)") }
        t0 = now()
        do {
            for month in months {
                let (first, last) = range(month)
                let query = Holiday.all.where("date", .atLeast, first).where("date", .atMost, last)
                if benchCase == "query" {
                    found += try store.records(query.order("date").limit(100)).count
                } else {
                    found += try store.count(query)
                }
            }
        } catch { fail("query: \(error)") }
    } else {
        let sqlite = openSQLite()
        sqlite.exec("BEGIN"); records.forEach(sqlite.insert); sqlite.exec("COMMIT")
        sqlite.exec("CREATE INDEX holiday_date ON holiday(date)")
        t0 = now()
        for month in months {
            let (first, last) = range(month)
            if benchCase == "query" {
                found += sqlite.holidays(from: first, to: last, limit: 100).count
            } else {
                found += sqlite.count(from: first, to: last)
            }
        }
    }
    emit(["seconds": now() - t0, "queries": reads, "records": n, "found": found, "per_query": (now() - t0) / Double(reads)])

case ("evsync", "observequery"):
    // A query of 10 records observed while `m` unrelated records (other months) are added one by one: how often
    // it wakes; then `m` adds that each change its result: its updates' latency, beside the query's own time.
    let n = count ?? 10_000, m = 1_000
    let store = openStore(schemas: indexedSchemas())
    do { try store.write { tx in for i in 0..<n { _ = try tx.add(holiday(i)) } } } catch { fail("populate: \(error)") }
    let query = Holiday.all.where("date", .equal, "2027-01-01").order("name").limit(10)
    let wakes = Mutex<[Double]>([])
    let firstSeen = DispatchSemaphore(value: 0)
    Task.detached {   // not the main actor's: this thread waits below
        do {
            var first = true
            for try await _ in store.observe(query, every: .milliseconds(20)) {
                if first { first = false; firstSeen.signal(); continue }
                wakes.withLock { $0.append(now()) }
            }
        } catch { fail("observe: \(error)") }
    }
    firstSeen.wait()
    // Unrelated: December's holidays.
    do { for i in 0..<m { _ = try store.add(Holiday(name: "Unrelated \(i)", date: dayFormat.date(from: DateComponents(year: 2027, month: 12, day: 1 + i % 28))!)) } } catch { fail("add: \(error)") }
    Thread.sleep(forTimeInterval: 1)   // every wake those commits could cause has come
    let unrelatedWakes = wakes.withLock { $0.count }
    // Related: each add enters the result (a name sorting first on the query's day). An update's cost is what it
    // adds once the add has returned (its commit durable): the wake and the observer's own work.
    var latencies: [Double] = [], afterCommit: [Double] = []
    for i in 0..<50 {
        let before = wakes.withLock { $0.count }
        let t = now()
        do { _ = try store.add(Holiday(name: "A\(String(format: "%04d", 9_999 - i))", date: dayFormat.date(from: DateComponents(year: 2027, month: 1, day: 1))!)) } catch { fail("add: \(error)") }
        let committed = now()
        while wakes.withLock({ $0.count }) == before { Thread.sleep(forTimeInterval: 0.0005) }
        let seen = wakes.withLock { $0[$0.count - 1] }
        latencies.append(seen - t)
        afterCommit.append(max(0, seen - committed))
    }
    let q0 = now()
    do { for _ in 0..<200 { _ = try store.records(query) } } catch { fail("query: \(error)") }
    let queryTime = (now() - q0) / 200
    emit(["unrelated_writes": m, "wakes_for_unrelated": unrelatedWakes, "update_median": percentiles(latencies).median,
          "update_after_commit_median": percentiles(afterCommit).median, "query_seconds": queryTime])

case ("evsync", "addindex"):
    // A store of n records without an index; then opening it with the date indexed (the index built on open),
    // against rebuild-views of the same store.
    let n = count ?? 100_000
    do {
        let plain = openStore()
        try plain.write { tx in for i in 0..<n { _ = try tx.add(holiday(i)) } }
    } catch { fail("populate: \(error)") }
    let t0 = now()
    let indexed = openStore(schemas: indexedSchemas())
    let adding = now() - t0
    let t1 = now()
    do { _ = try indexed.rebuildViews() } catch { fail("rebuild: \(error)") }
    emit(["seconds": adding, "rebuild_seconds": now() - t1, "records": n])

case ("evsync", "writer"):
    // The other process of `crossprocess`: for each line on stdin, adds one record with that id and
    // prints the time its commit returned.
    let store = openStore()
    while let line = readLine() {
        do { _ = try store.add(holiday(0, id: line)) } catch { fail("add: \(error)") }
        print(now())
        fflush(nil)
    }
case ("evsync", "crossprocess"):
    let m = count ?? 100, store = openStore(), sightings = Sightings()
    evsyncObserver(store, into: sightings)
    let writer = Process()
    writer.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    writer.arguments = ["evsync", "writer", directory, "--durability", durability]
    let (toWriter, fromWriter) = (Pipe(), Pipe())
    (writer.standardInput, writer.standardOutput) = (toWriter, fromWriter)
    do { try writer.run() } catch { fail("start the writer: \(error)") }
    var lines = Data()
    func readTime() -> Double {
        while true {
            if let newline = lines.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: lines[..<newline], as: UTF8.self)
                lines.removeSubrange(...newline)
                guard let time = Double(line) else { fail("the writer said '\(line)'") }
                return time
            }
            let more = fromWriter.fileHandleForReading.availableData
            guard !more.isEmpty else { fail("the writer ended") }
            lines.append(more)
        }
    }
    let ids = (0..<m).map { _ in Store.newRecordID() }
    let times = latencies(m, commit: { i in
        toWriter.fileHandleForWriting.write(Data((ids[i] + "\n").utf8))
        return readTime()
    }, seen: { sightings.wait(for: ids[$0]) })
    try? toWriter.fileHandleForWriting.close()
    writer.waitUntilExit()
    let (median, p99, worst) = percentiles(times)
    emit(["median": median, "p99": p99, "max": worst, "commits": m])

case ("evsync", "idle"):
    // An app observing its table, left alone: the CPU this process uses meanwhile.
    _ = populate(count ?? 1_000)
    let store = openStore(), sightings = Sightings()
    evsyncObserver(store, into: sightings)
    let cpu = cpuSeconds(), t0 = now()
    Thread.sleep(forTimeInterval: seconds)
    emit(["cpu": cpuSeconds() - cpu, "seconds": now() - t0])

default:
    fail("no case \(benchCase) for \(side)")
}
