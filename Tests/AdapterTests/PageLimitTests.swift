import EventSync
import Testing

/// `PageLimit`, the size of a pull's next page, as steps: `big` a page over the cap (the answer: asked again, or
/// `skip` for one record alone over it), `fit R B` a page of R records in B bytes that fit; each then the limit.
struct PageLimitTests {
    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        var largest = 1000
        var cap = 1000
        var steps: [String]
        var trace: [String]
        var testDescription: String { name }
    }

    static func run(_ row: Row) -> [String] {
        var limit = PageLimit(largest: row.largest, cap: row.cap)
        var trace = ["\(limit.current)"]
        for step in row.steps {
            let words = step.split(separator: " ")
            if words[0] == "big" {
                trace.append(limit.tooLarge() ? "again \(limit.current)" : "skip")
            } else {
                limit.fit(records: Int(words[1]) ?? 0, bytes: Int(words[2]) ?? 0)
                trace.append("\(limit.current)")
            }
        }
        return trace
    }

    static let rows: [Row] = [
        Row(name: "pages that fit keep the largest limit", steps: ["fit 1000 900", "fit 1000 999"], trace: ["1000", "1000", "1000"]),
        Row(name: "a page over the cap halves the limit, down to one, then one record alone is skipped", largest: 8,
            steps: ["big", "big", "big", "big"], trace: ["8", "again 4", "again 2", "again 1", "skip"]),
        Row(name: "an odd limit halves down", largest: 5, steps: ["big", "big", "big"], trace: ["5", "again 2", "again 1", "skip"]),
        Row(name: "after a skip, small records grow the limit back, doubling each page", largest: 8, cap: 1000,
            steps: ["big", "big", "big", "big", "fit 1 10", "fit 2 20", "fit 4 40", "fit 8 80"],
            trace: ["8", "again 4", "again 2", "again 1", "skip", "2", "4", "8", "8"]),
        Row(name: "it grows back only as far as half the cap holds such records", largest: 1000, cap: 1000,
            steps: ["big", "big", "big", "fit 125 250", "fit 250 500"],
            trace: ["1000", "again 500", "again 250", "again 125", "250", "250"]),
        Row(name: "records larger than half the cap keep the limit where it fit", largest: 1000, cap: 1000,
            steps: ["big", "fit 500 900"], trace: ["1000", "again 500", "500"]),
        Row(name: "an empty page changes nothing", largest: 4, steps: ["big", "fit 0 0"], trace: ["4", "again 2", "2"]),
        Row(name: "a limit of one record: one page over the cap is that record alone", largest: 1, steps: ["big"], trace: ["1", "skip"]),
    ]

    @Test("the limit of a pull's next page", arguments: rows)
    func steps(row: Row) {
        #expect(Self.run(row) == row.trace)
    }
}
