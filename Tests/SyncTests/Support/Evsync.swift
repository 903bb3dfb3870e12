@testable import EventStore
@testable import EventSync
@testable import KintoAdapter
import TestSupport
import Foundation

/// The built `evsync` binary, run on one store directory.
struct Evsync: Sendable {
    /// The test process's environment without any EVSYNC_ setting, so nothing leaks in from the caller's shell.
    static let baseEnvironment: [String: String] = {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("EVSYNC_") }
        environment["EVSYNC_AUTHOR"] = "tester@synctests"
        return environment
    }()

    let store: String
    /// The schema directory (`--schemas`) every command is given, if any.
    let schemas: String?

    init(store: String, schemas: String? = nil) {
        self.store = store
        self.schemas = schemas
    }

    private var global: [String] { ["--store", store] + (schemas.map { ["--schemas", $0] } ?? []) }

    /// Runs `evsync --store STORE [--schemas DIR] <arguments>`.
    func run(_ arguments: [String], environment: [String: String] = [:], stdin: String? = nil) async throws -> ProcessOutput {
        try await ProcessRunner.run(BuiltProduct.evsync.path, global + arguments,
                                    environment: Self.baseEnvironment.merging(environment) { $1 }, stdin: stdin)
    }

    /// Starts `evsync --store STORE <arguments>` without waiting for it.
    func start(_ arguments: [String], environment: [String: String] = [:]) throws -> RunningProcess {
        try RunningProcess(executable: BuiltProduct.evsync.path, arguments: global + arguments,
                           environment: Self.baseEnvironment.merging(environment) { $1 })
    }

    /// Runs a command that must succeed; returns its standard output.
    @discardableResult
    func ok(_ arguments: [String], environment: [String: String] = [:], stdin: String? = nil) async throws -> String {
        let output = try await run(arguments, environment: environment, stdin: stdin)
        guard output.status == 0, !output.killedBySignal else {
            throw ProcessFailure(command: "evsync " + arguments.joined(separator: " "), output: output)
        }
        return output.stdout
    }

    func json(_ arguments: [String]) async throws -> JSONValue {
        try JSONParser.parse(try await ok(arguments))
    }

    // MARK: Reading the store through the CLI

    /// `status --json`.
    func status() async throws -> StatusJSON {
        let object = try await json(["status", "--json"]).objectValue ?? [:]
        return StatusJSON(object)
    }

    /// `list <Entity> --json`, keyed by id (the fields without `id`), plus the raw id list to spot duplicates.
    func list(_ entity: String = "Holiday") async throws -> (records: [String: JSONObject], ids: [String]) {
        var records: [String: JSONObject] = [:]
        var ids: [String] = []
        for item in try await json(["list", entity, "--json"]).arrayValue ?? [] {
            var fields = item.objectValue ?? [:]
            guard let id = fields.removeValue(forKey: "id")?.stringValue else { continue }
            ids.append(id)
            records[id] = fields
        }
        return (records, ids)
    }

    func records(_ entity: String = "Holiday") async throws -> [String: JSONObject] {
        try await list(entity).records
    }

    /// `show <Entity> <id> --json` without `id`; nil when the record does not exist (exit 66).
    func show(_ entity: String, _ id: String) async throws -> JSONObject? {
        let output = try await run(["show", entity, id, "--json"])
        if output.status == 66 { return nil }
        guard output.status == 0 else { throw ProcessFailure(command: "evsync show \(entity) \(id)", output: output) }
        var fields = try JSONParser.parse(output.stdout).objectValue ?? [:]
        fields["id"] = nil
        return fields
    }

    /// `history <id> --json`.
    func history(_ id: String) async throws -> [JSONObject] {
        let output = try await run(["history", id, "--json"])
        // An id without events exits 66, as the text form does, still printing `[]`.
        guard output.status == 0 || (output.status == 66 && output.stdout == "[]\n"), !output.killedBySignal else {
            throw ProcessFailure(command: "evsync history \(id) --json", output: output)
        }
        return (try JSONParser.parse(output.stdout).arrayValue ?? []).compactMap(\.objectValue)
    }

    /// `log tail -n N --json`, one object per line.
    func tail(_ count: Int) async throws -> [JSONObject] {
        try await ok(["log", "tail", "-n", String(count), "--json"]).split(separator: "\n").map {
            try JSONParser.parse(String($0)).objectValue ?? [:]
        }
    }

    /// `add Holiday --id ID field=value…`.
    func add(_ entity: String = "Holiday", id: String, _ assignments: [String]) async throws {
        try await ok(["add", entity, "--id", id] + assignments)
    }

    func edit(_ id: String, _ assignments: [String], unset: [String] = [], entity: String = "Holiday") async throws {
        try await ok(["edit", entity, id] + assignments + unset.flatMap { ["--unset", $0] })
    }

    func delete(_ id: String, entity: String = "Holiday") async throws {
        try await ok(["delete", entity, id])
    }

    /// `rebuild-views --verify`.
    func verifyViews() async throws -> ProcessOutput {
        try await run(["rebuild-views", "--verify"])
    }
}

