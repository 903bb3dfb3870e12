import EventStore

/// schema check: what a changed schema file makes of the records already held.
enum SchemaCommand {
    static let check = Command(
        name: "schema check", section: .records,
        usage: "evsync schema check [<Entity>] [--json]",
        summary: "the records a schema change left behind",
        description: """
        Reads every record (of one entity, or of all) through the current schemas and names the values they
        now refuse and the required fields missing, by record and field. Fields a schema does not declare (a
        newer app's, or a field removed from the schema) are counted: they are carried, not a problem.
        Records still holding a renamed field under its former name (x-evsync-renamed-from) are listed.
        Changes nothing. Exits 0 when every record fits, 1 when some do not or hold a former name.
        """,
        positionals: 0...1,
        options: [Option("--json", help: "an array, one object per entity: {entity, records, problems: [{id, field, reason}], undeclared: {field: records}, renamed: [{id, field, from}]}")]
    ) { arguments, global in
        let checks = try global.openStore(create: false).checkSchemas(arguments.positionals.first)
        if arguments.has("--json") {
            print(try AuditJSON.text(checks))
        } else {
            for check in checks {
                let problems = check.problems.isEmpty ? "all fit" : "\(Plural.count(check.problems.count, "problem")):"
                print("\(check.entity): \(Plural.count(check.records, "record")), \(problems)")
                if !check.problems.isEmpty {
                    var table = TableWriter(header: ["id", "field", "problem"], columns: Terminal.columns) { print("  " + $0) }
                    for problem in check.problems {
                        table.add([Output.safe(problem.id), Output.safe(problem.field), Output.safe(problem.reason)])
                    }
                    table.finish()
                }
                if !check.renamed.isEmpty {
                    var table = TableWriter(header: ["id", "field", "stored as"], columns: Terminal.columns) { print("  " + $0) }
                    for renamed in check.renamed {
                        table.add([Output.safe(renamed.id), Output.safe(renamed.field), Output.safe(renamed.from)])
                    }
                    table.finish()
                }
                if !check.undeclared.isEmpty {
                    let carried = check.undeclared.sorted { $0.key < $1.key }
                        .map { "\(Output.safe($0.key)) (\(Plural.count($0.value, "record")))" }
                    print("  carried, not declared: \(carried.joined(separator: ", "))")
                }
            }
        }
        let problems = checks.reduce(0) { $0 + $1.problems.count }
        if problems > 0 {
            throw CLIError(.failure, "\(Plural.count(problems, "value")) the schemas refuse (see above): edit those records, or the schema")
        }
        let renamed = checks.reduce(0) { $0 + $1.renamed.count }
        if renamed > 0 {
            throw CLIError(.failure, "\(Plural.count(renamed, "field")) still under a former name (see above): read under the new one while the schema names the old one")
        }
    }
}
