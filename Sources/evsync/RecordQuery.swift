import Foundation
import EventStore

/// What `list` shows of a table: which records (`--where`), in what order
/// (`--sort`), how many (`--limit`) and which fields (`--fields`).
///
/// Filters are typed values evaluated against each record's JSON, never text
/// pasted into a query: a value holding quotes or operators is just a value.
struct RecordQuery {
    /// One `--where` condition: `field OP value`.
    struct Condition: Equatable {
        enum Operator: String, CaseIterable {
            // Longest first, so `>=` is not read as `>` followed by `=value`.
            case notEqual = "!=", atLeast = ">=", atMost = "<=", equal = "=", greater = ">", less = "<", contains = "~"
        }

        let field: String
        let op: Operator
        let value: String

        /// Parses `date>=2027-01-01` or `name~text`: the first operator splits it.
        init(_ text: String) throws(CLIError) {
            var earliest: (range: Range<String.Index>, op: Operator)?
            for op in Operator.allCases {
                guard let range = text.range(of: op.rawValue) else { continue }
                if earliest == nil || range.lowerBound < earliest!.range.lowerBound { earliest = (range, op) }
            }
            guard let (range, op) = earliest, range.lowerBound > text.startIndex else {
                throw CLIError(.usage, "--where takes FIELD OP VALUE with OP one of = != < <= > >= ~ (contains), as in 'date>=2027-01-01', not '\(text)'")
            }
            field = String(text[..<range.lowerBound])
            self.op = op
            value = String(text[range.upperBound...])
        }

        /// Whether the record's value satisfies the condition. A missing field
        /// satisfies only `!=`; numbers compare as numbers, strings (ISO dates
        /// among them) as text, an array when any of its elements does.
        func matches(_ candidate: JSONValue?) -> Bool {
            guard let candidate, candidate != .null else { return op == .notEqual }
            if case .array(let elements) = candidate {
                return op == .notEqual ? !elements.contains { Condition(field, .equal, value).matches($0) }
                    : elements.contains { matches($0) }
            }
            if op == .contains {
                let text = candidate.stringValue ?? Output.json(candidate)
                return text.range(of: value, options: .caseInsensitive) != nil
            }
            let order: Int?
            switch candidate {
            case .number(let number):
                order = Double(value).map { operand in number.doubleValue < operand ? -1 : number.doubleValue > operand ? 1 : 0 }
            case .string(let string):
                order = string < value ? -1 : string > value ? 1 : 0
            case .bool(let bool):
                order = ["true", "false"].contains(value) ? (String(bool) == value ? 0 : nil) : nil
            default:
                order = Output.json(candidate) == value ? 0 : nil
            }
            guard let order else { return op == .notEqual }
            switch op {
            case .equal: return order == 0
            case .notEqual: return order != 0
            case .less: return order < 0
            case .atMost: return order <= 0
            case .greater: return order > 0
            case .atLeast: return order >= 0
            case .contains: return false
            }
        }

        private init(_ field: String, _ op: Operator, _ value: String) {
            self.field = field
            self.op = op
            self.value = value
        }
    }

    /// One `--sort` key: a field, `-field` for descending.
    struct SortKey {
        let field: String
        let descending: Bool
    }

    var conditions: [Condition] = []
    var sort: [SortKey] = []
    var limit: Int?
    /// The columns to show, in order (`id` first unless named elsewhere), or nil for all.
    var fields: [String]?

    init(_ arguments: Arguments, schema: EntitySchema) throws(CLIError) {
        let known = ["id"] + schema.fieldNames
        func check(_ field: String, _ option: String) throws(CLIError) {
            guard known.contains(field) else {
                throw CLIError(.dataError, "\(option): \(schema.name) has no field '\(field)'\(Suggestion.didYouMean(field, among: known)) (fields: \(known.joined(separator: ", ")))")
            }
        }
        for text in arguments.values("--where") {
            let condition = try Condition(text)
            try check(condition.field, "--where")
            conditions.append(condition)
        }
        for text in arguments.values("--sort") {
            for part in text.split(separator: ",", omittingEmptySubsequences: false) {
                let descending = part.hasPrefix("-")
                let field = String(descending ? part.dropFirst() : part)
                try check(field, "--sort")
                sort.append(SortKey(field: field, descending: descending))
            }
        }
        if let text = arguments.value("--limit") {
            guard let limit = Int(text), limit >= 0 else { throw CLIError(.usage, "--limit takes a whole number, not '\(text)'") }
            self.limit = limit
        }
        if let text = arguments.value("--fields") {
            var fields: [String] = []
            for part in text.split(separator: ",", omittingEmptySubsequences: false).map(String.init) {
                try check(part, "--fields")
                if !fields.contains(part) { fields.append(part) }
            }
            self.fields = fields
        }
    }

    func matches(_ record: Record) -> Bool {
        conditions.allSatisfy { $0.matches($0.field == "id" ? .string(record.id) : record.fields[$0.field]) }
    }

    /// Whether `a` comes before `b`: by the sort keys, then by id. A record
    /// without the field comes last, as SQL's NULLS LAST; numbers before strings.
    func areInOrder(_ a: Record, _ b: Record) -> Bool {
        for key in sort {
            let left = key.field == "id" ? .string(a.id) : a.fields[key.field]
            let right = key.field == "id" ? .string(b.id) : b.fields[key.field]
            let order = Self.compare(left, right)
            if order != 0 { return (order < 0) != (key.descending && left != nil && right != nil) }
        }
        return a.id < b.id
    }

    private static func compare(_ a: JSONValue?, _ b: JSONValue?) -> Int {
        switch (a, b) {
        case (nil, nil): return 0
        case (nil, _): return 1
        case (_, nil): return -1
        case (.number(let x)?, .number(let y)?): return x.doubleValue < y.doubleValue ? -1 : x.doubleValue > y.doubleValue ? 1 : 0
        case (.number?, _): return -1
        case (_, .number?): return 1
        case (.string(let x)?, .string(let y)?): return x < y ? -1 : x > y ? 1 : 0
        case (let x?, let y?):
            let (left, right) = (Output.json(x), Output.json(y))
            return left < right ? -1 : left > right ? 1 : 0
        }
    }

    /// The record as `list --json` prints it: `id` and the fields, only those of `--fields` if given.
    func json(_ record: Record) -> JSONObject {
        guard let fields else { return record.json }
        return record.json.filter { fields.contains($0.key) }
    }
}