/// `evsync status --json`.
struct StatusJSON: Sendable {
    var events: Int
    var pendingRecords: Int
    var unacknowledgedEvents: Int
    var records: [String: Int]
    var skippedRecords: Int

    init(_ object: JSONObject) {
        skippedRecords = object["skippedRecords"]?.int64Value.map(Int.init) ?? -1
        events = object["events"]?.int64Value.map(Int.init) ?? -1
        pendingRecords = object["pendingRecords"]?.int64Value.map(Int.init) ?? -1
        unacknowledgedEvents = object["unacknowledgedEvents"]?.int64Value.map(Int.init) ?? -1
        records = (object["records"]?.objectValue ?? [:]).compactMapValues { $0.int64Value.map(Int.init) }
    }
}

/// `evsync sync --json`.
struct SyncJSON: Sendable, CustomStringConvertible {
    var result: String
    var pulled: Int
    var pushed: Int
    var deletedHere: Int
    var deletedThere: Int
    var conflicts: Int
    var rejected: [String]
    /// `held`: changes refused at an earlier sync, not sent again, as `Entity id`.
    var held: [String]
    var interrupted: Bool
    var error: String?
    /// `skipped`: each server record passed over, as entity, id (nil when none usable) and reason.
    var skipped: [(entity: String, id: String?, reason: String)]
    var reread: [String]
    /// `goneFromServer`: records kept here that the server lacks, as `Entity id`.
    var goneFromServer: [String]
    /// `left`: records that left this store for want of access, as `Entity id`.
    var left: [String]

    init(_ text: String) throws {
        let object = try JSONParser.parse(text).objectValue ?? [:]
        func count(_ key: String) -> Int { object[key]?.int64Value.map(Int.init) ?? -1 }
        result = object["result"]?.stringValue ?? "?"
        pulled = count("pulled")
        pushed = count("pushed")
        deletedHere = count("deletedHere")
        deletedThere = count("deletedThere")
        conflicts = count("conflicts")
        rejected = object["rejected"]?.arrayValue?.compactMap(\.stringValue) ?? []
        held = (object["held"]?.arrayValue ?? []).compactMap { item in
            item.objectValue.flatMap { item in item["entity"]?.stringValue.map { "\($0) \(item["id"]?.stringValue ?? "?")" } }
        }
        interrupted = object["interrupted"]?.boolValue ?? false
        error = object["error"]?.stringValue
        skipped = (object["skipped"]?.arrayValue ?? []).map { item in
            let item = item.objectValue ?? [:]
            return (item["entity"]?.stringValue ?? "?", item["id"]?.stringValue, item["reason"]?.stringValue ?? "?")
        }
        reread = object["reread"]?.arrayValue?.compactMap(\.stringValue) ?? []
        goneFromServer = (object["goneFromServer"]?.arrayValue ?? []).compactMap { item in
            item.objectValue.flatMap { item in item["entity"]?.stringValue.map { "\($0) \(item["id"]?.stringValue ?? "?")" } }
        }
        left = (object["left"]?.arrayValue ?? []).compactMap { item in
            item.objectValue.flatMap { item in item["entity"]?.stringValue.map { "\($0) \(item["id"]?.stringValue ?? "?")" } }
        }
    }

    var description: String {
        "\(result): pulled \(pulled), pushed \(pushed), deletedHere \(deletedHere), deletedThere \(deletedThere), conflicts \(conflicts), rejected \(rejected)\(error.map { ", error \($0)" } ?? "")"
    }
}
