import EventStore
import Foundation

/// add, edit, delete, show, list, import.
enum RecordCommands {
    static let add = Command(
        name: "add", section: .records,
        usage: "evsync add <Entity> [--id ID] field=value… [field:=json…]",
        summary: "create a record, print its id",
        description: """
        Creates a record and prints its id (a new UUID unless --id is given).
        field=value sets a string; field:=json sets any JSON value (e.g. observedBy:='["US"]').
        """,
        positionals: 1...Int.max,
        options: [Option("--id", value: "ID", help: "the record's id (letters, digits, _ and -)")]
    ) { arguments, global in
        let words = arguments.positionals
        let fields = try assignments(words.dropFirst())
        let event = try global.openStore(create: true).add(words[0], id: arguments.value("--id"), fields: fields)
        print(event.recordID)
    }

    static let edit = Command(
        name: "edit", section: .records,
        usage: "evsync edit <Entity> <id> field=value… [field:=json…] [--unset field…]",
        summary: "change fields",
        description: """
        Changes fields of a record: field=value sets a string, field:=json any JSON value.
        Nothing is written when the values are already those (a note goes to stderr, exit 0).
        """,
        positionals: 2...Int.max,
        options: [Option("--unset", value: "field", help: "remove a field (repeat for more)")]
    ) { arguments, global in
        let words = arguments.positionals
        let fields = try assignments(words.dropFirst(2))
        guard !fields.isEmpty || !arguments.values("--unset").isEmpty else {
            throw arguments.usageError("nothing to change")
        }
        if try global.openStore(create: false).edit(words[0], id: words[1], set: fields, unset: arguments.values("--unset")) == nil {
            printError("evsync: no change: \(words[1]) already has those values")
        }
    }

    static let delete = Command(
        name: "delete", section: .records,
        usage: "evsync delete <Entity> <id>",
        summary: "delete a record",
        description: "Deletes a record. Its events stay in the log; `history` still shows them.",
        positionals: 2...2
    ) { arguments, global in
        let words = arguments.positionals
        try global.openStore(create: false).delete(words[0], id: words[1])
    }

    static let show = Command(
        name: "show", section: .records,
        usage: "evsync show <Entity> <id> [--json] [--as-of SEQ|TIME]",
        summary: "one record, now or then",
        description: "Shows one record, one field a line.",
        positionals: 2...2,
        options: [
            Option("--json", help: "an object with `id` and the fields"),
            asOfOption,
        ]
    ) { arguments, global in
        let words = arguments.positionals
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

    static let importLines = Command(
        name: "import", section: .records,
        usage: "evsync import <Entity> FILE|-",
        summary: "JSON Lines, all or nothing",
        description: """
        Imports JSON Lines (one object per line: the fields and optionally `id`) from FILE or standard input (-).
        The whole import is one transaction: one bad line and nothing is written; the error names the line.
        """,
        positionals: 2...2
    ) { arguments, global in
        let words = arguments.positionals
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

    static let asOfOption = Option(
        "--as-of", value: "SEQ|TIME", help: "as it was after event SEQ, or at an ISO 8601 date or time")

    static func asOf(_ arguments: Arguments) throws -> LogPoint? {
        guard let text = arguments.value("--as-of") else { return nil }
        guard let point = LogPoint(text) else {
            throw CLIError(.usage, "--as-of takes an event number or an ISO 8601 date or time, not '\(text)'")
        }
        return point
    }
}
