import EventStore

/// The push half of a sync (the pull is in SyncEngine.swift): the pending rows sent in batches, each batch's
/// answers acknowledged in one transaction, so that a crash between batches resends nothing the log acknowledged.
extension SyncEngine {
    /// - Parameter resendRefused: whether changes the server refused before, unchanged since, are sent again;
    ///   otherwise they are held, and listed in the report's `held`.
    func push(_ schema: EntitySchema, to remote: any SyncRemote, policy: ConflictPolicy, resendRefused: Bool, report: inout SyncReport,
              progress: (SyncProgress) -> Void, shouldStop: () -> Bool) throws {
        var step = SyncProgress(phase: .pushing, entity: schema.name, records: 0, pages: 0, total: nil)
        // A conflict met while pushing is folded like a pulled record, which
        // may leave a merged state to push: a few rounds settle it.
        for _ in 1...3 {
            var after: [UInt8]? = nil
            // Whether a failed precondition was folded this round: conflict or
            // clean merge, the result may differ from the server and need pushing.
            var folded = false
            var limit: Int?
            var held: [String] = []
            defer { report.held = report.held.filter { $0.entity != schema.name } + held.map { RecordReference(entity: schema.name, id: $0) } }
            while true {
                let (operations, passedOver) = try store.pendingOperations(entity: schema.name, after: &after, limit: limit ?? 1,
                                                                           holdingRefusalsOf: resendRefused ? nil : remote.address)
                // The first call only asks whether anything is to be sent (and is read again once the batch size is
                // known): what it passed over counts when it found nothing else.
                if limit != nil || operations.isEmpty { held += passedOver }
                if operations.isEmpty { break }
                if limit == nil {
                    // Ask the server its batch size only when there is something to push.
                    limit = try remote.batchLimit()
                    step.total = step.records + (try store.pendingCount(entity: schema.name))
                    after = nil
                    continue
                }
                // The server is written in its own names (a renamed field under its former one); the log
                // acknowledges the rows as stored, so that each stays in step with its shadow.
                let outcomes = try remote.push(operations.map(schema.wire), of: schema)
                guard outcomes.count == operations.count else {
                    throw SyncError(.server, "the remote answered \(outcomes.count) of \(operations.count) writes")
                }
                var pending = report
                try store.ingest { writer in
                    for (operation, outcome) in zip(operations, outcomes) {
                        if try acknowledge(operation, outcome, entity: schema.name, policy: policy, author: remote.address,
                                           writer: &writer, report: &pending) {
                            folded = true
                        }
                    }
                }
                report = pending
                step.records += operations.count
                step.pages += 1
                progress(step)
                if shouldStop() { return }
            }
            if !folded { return }
        }
    }

    /// Logs what the server did with one operation. Returns true when the server held something else, now folded in.
    private func acknowledge(_ operation: RemoteOperation, _ outcome: RemoteOutcome, entity: String, policy: ConflictPolicy,
                             author: String, writer: inout Store.IngestWriter, report: inout SyncReport) throws -> Bool {
        let projection = try writer.projection(entity: entity, id: operation.id)
        let schema = try store.entity(entity)
        let sent = operation.sentState
        func ack(_ version: RemoteVersion?) throws {
            try writer.append(Event(eventID: RecordID.generate(), at: store.clock(), entity: entity, recordID: operation.id,
                                    kind: .acknowledged, origin: .remote, author: author, version: version, server: sent),
                              current: projection)
            if sent == .absent { report.deletedThere += 1 } else { report.pushed += 1 }
        }
        // A refusal is reported and logged (a `rejected` event: `why` tells the last push's outcome).
        func reject(status: Int?, _ message: String) throws {
            let rejection = Rejection(entity: entity, id: operation.id, status: status, message: message)
            report.rejected.append(rejection)
            try writer.appendRejected(entity: entity, id: operation.id, reason: message,
                                      at: store.clock(), author: author)
        }
        switch outcome {
        case .applied(let version):
            try ack(version)
        case .appliedDifferently(let current):
            // The server holds something other than what we sent: that is its state, merged as if pulled.
            try fold(current, entity: entity, policy: policy, checkVersion: false, author: author, writer: &writer, report: &report)
            return true
        case .preconditionFailed(let current?) where RecordState(current.fields.map(schema.upcast)) == RecordState(sent.fields.map(schema.upcast)):
            // The server already holds exactly what we sent (our earlier push, never acknowledged).
            try ack(current.version)
        case .preconditionFailed(let current):
            // Someone else changed it: merge as if we had pulled it. Without
            // the server's record, it is gone there (at the version we knew).
            guard let record = current ?? projection.version.map({ RemoteRecord(id: operation.id, version: $0, fields: nil) }) else {
                try reject(status: nil, "the server refused the write without saying what it holds")
                return false
            }
            try fold(record, entity: entity, policy: policy, checkVersion: false, author: author, writer: &writer, report: &report)
            return true
        case .notFound:
            if sent == .absent {
                try ack(projection.version)
            } else {
                try reject(status: nil, "the server has no such collection or record")
            }
        case .rejected(let status, let message):
            try reject(status: status, message)
        }
        return false
    }
}
