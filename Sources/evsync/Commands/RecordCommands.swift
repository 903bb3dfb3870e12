import EventStore
import EventSync
import KintoAdapter
import Foundation

/// add, edit, delete, show, list, import.
enum RecordCommands {
    static let add = Command(valueOptions: ["--id"]) { arguments, global in
        let words = try arguments.positionals(1, usage: "evsync add <Entity> [--id ID] field=value…")
        let fields = try assignments(words.dropFirst())
        let event = try global.openStore(create: true).add(words[0], id: arguments.value("--id"), fields: fields)
        print(event.recordID)
    }

    static let edit = Command(valueOptions: ["--unset"]) { arguments, global in
        let words = try arguments.positionals(2, usage: "evsync edit <Entity> <id> field=value… [--unset field…]")
        let fields = try assignments(words.dropFirst(2))
        guard !fields.isEmpty || !arguments.values("--unset").isEmpty else {
            throw CLIError(.usage, "nothing to change; usage: evsync edit <Entity> <id> field=value… [--unset field…]")
        }
        if try global.openStore(create: false).edit(words[0], id: words[1], set: fields, unset: arguments.values("--unset")) == nil {
            printError("evsync: no change: \(words[1]) already has those values")
        }
    }

    static let delete = Command { arguments, global in
        let words = try arguments.positionals(2, 2, usage: "evsync delete <Entity> <id>")
        try global.openStore(create: false).delete(words[0], id: words[1])
    }

    static let show = Command(valueOptions: ["--as-of"], flagOptions: ["--json"]) { arguments, global in
        let words = try arguments.positionals(2, 2, usage: "evsync show <Entity> <id> [--json] [--as-of SEQ|TIME]")
        let store = try global.openStore(create: false)
        guard let record = try store.record(words[0], id: words[1], asOf: try asOf(arguments)) else {
            throw CLIError(.noInput, "no \(try store.entity(words[0]).name) with id '\(words[1])'\(arguments.value("--as-of").map { " as of \($0)" } ?? "")")
        }
        if arguments.has("--json") {
            print(Output.json(.object(record.json)))
        } else {
            let schema = try store.entity(words[0])
            let names = ["id"] + schema.fieldNames.filter { record.fields[$0] != nil }
            let width = names.map(\.count).max() ?? 2
            for name in names {
                let value = name == "id" ? .string(record.id) : record.fields[name]
                print("\(name.padding(toLength: width, withPad: " ", startingAt: 0))  \(Output.cell(value, width: 200))")
            }
        }
    }

    static let list = Command(valueOptions: ["--as-of"], flagOptions: ["--json"]) { arguments, global in
        let words = try arguments.positionals(1, 1, usage: "evsync list <Entity> [--json] [--as-of SEQ|TIME]")
        let store = try global.openStore(create: false)
        let records = try store.records(words[0], asOf: try asOf(arguments))
        if arguments.has("--json") {
            print(Output.json(.array(records.map { .object($0.json) })))
        } else {
            let schema = try store.entity(words[0])
            let rows = records.map { record in [record.id] + schema.fieldNames.map { Output.cell(record.fields[$0]) } }
            print(Output.table(header: ["id"] + schema.fieldNames, rows: rows))
            print("(\(records.count) \(schema.name) record\(records.count == 1 ? "" : "s"))")
        }
    }

    static let importLines = Command { arguments, global in
        let words = try arguments.positionals(2, 2, usage: "evsync import <Entity> FILE|-")
        let descriptor: Int32
        if words[1] == "-" {
            descriptor = STDIN_FILENO
        } else {
            descriptor = open(words[1], O_RDONLY)
            guard descriptor >= 0 else {
                throw CLIError(.noInput, "cannot open \(words[1]): \(String(cString: strerror(errno)))")
            }
        }
        defer { if descriptor != STDIN_FILENO { close(descriptor) } }
        let store = try global.openStore(create: true)
        let count = try store.importRecords(words[0], from: descriptor)
        print("imported \(count) \(try store.entity(words[0]).name) record\(count == 1 ? "" : "s")")
    }

    /// `field=value` (a string) and `field:=json` (any JSON value), as httpie spells them.
    static func assignments(_ words: some Sequence<String>) throws -> JSONObject {
        var fields: JSONObject = [:]
        for word in words {
            guard let equals = word.firstIndex(of: "=") else {
                throw CLIError(.usage, "expected field=value or field:=json, got '\(word)'")
            }
            var name = String(word[..<equals])
            let text = String(word[word.index(after: equals)...])
            let value: JSONValue
            if name.hasSuffix(":") {
                name.removeLast()
                do {
                    value = try JSONParser.parse(text)
                } catch {
                    throw CLIError(.dataError, "field '\(name)': \(error)")
                }
            } else {
                value = .string(text)
            }
            guard !name.isEmpty else { throw CLIError(.usage, "missing field name in '\(word)'") }
            guard fields.updateValue(value, forKey: name) == nil else { throw CLIError(.usage, "field '\(name)' given twice") }
        }
        return fields
    }

    static func asOf(_ arguments: Arguments) throws -> LogPoint? {
        guard let text = arguments.value("--as-of") else { return nil }
        guard let point = LogPoint(text) else {
            throw CLIError(.usage, "--as-of takes an event number or an ISO 8601 date or time, not '\(text)'")
        }
        return point
    }
}
