import EventStore
import Foundation

/// add, edit, delete, show, list, import.
enum RecordCommands {
    static let add = Command(
        name: "add", section: .records,
        usage: "evsync add <Entity> [--id ID] field=value… [field:=json…] [--force] [--json]",
        summary: "create a record, print its id",
        description: """
        Creates a record and prints its id (a new UUID unless --id is given).
        field=value sets a string; field:=json sets any JSON value (e.g. observedBy:='["US"]').
        """,
        positionals: 1...Int.max,
        options: [
            Option("--id", value: "ID", help: "the record's id (letters, digits, _ and -)"),
            forceOption,
            Option("--json", help: "one object: {entity, id, seq, record} (see docs/cli.md)"),
        ]
    ) { arguments, global in
        let words = arguments.positionals
        let fields = try assignments(words.dropFirst())
        // Checked before the store is opened: a mistyped first `add` makes no store.
        let schema = try global.schemaRegistry().schema(named: words[0])
        try withJSONValueHint(schema: schema, words: words.dropFirst()) { try schema.validate(fields) }
        let store = try global.openStore(create: true)
        let (event, record) = try withJSONValueHint(schema: schema, words: words.dropFirst()) {
            try hintingForce(store, words[0]) {
                try store.added(words[0], id: arguments.value("--id"), fields: fields, overridingReadOnly: arguments.has("--force"))
            }
        }
        if arguments.has("--json") {
            print(changeJSON(entity: event.entity, id: event.recordID, seq: event.seq, record: record))
        } else {
            print(event.recordID)
        }
    }

    static let edit = Command(
        name: "edit", section: .records,
        usage: "evsync edit <Entity> <id> field=value… [field:=json…] [--unset field…] [--force] [--json]",
        summary: "change fields",
        description: """
        Changes fields of a record: field=value sets a string, field:=json any JSON value.
        Nothing is written when the values are already those (a note goes to stderr, exit 0).
        """,
        positionals: 2...Int.max,
        options: [
            Option("--unset", value: "field", help: "remove a field (repeat for more)"),
            forceOption,
            Option("--json", help: "one object: {entity, id, seq (null when nothing changed), record}"),
        ]
    ) { arguments, global in
        let words = arguments.positionals
        let fields = try assignments(words.dropFirst(2))
        guard !fields.isEmpty || !arguments.values("--unset").isEmpty else {
            throw arguments.usageError("nothing to change")
        }
        let store = try global.openStore(create: false)
        let (event, record) = try withJSONValueHint(schema: try store.entity(words[0]), words: words.dropFirst(2)) {
            try hintingForce(store, words[0]) {
                try store.edited(words[0], id: words[1], set: fields, unset: arguments.values("--unset"), overridingReadOnly: arguments.has("--force"))
            }
        }
        if arguments.has("--json") {
            print(changeJSON(entity: record.entity, id: record.id, seq: event?.seq, record: record))
        }
        if event == nil {
            printError("evsync: no change: \(words[1]) already has those values")
        }
    }

    static let delete = Command(
        name: "delete", section: .records,
        usage: "evsync delete <Entity> <id> [--force] [--json]",
        summary: "delete a record",
        description: "Deletes a record. Its events stay in the log; `history` still shows them.",
        positionals: 2...2,
        options: [forceOption, Option("--json", help: "one object: {entity, id, seq, record: null}")]
    ) { arguments, global in
        let words = arguments.positionals
        let store = try global.openStore(create: false)
        let event = try hintingForce(store, words[0]) { try store.deleted(words[0], id: words[1], overridingReadOnly: arguments.has("--force")) }
        if arguments.has("--json") {
            print(changeJSON(entity: event.entity, id: event.recordID, seq: event.seq, record: nil))
        }
    }

    /// `--force` of the commands that change records.
    static let forceOption = Option("--force", help: "make the change even if the last sync learned that the server lets you only "
        + "read this entity (status shows it): kept here, and held at sync until access is granted")

    /// Runs a change; refused because the entity is read-only for this account, the error says how to make it all the same.
    static func hintingForce<T>(_ store: Store, _ entity: String, _ change: () throws -> T) throws -> T {
        do {
            return try change()
        } catch let error as StoreError where error.code == .readOnly && (try? store.access(of: entity)) != nil {
            throw CLIError(.cannotWrite, error.message + " (--force)")
        }
    }

