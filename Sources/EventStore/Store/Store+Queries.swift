import Storage
/// A record as a table shows it. `Codable` as `{entity, id, fields}`.
public struct Record: Sendable, Equatable, Codable {
    public let entity: String
    public let id: String
    public let fields: JSONObject

    /// The record as one JSON object: `id` and the fields.
    public var json: JSONObject {
        var object = fields
        object["id"] = .string(id)
        return object
    }
}

/// A point in the log's past: after event `seq`, or at a moment.
public enum LogPoint: Sendable, Equatable {
    case seq(UInt64)
    /// Milliseconds since 1970, UTC.
    case time(Int64)

    /// Parses `--as-of`: a sequence number, or an ISO 8601 date or date-time.
    public init?(_ text: String) {
        if let seq = UInt64(text) {
            self = .seq(seq)
        } else if let time = Timestamp.parse(text) {
            self = .time(time)
        } else {
            return nil
        }
    }
}

extension Store {
    /// One record, now or as it was at `asOf`; nil if it did not exist then.
    public func record(_ entityName: String, id: String, asOf point: LogPoint? = nil) throws(StoreError) -> Record? {
        let schema = try entity(entityName)
        try Self.checkID(id, fromServer: true)
        return try snapshot { transaction in
            let fields: JSONObject?
            if let point {
                // The record's own events, from the history index, folded up to the point.
                let through = try seq(at: point, in: transaction)
                let reader = try archiveReader(in: transaction)
                var projection = RecordProjection()
                let events = try reader.expand(try log.history(of: id, in: transaction).filter { $0.entity == schema.name }, before: through)
                for event in events where reader.position(of: event) <= through {
                    projection.apply(event)
                }
                try Self.requireArchives(reader, for: "reading \(schema.name)/\(id) as of event \(through)")
                fields = projection.row
            } else {
                fields = try log.views.projection(entity: schema.name, id: id, in: transaction).row
            }
            return fields.map { schema.record(id: id, fields: $0) }
        }
    }

    /// Every record of an entity, sorted by id; at `asOf`, replayed from the log up to that point.
    public func records(_ entityName: String, asOf point: LogPoint? = nil) throws(StoreError) -> [Record] {
        let schema = try entity(entityName)
        return try snapshot { transaction in
            guard let point else { return try records(of: schema, in: transaction) }
            let through = try seq(at: point, in: transaction)
            var projections: [String: RecordProjection] = [:]
            let reader = try archiveReader(in: transaction)
            if reader.archived.isEmpty {
                try log.forEach(in: transaction) { event in
                    guard event.seq <= through else { return false }
                    if event.entity == schema.name { projections[event.recordID, default: RecordProjection()].apply(event) }
                    return true
                }
            } else {
                for event in try events(asOf: through, entity: schema.name, reader: reader, in: transaction) {
                    projections[event.recordID, default: RecordProjection()].apply(event)
                }
            }
            return projections.compactMap { id, projection in
                projection.row.map { schema.record(id: id, fields: $0) }
            }.sorted { $0.id < $1.id }
        }
    }

    /// The events of `entity` that make its records as of `through` in a compacted log, in order: the live
    /// log's and the needed segments' (an event in both counted once), each baseline at its cut
    /// (`ArchiveReader`). Holds them all: only a reading of the past in a compacted log pays for it.
    private func events(asOf through: UInt64, entity: String, reader: ArchiveReader, in transaction: Transaction) throws -> [Event] {
        var events: [UInt64: Event] = [:]
        func take(_ event: Event) -> Bool {
            guard event.entity == entity else { return true }
            if event.baseline != nil ? reader.position(of: event) <= through : event.seq <= through { events[event.seq] = event }
            return true
        }
        for segment in reader.archived.segments(neededBefore: through) where try !reader.forEach(sealedBy: segment.seal, take) {
            try Self.requireArchives(reader, for: "reading \(entity) as of event \(through)")
        }
        try log.forEach(in: transaction, take)
        return events.keys.sorted().compactMap { events[$0] }
    }

