@testable import EventStore
@testable import EventSync
@testable import KintoAdapter
import TestSupport
import Foundation

/// "The web app": another client of the Kinto server, written independently
/// of evsync's remote code. It speaks Kinto's HTTP API through the `curl`
/// program; the credentials reach curl as a config file on its standard
/// input (`-K -`), never in its arguments.
struct KintoWebApp: Sendable {
    /// The server root, e.g. `http://127.0.0.1:8899/v1`.
    let server: String
    /// `user:password`.
    let credentials: String
    let bucket: String

    var bucketURL: String { "\(server)/buckets/\(bucket)" }

    struct Response: Sendable, CustomStringConvertible {
        var status: Int
        /// Header names lower-cased.
        var headers: [String: String]
        var body: JSONValue?

        var data: JSONObject? { body?.objectValue?["data"]?.objectValue }
        var description: String { "HTTP \(status) \(body.map { JSONWriter.string($0) } ?? "")" }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static let curl = ProcessRunner.which("curl") ?? "/usr/bin/curl"

    // MARK: Raw requests

    /// A curl config string: double quotes, with backslash and quote escaped.
    private static func quoted(_ text: String) -> String {
        var out = "\""
        for character in text {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default: out.append(character)
            }
        }
        return out + "\""
    }

    private func operation(method: String, url: String, body: JSONValue?, headers: [String: String], output: String,
                           headerFile: String?) -> [String] {
        var lines = ["globoff", "silent", "show-error", "user = \(Self.quoted(credentials))", "url = \(Self.quoted(url))",
                     "request = \(Self.quoted(method))", "output = \(Self.quoted(output))",
                     "header = \(Self.quoted("Accept: application/json"))"]
        if method == "HEAD" { lines.append("head") }
        if let headerFile { lines.append("dump-header = \(Self.quoted(headerFile))") }
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { lines.append("header = \(Self.quoted("\(name): \(value)"))") }
        if let body {
            lines.append("header = \(Self.quoted("Content-Type: application/json"))")
            lines.append("data-binary = \(Self.quoted(JSONWriter.string(body)))")
        }
        lines.append("write-out = \(Self.quoted("%{http_code}\\n"))")
        return lines
    }

