import CTerminal
import EventStore
import Foundation

/// list: a table for people, a JSON array for scripts, both streamed.
enum ListCommand {
    static let list = Command(
        name: "list", section: .records,
        usage: "evsync list <Entity> [--json] [--as-of SEQ|TIME] [--where COND…] [--sort FIELDS] [--limit N] [--fields a,b] [--no-pager]",
        summary: "a table, now or then",
        description: """
        Lists the records of an entity, sorted by id, as they are read: the first row appears at once
        and memory stays flat whatever the table's size (--sort and --as-of read the whole table first;
        a condition on a field the schema indexes, x-evsync-index, reads only the records it selects).
        For people: a table fitted to the terminal (COLUMNS, else its width), through PAGER (default
        `less -FRX`) when standard output is a terminal, and the count on stderr. --where takes
        FIELD OP VALUE, OP one of = != < <= > >= and ~ (contains, any case): numbers compare as numbers,
        text (and ISO dates) as text, an array when one of its elements matches; repeat it to require all.
        """,
        positionals: 1...1,
        options: [
            Option("--json", help: "an array of objects, each with `id` and the fields"),
            RecordCommands.asOfOption,
            Option("--where", value: "COND", help: "only records where FIELD OP VALUE holds, e.g. 'date>=2027-01-01', name~easter"),
            Option("--sort", value: "FIELDS", help: "order by these fields, -FIELD for descending (e.g. date,-name); then by id"),
            Option("--limit", "-n", value: "N", help: "at most N records"),
            Option("--fields", value: "a,b", help: "only these columns (or JSON keys), in this order"),
            Option("--no-pager", help: "never page the table"),
        ]
    ) { arguments, global in
        let store = try global.openStore(create: false)
        let schema = try store.entity(arguments.positionals[0])
        let query = try RecordQuery(arguments, schema: schema)
        let asOf = try RecordCommands.asOf(arguments)
        let json = arguments.has("--json")

        let printer = RecordPrinter(query: query, header: query.fields ?? ["id"] + schema.fieldNames, json: json,
                                    columns: Terminal.columns)
        let pager = json ? nil : Pager.start(disabled: arguments.has("--no-pager"))
        do {
            if asOf == nil, query.sort.isEmpty, !query.usesIndex {
                try store.forEachRecord(schema.name, printer.print)
            } else {
                for record in try store.records(query.query, asOf: asOf) where !printer.print(record) { break }
            }
        } catch {
            // The pager must not keep the terminal once evsync has exited with its error.
            pager?.finish()
            throw error
        }
        printer.finish()
        pager?.finish()
        guard !json, !printer.outputClosed else { return }
        printError("(\(Plural.count(printer.shown, "\(schema.name) record"))\(printer.limitReached ? ", --limit reached" : ""))")
        if !printer.hiddenColumns.isEmpty {
            printError("(too wide to show: \(printer.hiddenColumns.joined(separator: ", ")); pick columns with --fields)")
        }
    }
}

/// Prints records as they come: a JSON array, or a table's rows.
private final class RecordPrinter {
    let query: RecordQuery
    let header: [String]
    let json: Bool
    private var table: TableWriter
    private(set) var shown = 0
    private(set) var outputClosed = false
    var hiddenColumns: [String] { table.hidden }
    var limitReached: Bool { query.limit.map { shown >= $0 } ?? false }

    init(query: RecordQuery, header: [String], json: Bool, columns: Int?) {
        self.query = query
        self.header = header
        self.json = json
        table = TableWriter(header: header.map(Output.safe), columns: columns) { Swift.print($0) }
    }

    /// Prints one record if it matches; false once enough are shown or nobody reads any more.
    func print(_ record: Record) -> Bool {
        guard query.matches(record) else { return true }
        guard !limitReached else { return false }
        if json {
            Swift.print((shown == 0 ? "[" : ",") + Output.json(.object(query.json(record))), terminator: "")
        } else {
            table.add(header.map { $0 == "id" ? Output.safe(record.id) : Output.cell(record.fields[$0]) })
        }
        shown += 1
        // A reader that went away (`| head`, a pager quit early): stop reading the store.
        outputClosed = evsync_stdout_failed() != 0
        return !outputClosed && !limitReached
    }

    func finish() {
        if json { Swift.print(shown == 0 ? "[]" : "]") } else { table.finish() }
    }
}