    /// Calls `body` with each record of an entity in id order, from one read
    /// snapshot, holding one record at a time (plus any with an id longer than
    /// `RecordID.maxLength`), so the first arrives at once and memory stays flat
    /// whatever the table's size. `body` returns false to stop early.
    ///
    /// ```swift
    /// try store.forEachRecord("Holiday") { record in print(record.id); return true }
    /// ```
    public func forEachRecord(_ entityName: String, _ body: (Record) -> Bool) throws(StoreError) {
        let schema = try entity(entityName)
        try snapshot { transaction in
            // A long id's key is its hash, marked with `#`, which sorts before every id:
            // those come first, are put in id order, and are merged in as the others pass.
            var long: [Record] = []
            var sortedLong = false
            var stopped = false
            try forEachRow(of: schema.name, in: transaction) { id, fields in
                let record = schema.record(id: id, fields: fields)
                if id.utf8.count > RecordID.maxLength { long.append(record); return }
                if !sortedLong { long.sort { $0.id > $1.id }; sortedLong = true }
                while let next = long.last, next.id < id {
                    long.removeLast()
                    if !body(next) { stopped = true; return }
                }
                if !body(record) { stopped = true }
            } continuing: { !stopped }
            if !sortedLong { long.sort { $0.id > $1.id } }
            while !stopped, let next = long.popLast() { stopped = !body(next) }
        }
    }

    /// Every record of `schema`'s entity in the views, sorted by id.
    func records(of schema: EntitySchema, in transaction: Transaction) throws -> [Record] {
        var records: [Record] = []
        var hashed = false
        try forEachRow(of: schema.name, in: transaction) { id, fields in
            hashed = hashed || id.utf8.count > RecordID.maxLength
            records.append(schema.record(id: id, fields: fields))
        }
        // Keys are in id order, except a long id's, which is its hash.
        if hashed { records.sort { $0.id < $1.id } }
        return records
    }

    func forEachRow(of entity: String, in transaction: Transaction, _ body: (String, JSONObject) throws -> Void,
                    continuing proceed: () -> Bool = { true }) throws {
        let prefix = Keys.entityPrefix(entity)
        let entityKey = String(decoding: prefix.dropLast(), as: UTF8.self)
        let cursor = try transaction.cursor(log.views.records)
        var entry = try cursor.seek(atLeast: prefix)
        while let current = entry, current.key.starts(with: prefix), proceed() {
            if let row = try log.views.row(in: current.value, log: transaction) {
                let keyPart = String(decoding: UnsafeRawBufferPointer(rebasing: current.key[prefix.count...]), as: UTF8.self)
                try body(try log.recordID(keyPart: keyPart, entityKey: entityKey, in: transaction), row)
            }
            entry = try cursor.next()
        }
    }

    /// Every event of the record(s) with this id, oldest first, read through the current schemas (a renamed
    /// field under its new name, `EntitySchema.upcast`; the log keeps what was written).
    public func history(of id: String) throws(StoreError) -> [Event] {
        try historyReport(of: id).events
    }

    /// The same, and the archive segments that hold older events of the record and are missing: where one
    /// is, the record's `baseline` event stands in for the events it holds.
    public func historyReport(of id: String) throws(StoreError) -> (events: [Event], missingArchives: [String]) {
        try Self.checkID(id, fromServer: true)
        let (events, missing) = try snapshot { transaction in
            let reader = try archiveReader(in: transaction)
            return (try reader.expand(try log.history(of: id, in: transaction), before: 0), reader.missing)
        }
        return (events.map { event in (try? entity(event.entity)).map { $0.upcast(event) } ?? event }, missing)
    }

    /// The last `count` events, oldest first.
    public func lastEvents(_ count: Int) throws(StoreError) -> [Event] {
        try snapshot { try log.last(count, in: $0) }
    }

    /// Events after `seq`, oldest first, at most `limit`.
    public func events(after seq: UInt64, limit: Int = .max) throws(StoreError) -> [Event] {
        try snapshot { transaction in
            var events: [Event] = []
            try log.forEach(from: seq + 1, in: transaction) { event in
                events.append(event)
                return events.count < limit
            }
            return events
        }
    }

    /// The sequence number of the newest event (0 for an empty log).
    public func lastSeq() throws(StoreError) -> UInt64 {
        try snapshot { try log.lastSeq(in: $0) }
    }
}
