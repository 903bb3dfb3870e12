import Foundation
import EventStore

/// What `list` shows of a table: which records (`--where`), in what order
/// (`--sort`), how many (`--limit`) and which fields (`--fields`).
///
/// The filters and the order are the library's own (`Query`, `FieldCondition`, `SortKey`): the CLI and an
/// app get the same answer, from the same indexes. Filters are typed values evaluated against each record's
/// JSON, never text pasted into a query: a value holding quotes or operators is just a value.
struct RecordQuery {
    let query: Query<Record>
    /// The columns to show, in order (`id` first unless named elsewhere), or nil for all.
    let fields: [String]?
    /// Whether a condition may be answered by an index the schema declares: then the library's query runs,
    /// reading only what it returns, rather than a stream of the whole table.
    let usesIndex: Bool

    var conditions: [FieldCondition] { query.conditions }
    var sort: [SortKey] { query.sortKeys }
    var limit: Int? { query.limit }

    init(_ arguments: Arguments, schema: EntitySchema) throws(CLIError) {
        let known = ["id"] + schema.fieldNames
        func check(_ field: String, _ option: String) throws(CLIError) {
            guard known.contains(field) else {
                throw CLIError(.dataError, "\(option): \(schema.name) has no field '\(field)'\(Suggestion.didYouMean(field, among: known)) (fields: \(known.joined(separator: ", ")))")
            }
        }
        var query = Query(schema.name)
        for text in arguments.values("--where") {
            guard let condition = FieldCondition(parsing: text) else {
                throw CLIError(.usage, "--where takes FIELD OP VALUE with OP one of = != < <= > >= ~ (contains), as in 'date>=2027-01-01', not '\(text)'")
            }
            try check(condition.field, "--where")
            query = query.where(condition)
        }
        for text in arguments.values("--sort") {
            for part in text.split(separator: ",", omittingEmptySubsequences: false) {
                let key = SortKey(parsing: part)
                try check(key.field, "--sort")
                query = query.order([key])
            }
        }
        if let text = arguments.value("--limit") {
            guard let limit = Int(text), limit >= 0 else { throw CLIError(.usage, "--limit takes a whole number, not '\(text)'") }
            query = query.limit(limit)
        }
        if let text = arguments.value("--fields") {
            var fields: [String] = []
            for part in text.split(separator: ",", omittingEmptySubsequences: false).map(String.init) {
                try check(part, "--fields")
                if !fields.contains(part) { fields.append(part) }
            }
            self.fields = fields
        } else {
            fields = nil
        }
        self.query = query
        usesIndex = query.conditions.contains { $0.op != .notEqual && $0.op != .contains && schema.indexedFields.contains($0.field) }
    }

    func matches(_ record: Record) -> Bool {
        conditions.allSatisfy { $0.matches(record) }
    }

    /// The record as `list --json` prints it: `id` and the fields, only those of `--fields` if given.
    func json(_ record: Record) -> JSONObject {
        guard let fields else { return record.json }
        return record.json.filter { fields.contains($0.key) }
    }
}
