import EventStore
import Foundation

/// `evsync scope`: what a store holds of an entity, from the next sync on (`Store.setScope`).
enum ScopeCommand {
    static let scope = Command(
        name: "scope", section: .server,
        usage: "evsync scope [<Entity> --where COND… | <Entity> --all] [--json]",
        summary: "sync only part of an entity",
        description: """
        With --where (the syntax of list --where; every condition must hold), the store holds only the records of
        the entity that meet them, from the next sync on: the server filters, so what does not match is never
        pulled. Records held here that the new scope leaves out leave the store at once, each with a `left` event,
        never as deletions (a record with a change not yet pushed stays). Adding conditions narrows the scope
        with no request; any other change, or --all (the whole entity again), makes the next sync read the entity
        from the start. A record an edit elsewhere moves out of the scope leaves at the next sync; one that moves
        in arrives. Without an entity, lists the scopes. Kinto filters =, <, <=, > and >=; a condition a
        server cannot express fails the sync (exit 64), naming what it can.
        """,
        positionals: 0...1,
        options: [
            Option("--where", value: "COND", help: "FIELD OP VALUE (OP one of = != < <= > >= ~), as for list; repeat: all must hold"),
            Option("--all", help: "hold the whole entity again"),
            Option("--json", help: #"setting: {"entity", "scope": [COND…] or null, "left"}; listing: {Entity: [COND…]}"#),
        ]
    ) { arguments, global in
        guard let name = arguments.positionals.first else {
            guard arguments.values("--where").isEmpty, !arguments.has("--all") else {
                throw CLIError(.usage, "evsync scope needs the entity whose scope to set, as in evsync scope Holiday --where 'date>=2027-01-01'")
            }
            let scopes = try global.openStore(create: false).scopes()
            if arguments.has("--json") {
                print(Output.json(.object(scopes.mapValues { .array($0.map { .string($0.description) }) })))
            } else if scopes.isEmpty {
                printError("evsync: every entity is held whole (evsync scope <Entity> --where COND sets a scope)")
            } else {
                for (entity, conditions) in scopes.sorted(by: { $0.key < $1.key }) {
                    print(Output.safe("\(entity)  " + conditions.map(\.description).joined(separator: " and ")))
                }
            }
            return
        }
        let texts = arguments.values("--where")
        guard texts.isEmpty == arguments.has("--all") else {
            throw CLIError(.usage, "evsync scope \(name) takes --where COND… (what to hold) or --all (all of it), one of the two")
        }
        let schema = try global.schemaRegistry().schema(named: name)
        let conditions = try texts.map { text throws(CLIError) in
            guard let condition = FieldCondition(parsing: text) else {
                throw CLIError(.usage, "--where takes FIELD OP VALUE with OP one of = != < <= > >= ~ (contains), as in 'date>=2027-01-01', not '\(text)'")
            }
            return condition
        }
        let store = try global.openStore(create: true)
        let left = try store.setScope(conditions.isEmpty ? nil : conditions, of: schema.name)
        if arguments.has("--json") {
            print(Output.json(["entity": .string(schema.name), "scope": conditions.isEmpty ? .null : .array(conditions.map { .string($0.description) }),
                               "left": .number(JSONNumber(left.count))]))
        } else {
            let what = conditions.isEmpty ? "all of it" : "the records where " + conditions.map(\.description).joined(separator: " and ")
            print(Output.safe("\(schema.name): this store holds \(what), from the next sync on"
                + (left.isEmpty ? "" : "; \(Plural.count(left.count, "record")) left it (not deleted: history says why)")))
        }
    }
}