    /// One request. `path` is relative to the server root (`/buckets/…`), or a full URL.
    func request(_ method: String, _ path: String, body: JSONValue? = nil, headers: [String: String] = [:]) async throws -> Response {
        let scratch = try TemporaryDirectory("synctests-curl")
        let url = path.hasPrefix("http") ? path : server + path
        let config = operation(method: method, url: url, body: body, headers: headers, output: scratch.file("body"),
                               headerFile: scratch.file("headers"))
        let output = try await ProcessRunner.run(Self.curl, ["-K", "-"],
                                                 stdin: config.joined(separator: "\n") + "\n")
        guard output.status == 0, let status = Int(output.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw Failure(description: "curl \(method) \(url) failed: \(output)")
        }
        var headers: [String: String] = [:]
        let rawHeaders = (try? String(contentsOfFile: scratch.file("headers"), encoding: .utf8)) ?? ""
        for line in rawHeaders.split(whereSeparator: \.isNewline) {
            if line.hasPrefix("HTTP/") { headers = [:]; continue }
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let bytes = FileManager.default.contents(atPath: scratch.file("body")) ?? Data()
        let json = bytes.isEmpty ? nil : try? JSONParser.parse(Array(bytes))
        return Response(status: status, headers: headers, body: json)
    }

    private func expect(_ response: Response, _ statuses: Set<Int>, _ what: String) throws {
        guard statuses.contains(response.status) else { throw Failure(description: "web app: \(what): \(response)") }
    }

    private func recordPath(_ collection: String, _ id: String? = nil) -> String {
        "/buckets/\(bucket)/collections/\(collection)/records" + (id.map { "/\($0)" } ?? "")
    }

    // MARK: What a web app does

    /// Creates the bucket and the collections evsync uses.
    func createBucket(collections: [String] = ["holidays", "birthdays"]) async throws {
        try expect(try await request("PUT", "/buckets/\(bucket)", body: ["data": [:]], headers: ["If-None-Match": "*"]),
                   [200, 201], "creating bucket \(bucket)")
        for collection in collections {
            try expect(try await request("PUT", "/buckets/\(bucket)/collections/\(collection)", body: ["data": [:]],
                                         headers: ["If-None-Match": "*"]), [200, 201], "creating collection \(collection)")
        }
    }

    /// Creates or replaces a record; returns its new `last_modified`.
    @discardableResult
    func put(_ id: String, _ fields: JSONObject, in collection: String = "holidays") async throws -> Int64 {
        let response = try await request("PUT", recordPath(collection, id), body: ["data": .object(fields)])
        try expect(response, [200, 201], "PUT \(collection)/\(id)")
        return try version(of: response)
    }

    /// Changes some fields (Kinto merges a PATCH into the record); returns the new `last_modified`.
    @discardableResult
    func patch(_ id: String, _ fields: JSONObject, in collection: String = "holidays") async throws -> Int64 {
        let response = try await request("PATCH", recordPath(collection, id), body: ["data": .object(fields)])
        try expect(response, [200], "PATCH \(collection)/\(id)")
        return try version(of: response)
    }

    func delete(_ id: String, in collection: String = "holidays") async throws {
        try expect(try await request("DELETE", recordPath(collection, id)), [200], "DELETE \(collection)/\(id)")
    }

    /// One record's fields (without id and last_modified) and version; nil when it does not exist.
    func get(_ id: String, in collection: String = "holidays") async throws -> (fields: JSONObject, version: Int64)? {
        let response = try await request("GET", recordPath(collection, id))
        if response.status == 404 { return nil }
        try expect(response, [200], "GET \(collection)/\(id)")
        var fields = response.data ?? [:]
        let version = try version(of: response)
        fields["id"] = nil
        fields["last_modified"] = nil
        return (fields, version)
    }

    private func version(of response: Response) throws -> Int64 {
        guard let version = response.data?["last_modified"]?.int64Value else {
            throw Failure(description: "web app: no last_modified in \(response)")
        }
        return version
    }

    /// Every entry of a listing, following Next-Page. With `since`, tombstones are included.
    func listing(in collection: String = "holidays", since: Int64? = nil) async throws -> [JSONObject] {
        var url = server + recordPath(collection) + "?_sort=last_modified&_limit=5000"
        if let since { url += "&_since=\(since)" }
        var entries: [JSONObject] = []
        while true {
            let response = try await request("GET", url)
            try expect(response, [200], "listing \(collection)")
            entries += (response.body?.objectValue?["data"]?.arrayValue ?? []).compactMap(\.objectValue)
            guard let next = response.headers["next-page"] else { return entries }
            url = next
        }
    }

    /// The live records, by id (fields without id and last_modified). Throws on a duplicate id in the listing.
    func records(in collection: String = "holidays") async throws -> [String: JSONObject] {
        var records: [String: JSONObject] = [:]
        for var entry in try await listing(in: collection) {
            guard let id = entry["id"]?.stringValue else { throw Failure(description: "web app: a record without id") }
            entry["id"] = nil
            entry["last_modified"] = nil
            guard records.updateValue(entry, forKey: id) == nil else { throw Failure(description: "web app: id \(id) listed twice") }
        }
        return records
    }

    /// Live records counted by the server (`Total-Records` on HEAD).
    func count(in collection: String = "holidays") async throws -> Int {
        let response = try await request("HEAD", recordPath(collection))
        try expect(response, [200], "HEAD \(collection)")
        guard let total = response.headers["total-records"].flatMap({ Int($0) }) else {
            throw Failure(description: "web app: no Total-Records header")
        }
        return total
    }

    /// The collection's timestamp (the ETag of its records list): it moves with every change, deletions included.
    func timestamp(in collection: String = "holidays") async throws -> Int64 {
        let response = try await request("GET", recordPath(collection) + "?_limit=1")
        try expect(response, [200], "GET \(collection) timestamp")
        guard let etag = response.headers["etag"], let value = Int64(etag.trimmingCharacters(in: CharacterSet(charactersIn: "\""))) else {
            throw Failure(description: "web app: no ETag on the records list")
        }
        return value
    }

    /// Creates many records through `POST /batch`, 25 requests per batch, all in one curl process.
    func seed(_ records: [(id: String, fields: JSONObject)], in collection: String = "holidays") async throws {
        let scratch = try TemporaryDirectory("synctests-seed")
        var config: [String] = []
        var batches = 0
        for start in stride(from: 0, to: records.count, by: 25) {
            let requests: [JSONValue] = records[start..<min(start + 25, records.count)].map { record in
                ["path": .string(recordPath(collection, record.id)), "body": ["data": .object(record.fields)]]
            }
            let body: JSONValue = ["defaults": ["method": "PUT", "headers": ["If-None-Match": "*"]], "requests": .array(requests)]
            if batches > 0 { config.append("next") }
            config += operation(method: "POST", url: server + "/batch", body: body, headers: [:],
                                output: scratch.file("batch-\(batches)"), headerFile: nil)
            batches += 1
        }
        let output = try await ProcessRunner.run(Self.curl, ["-K", "-"],
                                                 stdin: config.joined(separator: "\n") + "\n")
        guard output.status == 0 else { throw Failure(description: "curl batch seeding failed: \(output)") }
        let statuses = output.stdoutLines
        guard statuses.count == batches, statuses.allSatisfy({ $0 == "200" }) else {
            throw Failure(description: "web app: batch statuses \(Set(statuses)) (\(statuses.count) of \(batches))")
        }
        for batch in 0..<batches {
            let bytes = FileManager.default.contents(atPath: scratch.file("batch-\(batch)")) ?? Data()
            let responses = try JSONParser.parse(Array(bytes)).objectValue?["responses"]?.arrayValue ?? []
            for response in responses {
                let status = response.objectValue?["status"]?.int64Value ?? 0
                guard status == 201 else {
                    throw Failure(description: "web app: batch \(batch) had a sub-response \(JSONWriter.string(response))")
                }
            }
        }
    }
}