    /// What `add`, `edit` and `delete --json` print: `{"entity", "id", "seq", "record"}`, `seq` the event
    /// written (null when none was), `record` the record as the change left it (`id` and fields; null once deleted).
    static func changeJSON(entity: String, id: String, seq: UInt64?, record: Record?) -> String {
        Output.json([
            "entity": .string(entity),
            "id": .string(id),
            "seq": seq.map { .number(JSONNumber($0)) } ?? .null,
            "record": record.map { .object($0.json) } ?? .null,
        ])
    }

    /// Runs `body`; when it fails on a field given as `field=value` (a string) that the schema
    /// wants as another type, the error says how to give a JSON value: `observedBy:='[…]'`.
    @discardableResult
    static func withJSONValueHint<T>(schema: EntitySchema, words: some Sequence<String>, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            let failure = CLIError(error)
            guard failure.code == .dataError else { throw error }
            for word in words {
                guard let equals = word.firstIndex(of: "="), !word[..<equals].hasSuffix(":") else { continue }
                let field = String(word[..<equals]), text = String(word[word.index(after: equals)...])
                guard schema.hasField(field), (try? schema.validate(field: field, value: .string(text))) == nil else { continue }
                let example: String
                if let parsed = try? JSONParser.parse(text), (try? schema.validate(field: field, value: parsed)) != nil {
                    example = text
                } else if (try? schema.validate(field: field, value: .array([]))) != nil {
                    example = "[…]"
                } else if (try? schema.validate(field: field, value: .object([:]))) != nil {
                    example = "{…}"
                } else {
                    continue
                }
                throw CLIError(failure.code, "\(failure.message) (use \(field):='\(example)' for JSON values)")
            }
            throw error
        }
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
            // Then the fields this schema does not declare, carried from a newer app or an older schema.
            let declared = schema.fieldNames.filter { record.fields[$0] != nil }
            let names = ["id"] + declared + record.fields.keys.filter { !schema.hasField($0) }.sorted()
            let width = names.map(\.count).max() ?? 2
            // Long values are shortened on a terminal only: through a pipe nothing is cut.
            let longest = Terminal.columns == nil ? Int.max : 200
            for name in names {
                let value = name == "id" ? .string(record.id) : record.fields[name]
                print("\(name.padding(toLength: width, withPad: " ", startingAt: 0))  \(Output.cell(value, width: longest))")
            }
        }
    }

    static let importLines = Command(
        name: "import", section: .records,
        usage: "evsync import <Entity> FILE|- [--force] [--json]",
        summary: "JSON Lines or an array, all or nothing",
        description: """
        Imports JSON Lines (one object per line: the fields and optionally `id`), or a JSON array of such
        objects (what `list --json` prints), from FILE or standard input (-).
        The whole import is one transaction: one bad record and nothing is written; the error says
        FILE:LINE: (for an array, FILE: element N:). On a terminal, a large file shows its progress on stderr.
        """,
        positionals: 2...2,
        options: [forceOption, Option("--json", help: "one object: {entity, imported}")]
    ) { arguments, global in
        let words = arguments.positionals
        let name = words[1] == "-" ? "<stdin>" : words[1]
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
        let store = try global.openStoreForImport()
        let schema = try store.entity(words[0])
        let count: Int
        let input: ImportInput
        do {
            input = try ImportInput(descriptor, store: store)
        } catch {
            throw CLIError(CLIError(error).code, "\(Output.safe(name)): \(CLIError(error).message)")
        }
        defer { input.close() }
        do {
            let progress = ImportProgress.start(name: name, descriptor: input.descriptor)
            defer { progress?.stop() }
            count = try hintingForce(store, schema.name) {
                try store.importRecords(schema.name, from: input.descriptor, overridingReadOnly: arguments.has("--force"))
            }
        } catch {
            throw input.locate(CLIError(error), in: name)
        }
        if arguments.has("--json") {
            print(Output.json(["entity": .string(schema.name), "imported": .number(JSONNumber(count))]))
        } else {
            print("imported \(Plural.count(count, "\(schema.name) record"))")
        }
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
        "--as-of", value: "SEQ|TIME", help: "as it was after event SEQ, or at an ISO 8601 date or time (local without an offset; HH:MM is today)")

    static func asOf(_ arguments: Arguments) throws -> LogPoint? {
        guard let text = arguments.value("--as-of") else { return nil }
        guard let point = LocalTime.logPoint(text) else {
            throw CLIError(.usage, "--as-of takes an event number, an ISO 8601 date or time (local without an offset) or HH:MM, not '\(text)'")
        }
        return point
    }
}
