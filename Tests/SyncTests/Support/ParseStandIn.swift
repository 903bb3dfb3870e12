@testable import EventStore
import TestSupport
import Foundation
import Testing

/// `Tools/parse-standin` (a stand-in for Parse Server's REST API, not Parse
/// Server) on a free port of 127.0.0.1, started for one test and stopped with
/// it; and "the web app": another client of it, speaking Parse's REST API
/// through the `curl` program, written independently of `ParseRemote`.
final class ParseStandIn: Sendable {
    static let applicationID = "evsync-app"
    static let restAPIKey = "evsync-rest-key"
    /// The server's mount, e.g. `http://127.0.0.1:PORT/parse`.
    let url: String
    private let process: RunningProcess
    private let directory: TemporaryDirectory

    /// Members of an object that are Parse's, or the id mapping's (`nid`), never a record's fields.
    static let parseMembers: Set<String> = ["objectId", "createdAt", "updatedAt", "ACL", "nid"]
    /// The environment `evsync sync --protocol parse` reads its keys from.
    static let environment = ["EVSYNC_PARSE_APPLICATION_ID": applicationID, "EVSYNC_PARSE_REST_API_KEY": restAPIKey]

    init(_ options: [String] = []) async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        directory = try TemporaryDirectory("synctests-parse")
        let portFile = directory.file("url")
        let python = ProcessRunner.which("python3") ?? "/usr/bin/python3"
        process = try RunningProcess(executable: python,
                                     arguments: [root.appendingPathComponent("Tools/parse-standin").path, "--port", "0", "--port-file", portFile,
                                                 "--app-id", Self.applicationID, "--rest-key", Self.restAPIKey, "--exit-with-parent"] + options,
                                     environment: ProcessInfo.processInfo.environment)
        var written: String?
        for _ in 0..<200 where written == nil {
            try await Task.sleep(for: .milliseconds(50))
            written = try? String(contentsOfFile: portFile, encoding: .utf8)
        }
        url = try #require(written?.trimmingCharacters(in: .whitespacesAndNewlines), "the Parse stand-in did not start")
    }

    deinit { process.signal(SIGTERM) }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    // MARK: The web app

    /// One REST request; `path` is relative to the mount (`/classes/Holiday`). Returns the status and the JSON body.
    @discardableResult
    func request(_ method: String, _ path: String, body: JSONValue? = nil, query: [String: String] = [:],
                 headers: [String: String] = [:]) async throws -> (status: Int, body: JSONValue?) {
        let scratch = try TemporaryDirectory("synctests-parse-curl")
        var url = self.url + path
        if !query.isEmpty {
            var allowed = CharacterSet.alphanumerics
            allowed.insert(charactersIn: "-._~")
            url += "?" + query.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }
                .joined(separator: "&")
        }
        var lines = ["globoff", "silent", "show-error", "url = \"\(url)\"", "request = \"\(method)\"", "output = \"\(scratch.file("body"))\"",
                     "header = \"X-Parse-Application-Id: \(Self.applicationID)\"", "header = \"X-Parse-REST-API-Key: \(Self.restAPIKey)\"",
                     "write-out = \"%{http_code}\\n\""]
        for (name, value) in headers { lines.append("header = \"\(name): \(value)\"") }
        if let body {
            try Data(JSONWriter.string(body).utf8).write(to: URL(fileURLWithPath: scratch.file("request")))
            lines.append("header = \"Content-Type: application/json\"")
            lines.append("data-binary = \"@\(scratch.file("request"))\"")
        }
        let curl = ProcessRunner.which("curl") ?? "/usr/bin/curl"
        let output = try await ProcessRunner.run(curl, ["-K", "-"],
                                                 stdin: lines.joined(separator: "\n") + "\n")
        guard output.status == 0, let status = Int(output.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw Failure(description: "curl \(method) \(url) failed: \(output)")
        }
        let data = (try? Data(contentsOf: URL(fileURLWithPath: scratch.file("body")))) ?? Data()
        return (status, data.isEmpty ? nil : try? JSONParser.parse([UInt8](data)))
    }

    /// Creates an object as a web app would (the server makes its objectId); returns the objectId.
    @discardableResult
    func create(_ className: String, _ fields: JSONObject, headers: [String: String] = [:]) async throws -> String {
        let (status, body) = try await request("POST", "/classes/\(className)", body: .object(fields), headers: headers)
        guard status == 201, let id = body?.objectValue?["objectId"]?.stringValue else {
            throw Failure(description: "creating a \(className) answered \(status) \(body.map { JSONWriter.string($0) } ?? "")")
        }
        return id
    }

    func update(_ className: String, _ objectID: String, _ fields: JSONObject, headers: [String: String] = [:]) async throws {
        let (status, body) = try await request("PUT", "/classes/\(className)/\(objectID)", body: .object(fields), headers: headers)
        guard status == 200 else { throw Failure(description: "updating \(objectID) answered \(status) \(body.map { JSONWriter.string($0) } ?? "")") }
    }

    func delete(_ className: String, _ objectID: String) async throws {
        let (status, _) = try await request("DELETE", "/classes/\(className)/\(objectID)")
        guard status == 200 else { throw Failure(description: "deleting \(objectID) answered \(status)") }
    }

    /// Waits until at least this many writes or queries are held (`--hold-…-after`, `X-Standin-Hold`).
    func waitUntilHeld(writes: Int = 0, reads: Int = 0) async throws {
        for _ in 0..<1200 {
            let held = try await request("GET", "/__standin/held").body?.objectValue
            if (held?["writes"]?.int64Value ?? 0) >= writes, (held?["reads"]?.int64Value ?? 0) >= reads { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw Failure(description: "the stand-in never held \(writes) writes and \(reads) queries")
    }

    /// Lets every held write and query go on.
    func releaseHeld() async throws {
        try await request("POST", "/__standin/release")
    }

    /// Waits until every create the stand-in received (once it holds writes) is committed: as many objects
    /// of the class as writes started, however many were in flight.
    func waitUntilCreatesCommitted(_ className: String) async throws {
        for _ in 0..<1200 {
            let started = try await request("GET", "/__standin/held").body?.objectValue?["startedWrites"]?.int64Value ?? 0
            if try await objects(className).count >= started { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw Failure(description: "the stand-in's creates were never all committed")
    }

    /// Every object of a class, in objectId order; with `keys`, only those members (and Parse's own).
    func objects(_ className: String, keys: [String]? = nil) async throws -> [JSONObject] {
        var query = ["limit": "100000", "order": "objectId"]
        query["keys"] = keys?.joined(separator: ",")
        let (status, body) = try await request("GET", "/classes/\(className)", query: query)
        guard status == 200, let results = body?.objectValue?["results"]?.arrayValue else {
            throw Failure(description: "listing \(className) answered \(status)")
        }
        return results.compactMap(\.objectValue)
    }

    /// The objects of a class as evsync sees records: by id (`nid`, else objectId), without Parse's members,
    /// Date and Bytes values as strings (a `date` field as its day).
    func records(_ className: String) async throws -> [String: JSONObject] {
        var records: [String: JSONObject] = [:]
        for object in try await objects(className) {
            guard let id = object["nid"]?.stringValue ?? object["objectId"]?.stringValue else { continue }
            var fields: JSONObject = [:]
            for (key, value) in object where !Self.parseMembers.contains(key) {
                if let typed = value.objectValue, let iso = typed["iso"]?.stringValue {
                    fields[key] = .string(iso.hasSuffix("T00:00:00.000Z") ? String(iso.prefix(10)) : iso)
                } else if let typed = value.objectValue, let base64 = typed["base64"]?.stringValue {
                    fields[key] = .string(base64)
                } else {
                    fields[key] = value
                }
            }
            records[id] = fields
        }
        return records
    }

    /// The objectId of the object holding a record id (its `nid`, or the objectId itself).
    func objectID(of id: String, in className: String) async throws -> String? {
        try await object(of: id, in: className)?["objectId"]?.stringValue
    }

    /// The object holding a record id, with every member.
    func object(of id: String, in className: String) async throws -> JSONObject? {
        try await objects(className).first { $0["nid"]?.stringValue == id || $0["objectId"]?.stringValue == id }
    }
}

extension Evsync {
    /// `evsync sync --json` against a Parse stand-in, which must succeed.
    func syncParse(_ standIn: ParseStandIn, _ extra: [String] = [], environment: [String: String] = [:]) async throws -> SyncJSON {
        try SyncJSON(try await ok(["sync", "--remote", standIn.url, "--protocol", "parse", "--json"] + extra,
                                  environment: ParseStandIn.environment.merging(environment) { $1 }))
    }
}

/// The stand-in edited as a web app edits it, by class: a record written whole (the members it does not give
/// are deleted, a Parse update being partial), or deleted.
extension ParseStandIn: WebSide {
    func put(_ id: String, _ fields: JSONObject?, in className: String) async throws {
        let held = try await object(of: id, in: className)
        switch (fields, held?["objectId"]?.stringValue) {
        case (let fields?, let objectID?):
            var update = fields
            for name in (held ?? [:]).keys where fields[name] == nil && !Self.parseMembers.contains(name) { update[name] = ["__op": "Delete"] }
            try await self.update(className, objectID, update)
        case (let fields?, nil):
            try await create(className, fields.merging(["nid": .string(id)]) { $1 })
        case (nil, let objectID?):
            try await delete(className, objectID)
        case (nil, nil):
            break
        }
    }

    func live(in className: String) async throws -> [String: JSONObject] { try await records(className) }
}
