import Foundation

/// One condition of a query: `field OP operand`, evaluated against a record's
/// value for the field. The one implementation of the comparison rules, for
/// the library's queries, their indexes (`RecordIndexes`) and the CLI's `--where`.
///
/// The operand is text, as typed after `--where date>=`: a typed query's value is
/// written as the field stores it first (`Query`), so both compare alike.
public struct FieldCondition: Sendable, Equatable, CustomStringConvertible {
    public enum Operator: String, CaseIterable, Sendable {
        // Longest first, so `>=` is not read as `>` followed by `=value`.
        case notEqual = "!=", atLeast = ">=", atMost = "<=", equal = "=", greater = ">", less = "<", contains = "~"
    }

    public let field: String
    public let op: Operator
    public let operand: String

    public init(_ field: String, _ op: Operator, _ operand: String) {
        self.field = field
        self.op = op
        self.operand = operand
    }

    /// Parses `date>=2027-01-01` or `name~text`: the first operator splits it; nil when there is none,
    /// or nothing before it.
    public init?(parsing text: String) {
        var earliest: (range: Range<String.Index>, op: Operator)?
        for op in Operator.allCases {
            guard let range = text.range(of: op.rawValue) else { continue }
            if let found = earliest, found.range.lowerBound <= range.lowerBound { continue }
            earliest = (range, op)
        }
        guard let (range, op) = earliest, range.lowerBound > text.startIndex else { return nil }
        self.init(String(text[..<range.lowerBound]), op, String(text[range.upperBound...]))
    }

    public var description: String { "\(field)\(op.rawValue)\(operand)" }

    /// Whether the record's field (or its id, for `id`) satisfies the condition.
    public func matches(_ record: Record) -> Bool {
        matches(field == "id" ? .string(record.id) : record.fields[field])
    }

    /// Whether the record's value satisfies the condition. A missing field (or null)
    /// satisfies only `!=`; numbers compare as numbers, strings (ISO dates among
    /// them) as text, an array when any of its elements does (`!=`: when none is equal).
    public func matches(_ candidate: JSONValue?) -> Bool {
        guard let candidate, candidate != .null else { return op == .notEqual }
        if case .array(let elements) = candidate {
            return op == .notEqual ? !elements.contains { FieldCondition(field, .equal, operand).matches($0) }
                : elements.contains { matches($0) }
        }
        if op == .contains {
            let text = candidate.stringValue ?? JSONWriter.string(candidate)
            return text.range(of: operand, options: .caseInsensitive) != nil
        }
        guard let order = order(of: candidate) else { return op == .notEqual }
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

    /// How a single (non-array) value compares with the operand: below (-1), equal (0), above (1),
    /// or nil when the two cannot be compared (a number with an operand that is not one; a boolean
    /// or an object, which are only equal or not).
    func order(of candidate: JSONValue) -> Int? {
        switch candidate {
        case .number(let number):
            return operandNumber.map { operand in number.doubleValue < operand ? -1 : number.doubleValue > operand ? 1 : 0 }
        case .string(let string):
            return string < operand ? -1 : string > operand ? 1 : 0
        case .bool(let bool):
            return operand == "true" || operand == "false" ? (String(bool) == operand ? 0 : nil) : nil
        default:
            return JSONWriter.string(candidate) == operand ? 0 : nil
        }
    }

    /// The operand as a number, when it is one.
    var operandNumber: Double? { Double(operand).flatMap { $0.isFinite ? $0 : nil } }
}
