/// One sort key of a query: a field, ascending or descending.
public struct SortKey: Sendable, Equatable {
    public let field: String
    public let descending: Bool

    public init(_ field: String, descending: Bool = false) {
        self.field = field
        self.descending = descending
    }

    /// Parses `date` or `-date` (descending).
    public init(parsing text: some StringProtocol) {
        descending = text.hasPrefix("-")
        field = String(descending ? text.dropFirst() : text[...])
    }

    /// Whether `a` comes before `b` by `keys`, then by id. A record without the field comes last
    /// either way, as SQL's NULLS LAST; numbers before strings, strings before other values.
    /// The order of `--sort` and of every query.
    public static func areInOrder(_ a: Record, _ b: Record, by keys: [SortKey]) -> Bool {
        for key in keys {
            let left = key.field == "id" ? .string(a.id) : a.fields[key.field]
            let right = key.field == "id" ? .string(b.id) : b.fields[key.field]
            let order = compare(left, right)
            if order != 0 { return (order < 0) != (key.descending && left != nil && right != nil) }
        }
        return a.id < b.id
    }

    /// Two values' order: nil last, then numbers, then strings, then the rest by their JSON text.
    static func compare(_ a: JSONValue?, _ b: JSONValue?) -> Int {
        switch (a, b) {
        case (nil, nil): return 0
        case (nil, _): return 1
        case (_, nil): return -1
        case (.number(let x)?, .number(let y)?): return x.doubleValue < y.doubleValue ? -1 : x.doubleValue > y.doubleValue ? 1 : 0
        case (.number?, _): return -1
        case (_, .number?): return 1
        case (.string(let x)?, .string(let y)?): return x < y ? -1 : x > y ? 1 : 0
        case (.string?, _): return -1
        case (_, .string?): return 1
        case (let x?, let y?):
            let (left, right) = (JSONWriter.string(x), JSONWriter.string(y))
            return left < right ? -1 : left > right ? 1 : 0
        }
    }
}
