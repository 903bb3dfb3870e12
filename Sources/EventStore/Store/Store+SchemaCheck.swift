/// What the current schemas make of the records already held: after a schema file changed (a field made
/// required, a rule tightened, a field removed), the records it no longer describes. Nothing is rewritten:
/// the log keeps what was written, and every read goes on showing it.
extension Store {
    /// Reads every record of `entityName` (every entity when nil) through its current schema.
    public func checkSchemas(_ entityName: String? = nil) throws(StoreError) -> [SchemaCheck] {
        let entities = try entityName.map { name throws(StoreError) in [try entity(name)] } ?? schemas.entities
        var checks: [SchemaCheck] = []
        for schema in entities {
            var check = SchemaCheck(entity: schema.name)
            try forEachRecord(schema.name) { record in
                check.records += 1
                for field in schema.required.sorted() where record.fields[field] == nil {
                    check.problems.append(.init(id: record.id, field: field, reason: "required field '\(field)' is missing"))
                }
                for (field, value) in record.fields.sorted(by: { $0.key < $1.key }) {
                    guard schema.hasField(field) else {
                        check.undeclared[field, default: 0] += 1
                        continue
                    }
                    do { try schema.validate(field: field, value: value) } catch {
                        check.problems.append(.init(id: record.id, field: field, reason: "\(error)"))
                    }
                }
                return true
            }
            if !schema.renames.isEmpty {
                try snapshot { transaction in
                    try forEachRow(of: schema.name, in: transaction) { id, stored in
                        for (old, new) in schema.renames.sorted(by: { $0.key < $1.key }) where stored[old] != nil {
                            check.renamed.append(.init(id: id, field: new, from: old))
                        }
                    }
                }
                check.renamed.sort { ($0.id, $0.field) < ($1.id, $1.field) }
            }
            checks.append(check)
        }
        return checks
    }
}

/// One entity's records read through its current schema: `Codable` as
/// `{entity, records, problems: [{id, field, reason}], undeclared: {field: records}, renamed: [{id, field, from}]}`.
public struct SchemaCheck: Sendable, Equatable, Codable {
    public let entity: String
    /// How many records were read.
    public internal(set) var records = 0
    /// The values the schema now refuses and the required fields missing, by record id, then field.
    public internal(set) var problems: [Problem] = []
    /// Fields the schema does not declare, carried by some records (a newer app's, or removed from the
    /// schema), with how many records carry each. Not a problem: they are kept and pushed back as they are.
    public internal(set) var undeclared: [String: Int] = [:]

    /// The records that still hold a renamed field under its former name (`x-evsync-renamed-from`): they
    /// read under the new name, and go on doing so while the schema names the former one.
    public internal(set) var renamed: [Renamed] = []

    init(entity: String) { self.entity = entity }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        entity = try container.decode(String.self, forKey: .entity)
        records = try container.decode(Int.self, forKey: .records)
        problems = try container.decode([Problem].self, forKey: .problems)
        undeclared = try container.decode([String: Int].self, forKey: .undeclared)
        // Absent in what an evsync before renames wrote.
        renamed = try container.decodeIfPresent([Renamed].self, forKey: .renamed) ?? []
    }

    public struct Renamed: Sendable, Equatable, Codable {
        public let id: String
        /// The field's name in the schema.
        public let field: String
        /// The former name the record holds it under.
        public let from: String
    }

    public struct Problem: Sendable, Equatable, Codable {
        public let id: String
        public let field: String
        /// The schema's words, as a write of that value would be refused.
        public let reason: String
    }
}
