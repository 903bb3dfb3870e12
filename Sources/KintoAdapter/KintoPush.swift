public import EventStore
public import EventSync
import Foundation
import HTTPTransport
import RemoteHTTP

/// Push: a batch of conditional writes to one collection (`POST /batch`), and
/// what each of its answers means for the record (`RemoteOutcome`).
extension KintoRemote {
    /// A batch the server finds too large (`413`: waitress's `max_request_body_size`,
    /// a proxy's body limit) is sent again in halves, down to single writes; a
    /// single write still too large is rejected alone, so it never holds back the others.
    public func push(_ operations: [RemoteOperation], of entity: EntitySchema) throws(HTTPRemoteError) -> [RemoteOutcome] {
        let place = place(of: entity)
        let collection = place.name
        guard !operations.isEmpty else { return [] }
        var requests: [JSONValue] = []
        for operation in operations {
            var request: JSONObject = ["path": .string(path(place.recordSegments(operation.id)))]
            switch operation {
            case .create(_, let fields):
                request["method"] = "PUT"
                request["headers"] = ["If-None-Match": "*"]
                request["body"] = ["data": .object(fields)]
            case .update(_, let fields, let version):
                request["method"] = "PUT"
                request["headers"] = ["If-Match": .string("\"\(version.token)\"")]
                request["body"] = ["data": .object(fields)]
            case .delete(_, let version):
                request["method"] = "DELETE"
                request["headers"] = ["If-Match": .string("\"\(version.token)\"")]
            }
            requests.append(.object(request))
        }
        let body = JSONWriter.encode(.object(["requests": .array(requests)]))
        // The batch is one server transaction and every write in it is
        // conditional, so retrying a whole batch after a 5xx, or after a
        // sub-request that rolled the transaction back, is safe: a write that
        // did land comes back as a 412 holding what we sent, an acknowledgement.
        let response = try send(HTTPRequest(method: "POST", url: url(["batch"]), body: body),
                                failsWhen: { Self.rollback(ofBatch: $0, collection: collection) })
        if response.status == 413 {
            guard operations.count > 1 else {
                return [.rejected(status: 413, message: "HTTP 413: the record is larger than the server accepts in one request")]
            }
            let half = operations.count / 2
            return try push(Array(operations[..<half]), of: entity) + push(Array(operations[half...]), of: entity)
        }
        try expect(response, [200], doing: "pushing to \(collection)")
        return try Self.outcomes(ofBatch: response.body, for: operations, collection: collection)
    }

    /// Why a batch answered `200` was in fact not (all) applied, and the wait the server asked for.
    ///
    /// Kinto runs a batch in one transaction, but a sub-request answered `409`
    /// (two transactions taking the same timestamp in a collection, on its
    /// unique index) makes it abort that transaction (`kinto.core.views.batch`):
    /// the sub-responses before it still say `200`/`201` though nothing of
    /// them was kept, and those after it run in a new transaction that is kept.
    /// None of its 2xx can be trusted, so the whole batch is sent again. A
    /// 429 or 5xx sub-response is treated alike rather than failing the sync.
    static func rollback(ofBatch response: HTTPResponse, collection: String) -> (reason: String, retryAfter: Double?)? {
        guard response.status == 200, let answers = try? batchResponses(response.body, pushingTo: collection) else { return nil }
        for answer in answers {
            guard case .answer(let sub) = answer, let status = sub["status"]?.int64Value.map(Int.init),
                  status == 409 || RetryPolicy.isRetryable(status: status)
            else { continue }
            let message = sub["body"]?.objectValue?["message"]?.stringValue.map { ": \($0)" } ?? ""
            let headers = sub["headers"]?.objectValue ?? [:]
            let retryAfter = headers.first { $0.key.lowercased() == "retry-after" }?.value.stringValue.flatMap(Double.init)
            return ("the server rolled back a batch to \(collection) (a write in it answered HTTP \(status)\(message))", retryAfter)
        }
        return nil
    }

