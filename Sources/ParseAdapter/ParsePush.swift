public import EventStore
public import EventSync
import RemoteHTTP

/// Parse's push: no conditional writes, so the records a batch touches are
/// read first (`read`), and each write's answer is taken alone.
extension ParseRemote {
    /// A batch that failed after it may have reached the server (a broken connection, a 5xx) is not sent again
    /// as it was: a create would be made twice where the server makes the ids. The whole push starts again from
    /// its read, which finds what was applied (by `nid`) and acknowledges it.
    public func push(_ operations: [RemoteOperation], of entity: EntitySchema) throws -> [RemoteOutcome] {
        var attempt = 1
        while true {
            do {
                return try pushOnce(operations, of: entity)
            } catch let error as HTTPRemoteError where error.mayHaveApplied {
                try waitToRetry(after: attempt, failure: error.description)
                attempt += 1
            }
        }
    }

    private func pushOnce(_ operations: [RemoteOperation], of entity: EntitySchema) throws -> [RemoteOutcome] {
        guard !operations.isEmpty else { return [] }
        let className = Self.className(for: entity)
        let current = try read(operations.map(\.id), of: entity)
        var outcomes = [RemoteOutcome?](repeating: nil, count: operations.count)
        var writes: [(index: Int, request: JSONObject)] = []
        for (index, operation) in operations.enumerated() {
            // An object evsync cannot read has a version it cannot check: left as it is, never written over,
            // and never taken for absent (a create would make a second object for the id).
            if let reason = current.unreadable[operation.id] {
                outcomes[index] = .rejected(status: 0, message: "the server's object for it cannot be read by evsync (\(reason)); left as it is")
                continue
            }
            let server = current.readable[operation.id]
            switch operation {
            case .create(let id, let fields):
                // Already there: our own create that landed before a crash (acknowledged by the engine if equal), or another's.
                if let server { outcomes[index] = .preconditionFailed(current: server.record); continue }
                var body = Self.encode(fields, schema: entity)
                body[Self.idField] = .string(id)
                if customObjectIDs != false { body["objectId"] = .string(id) }
                writes.append((index, ["method": "POST", "path": .string(path("classes", className)), "body": .object(body)]))
            case .update(_, let fields, let version):
                guard let server, server.record.version == version else {
                    outcomes[index] = .preconditionFailed(current: server?.record)
                    continue
                }
                let body = Self.changes(from: server.record.fields ?? [:], to: fields, schema: entity)
                writes.append((index, ["method": "PUT", "path": .string(path("classes", className, server.objectID)), "body": .object(body)]))
            case .delete(_, let version):
                guard let server else { outcomes[index] = .notFound; continue }
                guard server.record.version == version else { outcomes[index] = .preconditionFailed(current: server.record); continue }
                writes.append((index, ["method": "DELETE", "path": .string(path("classes", className, server.objectID))]))
            }
        }
        var attempt = 1
        while !writes.isEmpty {
            let answers = try batch(writes.map(\.request), doing: "pushing to \(className)")
            var again: [(index: Int, request: JSONObject)] = []
            var rateLimited = false
            for (write, answer) in zip(writes, answers) {
                let operation = operations[write.index]
                if let success = answer["success"]?.objectValue {
                    let version = success["updatedAt"]?.stringValue ?? success["createdAt"]?.stringValue
                    if case .delete = operation {
                        outcomes[write.index] = .applied(version: deletionVersion)
                    } else if let version {
                        if case .create = operation, customObjectIDs == nil { customObjectIDs = success["objectId"]?.stringValue == operation.id }
                        outcomes[write.index] = .applied(version: RemoteVersion(version))
                    } else {
                        throw HTTPRemoteError(.server, "the server accepted a write to \(className) without giving its updatedAt")
                    }
                    continue
                }
                let error = answer["error"]?.objectValue ?? [:]
                let code = error["code"]?.int64Value.map(Int.init) ?? 0
                let message = error["error"]?.stringValue ?? "no message"
                switch (operation, code) {
                case (.create, ParseAnswer.Code.invalidKeyName) where write.request["body"]?.objectValue?["objectId"] != nil:
                    // The server makes its own object ids: send again without ours; `nid` keeps the mapping.
                    customObjectIDs = false
                    var request = write.request
                    var body = request["body"]?.objectValue ?? [:]
                    body["objectId"] = nil
                    request["body"] = .object(body)
                    again.append((write.index, request))
                case (.create, ParseAnswer.Code.duplicateValue):
                    // Made meanwhile by someone else (or by us): what is there now is the server's state.
                    outcomes[write.index] = .preconditionFailed(current: try read([operation.id], of: entity).readable[operation.id]?.record)
                case (.update, ParseAnswer.Code.objectNotFound):
                    outcomes[write.index] = .preconditionFailed(current: nil)
                case (.delete, ParseAnswer.Code.objectNotFound):
                    outcomes[write.index] = .notFound
                case (_, ParseAnswer.Code.requestLimitExceeded):
                    rateLimited = true
                    again.append(write)
                case (_, ParseAnswer.Code.invalidSessionToken), (_, ParseAnswer.Code.operationForbidden):
                    throw ParseAnswer.failure(code: code, message: message, doing: "pushing to \(className)")
                default:
                    outcomes[write.index] = .rejected(status: code, message: "Parse error \(code): \(message)")
                }
            }
            if rateLimited {
                // Parse's request limit (155): wait as for any retried request, then send those writes again.
                try waitToRetry(after: attempt, failure: "the server refused writes to \(className) as over its request limit (Parse error 155)")
                attempt += 1
            }
            writes = again
        }
        return outcomes.map { $0 ?? .rejected(status: 0, message: "not sent") }
    }
}
