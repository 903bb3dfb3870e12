import Foundation
import Testing
@testable import EventStore
import TestSupport

/// Thousands of random operations through the public API, checked against a
/// plain dictionary model of what the tables must hold.
@Suite("Store property test")
struct StorePropertyTests {
    static let entities = ["Holiday", "Birthday"]
    static let optionalFields = [
        "Holiday": ["details", "wikipediaLink", "observedBy", "image"],
        "Birthday": ["giftIdeas", "facebook", "image"],
    ]

    /// What the log must say: live records per entity, and how many events each (entity, id) has had.
    struct Model {
        var live: [String: [String: JSONObject]] = ["Holiday": [:], "Birthday": [:]]
        var eventCounts: [String: Int] = [:]
        var events: UInt64 = 0

        mutating func record(_ entity: String, _ id: String, _ fields: JSONObject?) {
            live[entity]![id] = fields
            eventCounts["\(entity)/\(id)", default: 0] += 1
            events += 1
        }
    }

    @Test("random add/edit/delete match a model, and the views survive verification and rebuilding")
    func randomOperations() throws {
        try withTemporaryStore { store, _ in
            var random = SplitMix64(seed: 0x5EED_CAFE)
            var model = Model()
            var checkpoints: [(seq: UInt64, live: [String: [String: JSONObject]])] = []
            var outcomes: [String: Int] = [:]

            for step in 1...3_000 {
                let entity = Self.entities[Int.random(in: 0..<2, using: &random)]
                let ids = Array(model.live[entity]!.keys).sorted()
                let roll = Int.random(in: 0..<100, using: &random)
                if ids.isEmpty || roll < 35 {
                    // Add, with a pooled id (which may be live: a duplicate) or a generated one.
                    let id: String? = Int.random(in: 0..<5, using: &random) == 0 ? nil : "r\(Int.random(in: 0..<300, using: &random))"
                    let fields = Self.randomRecord(entity, using: &random)
                    if let id, model.live[entity]![id] != nil {
                        let error = try #require(throws: StoreError.self) { try store.add(entity, id: id, fields: fields) }
                        #expect(error.code == .invalidData)
                        outcomes["duplicate add", default: 0] += 1
                    } else {
                        let event = try store.add(entity, id: id, fields: fields)
                        #expect(event.seq == model.events + 1)
                        #expect(event.set == fields)
                        if let id { #expect(event.recordID == id) }
                        model.record(entity, event.recordID, fields)
                        outcomes["add", default: 0] += 1
                    }
                } else if roll < 75 {
                    // Edit: new values, values already there, removals of fields that may be absent.
                    let id = ids[Int.random(in: 0..<ids.count, using: &random)]
                    let current = model.live[entity]![id]!
                    let template = Self.randomRecord(entity, using: &random)
                    var set: JSONObject = [:]
                    for name in template.keys where Int.random(in: 0..<3, using: &random) == 0 {
                        set[name] = Bool.random(using: &random) ? template[name] : (current[name] ?? template[name])
                    }
                    let unset = Self.optionalFields[entity]!.filter { Int.random(in: 0..<5, using: &random) == 0 && set[$0] == nil }
                    var expected = current
                    for (name, value) in set { expected[name] = value }
                    for name in unset { expected[name] = nil }
                    let event = try store.edit(entity, id: id, set: set, unset: unset)
                    if expected == current {
                        #expect(event == nil)
                        outcomes["edit without change", default: 0] += 1
                    } else {
                        let event = try #require(event)
                        #expect(event.seq == model.events + 1)
                        #expect(event.kind == .updated)
                        #expect(event.unset == unset.filter { current[$0] != nil }.sorted())
                        model.record(entity, id, expected)
                        outcomes["edit", default: 0] += 1
                    }
                } else if roll < 90 {
                    let id = ids[Int.random(in: 0..<ids.count, using: &random)]
                    let event = try store.delete(entity, id: id)
                    #expect(event.seq == model.events + 1)
                    model.record(entity, id, nil)
                    outcomes["delete", default: 0] += 1
                } else {
                    // Operations that must fail and write nothing.
                    let id = ids[Int.random(in: 0..<ids.count, using: &random)]
                    let attempt: () throws -> Void
                    let code: StoreError.Code
                    switch Int.random(in: 0..<5, using: &random) {
                    case 0: (attempt, code) = ({ try store.edit(entity, id: id, unset: ["name"]) }, .invalidData)
                    case 1: (attempt, code) = ({ try store.edit(entity, id: id, set: ["name": ""]) }, .invalidData)
                    case 2: (attempt, code) = ({ try store.edit(entity, id: id, set: ["date": "2026-02-29"]) }, .invalidData)
                    case 3: (attempt, code) = ({ try store.edit(entity, id: "missing-\(step)", set: ["name": "x"]) }, .notFound)
                    default: (attempt, code) = ({ try store.delete(entity, id: "missing-\(step)") }, .notFound)
                    }
                    let error = try #require(throws: StoreError.self) { try attempt() }
                    #expect(error.code == code)
                    outcomes["refused", default: 0] += 1
                }
                if step % 500 == 0 { checkpoints.append((model.events, model.live)) }
            }

            // The run exercised every path.
            for outcome in ["add", "duplicate add", "edit", "edit without change", "delete", "refused"] {
                #expect(outcomes[outcome, default: 0] > 20, "\(outcome): \(outcomes)")
            }
            #expect(try store.lastSeq() == model.events)

            func checkTables(_ label: String) throws {
                for entity in Self.entities {
                    #expect(try store.recordMap(entity) == model.live[entity]!, "\(label): \(entity)")
                    let ids = try store.records(entity).map(\.id)
                    #expect(ids == ids.sorted(), "\(label): rows come sorted by id")
                    // The as-of fold over the whole log agrees with the views, order included.
                    #expect(try store.records(entity, asOf: .seq(model.events)) == store.records(entity), "\(label): \(entity) as of now")
                }
            }
            try checkTables("after the run")
            #expect(try store.verifyViews().isEmpty)

            // Every live record is pending (nothing was ever synced); created-then-deleted ones are not.
            let status = try store.status()
            let liveKeys = Self.entities.flatMap { entity in model.live[entity]!.keys.map { "\(entity)/\($0)" } }
            #expect(status.events == model.events)
            #expect(status.records == model.live.mapValues(\.count))
            #expect(status.pendingRecords == liveKeys.count)
            #expect(status.unacknowledgedEvents == liveKeys.reduce(0) { $0 + model.eventCounts[$1]! })

            // The past, at each checkpoint.
            for checkpoint in checkpoints {
                for entity in Self.entities {
                    #expect(try store.recordMap(entity, asOf: .seq(checkpoint.seq)) == checkpoint.live[entity]!, "as of \(checkpoint.seq)")
                    for id in checkpoint.live[entity]!.keys.sorted().prefix(5) {
                        #expect(try store.record(entity, id: id, asOf: .seq(checkpoint.seq))?.fields == checkpoint.live[entity]![id])
                    }
                }
            }

            // History lists each record's events in log order.
            for id in ["r0", "r1", "r2", "r150", "r299"] {
                let history = try store.history(of: id)
                let expected = Self.entities.reduce(0) { $0 + model.eventCounts["\($1)/\(id)", default: 0] }
                #expect(history.count == expected, "history of \(id)")
                #expect(zip(history, history.dropFirst()).allSatisfy { $0.seq < $1.seq })
                #expect(history.allSatisfy { $0.recordID == id })
            }

            #expect(try store.rebuildViews() == model.events)
            try checkTables("after rebuilding")
            #expect(try store.verifyViews().isEmpty)
            #expect(try store.status() == status)
        }
    }

    static func randomRecord(_ entity: String, using random: inout SplitMix64) -> JSONObject {
        var fields: JSONObject = ["name": .string(randomText(nonEmpty: true, using: &random)), "date": .string(randomDate(using: &random))]
        func maybe(_ name: String, _ value: @autoclosure () -> JSONValue) {
            if Bool.random(using: &random) { fields[name] = value() }
        }
        switch entity {
        case "Holiday":
            maybe("details", .string(randomText(nonEmpty: false, using: &random)))
            maybe("wikipediaLink", .string("https://en.wikipedia.org/wiki/Page_\(Int.random(in: 0..<1000, using: &random))"))
            maybe("observedBy", .array((0..<Int.random(in: 0...3, using: &random)).map { _ in .string(randomText(nonEmpty: true, using: &random)) }))
        default:
            maybe("giftIdeas", .string(randomText(nonEmpty: false, using: &random)))
            maybe("facebook", .string("fb.\(Int.random(in: 0..<1000, using: &random))"))
        }
        maybe("image", .string(Data((0..<Int.random(in: 0...24, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }).base64EncodedString()))
        return fields
    }

    static func randomText(nonEmpty: Bool, using random: inout SplitMix64) -> String {
        let pool: [Unicode.Scalar] = Array("abc XYZ 019-_".unicodeScalars) + ["\"", "\\", "\n", "\t", "\u{1}", "é", "東", "😀", "𝄞"]
        let count = Int.random(in: (nonEmpty ? 1 : 0)...10, using: &random)
        var scalars = String.UnicodeScalarView()
        for _ in 0..<count { scalars.append(pool[Int.random(in: 0..<pool.count, using: &random)]) }
        return String(scalars)
    }

    static func randomDate(using random: inout SplitMix64) -> String {
        let year = Int.random(in: 1900...2100, using: &random)
        let month = Int.random(in: 1...12, using: &random)
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
        let length = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        let day = Int.random(in: 1...length, using: &random)
        func pad(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(year)-\(pad(month))-\(pad(day))"
    }
}