    /// The outcome of each write of a batch, in the order sent, from the batch's response body.
    package static func outcomes(ofBatch body: [UInt8], for operations: [RemoteOperation], collection: String) throws(HTTPRemoteError)
        -> [RemoteOutcome] {
        let responses = try batchResponses(body, pushingTo: collection)
        guard responses.count == operations.count else {
            throw HTTPRemoteError(.server, "the server's batch response does not match the \(operations.count) requests sent")
        }
        return try zip(operations, responses).map { operation, sub throws(HTTPRemoteError) in
            switch sub {
            case .answer(let answer): try outcome(of: operation, answer)
            case .unreadable(let status, let reason):
                // One record the server holds that cannot be read (a 412's `existing`):
                // that write stays pending, and the batch's others are logged.
                .rejected(status: status, message: "HTTP \(status): the server's record cannot be read (\(reason))")
            }
        }
    }

    /// One answer of a batch response, or the status of one that cannot be read and why.
    enum BatchAnswer {
        case answer(JSONObject)
        case unreadable(status: Int, reason: String)
    }

    /// The `responses` of a batch response, read one by one: an answer nested
    /// deeper than the parser reads is passed over (with its status) rather than
    /// failing the batch, so that one record no sync can read never blocks the others.
    static func batchResponses(_ body: [UInt8], pushingTo collection: String) throws(HTTPRemoteError) -> [BatchAnswer] {
        var answers: [BatchAnswer]?
        do {
            try body.withUnsafeBytes { bytes in
                try JSONParser.parseObject(bytes) { key, parser in
                    guard key.equals("responses") else { _ = try parser.value(); return }
                    var list: [BatchAnswer] = []
                    try parser.forEachElement { parser in
                        list.append(.answer(try parser.value().objectValue ?? [:]))
                    } passingOver: { element, error in
                        var status: Int64 = 0
                        try? JSONParser.scanObject(element) { key, parser in
                            if key.equals("status") { status = try parser.value().int64Value ?? 0 } else { try parser.skipValue(startingAt: parser.offset) }
                            return true
                        }
                        list.append(.unreadable(status: Int(status), reason: error.reason))
                    }
                    answers = list
                }
            }
        } catch {
            throw HTTPRemoteError(.server, "the server sent invalid JSON while pushing to \(collection): \(error)")
        }
        guard let answers else { throw HTTPRemoteError(.server, "the server's batch response to \(collection) has no responses") }
        return answers
    }

    static func outcome(of operation: RemoteOperation, _ response: JSONObject) throws(HTTPRemoteError) -> RemoteOutcome {
        let status = response["status"]?.int64Value.map(Int.init) ?? 0
        let body = response["body"]?.objectValue ?? [:]
        switch status {
        case 200, 201:
            guard let data = body["data"]?.objectValue, let version = data["last_modified"]?.int64Value else {
                throw HTTPRemoteError(.server, "the server accepted a write without giving its version")
            }
            // The record it answers with is what it holds: if that is not what we sent, it is not ours to acknowledge.
            if case .present(let sent) = operation.sentState {
                var answered = data
                answered["id"] = .string(operation.id)
                guard let record = record(from: answered) else {
                    throw HTTPRemoteError(.server, "the server answered a write with a record it cannot have")
                }
                if record.fields != sent { return .appliedDifferently(current: record) }
            }
            return .applied(version: RemoteVersion(version))
        case 412:
            let existing = body["details"]?.objectValue?["existing"]?.objectValue
            return .preconditionFailed(current: existing.flatMap { record(from: $0) })
        case 404:
            return .notFound
        case 401:
            throw HTTPRemoteError(.unauthorized, "the server refused the credentials (HTTP 401)", status: 401)
        default:
            let message = body["message"]?.stringValue ?? "HTTP \(status)"
            if RetryPolicy.isRetryable(status: status) {
                throw HTTPRemoteError(.unavailable, "the server failed a batch: \(message)", status: status)
            }
            return .rejected(status: status, message: "HTTP \(status): \(message)")
        }
    }
}
