import EventStore
import EventSync
import KintoAdapter
import Foundation

extension CommandLine {
    /// Runs one command and returns its exit status; errors become one line on stderr.
    static func run(_ words: [String]) -> Int32 {
        do {
            try dispatch(words)
            return 0
        } catch {
            let error = CLIError(error)
            printError("evsync: \(error.message)")
            return error.code.rawValue
        }
    }

    static func dispatch(_ words: [String]) throws {
        // Global options may stand before the command.
        var words = words[...]
        var global = GlobalOptions()
        while let word = words.first, word.hasPrefix("-") {
            words.removeFirst()
            switch word {
            case "--help", "-h": print(Help.overview); return
            case "--version": print(Help.version); return
            case "--store", "--schemas":
                guard let value = words.popFirst() else { throw CLIError(.usage, "option \(word) needs a value") }
                word == "--store" ? (global.store = value) : (global.schemas = value)
            case let word where word.hasPrefix("--store="): global.store = String(word.dropFirst("--store=".count))
            case let word where word.hasPrefix("--schemas="): global.schemas = String(word.dropFirst("--schemas=".count))
            default: throw CLIError(.usage, "unknown option \(word)")
            }
        }
        guard let command = words.popFirst() else {
            print(Help.overview)
            throw CLIError(.usage, "no command given")
        }
        var rest = Array(words)
        if command == "help" {
            print(rest.first.flatMap { Help.commands[$0] } ?? Help.overview)
            return
        }
        guard let handler = Commands.all[command] else { throw CLIError(.usage, "unknown command '\(command)' (see evsync --help)") }
        if command == "log" {
            guard rest.first == "tail" || rest.contains(where: { $0 == "--help" || $0 == "-h" }) else {
                throw CLIError(.usage, "usage: evsync log tail [-n N] [--follow] [--json]")
            }
            if rest.first == "tail" { rest.removeFirst() }
        }
        if rest.contains("--help") || rest.contains("-h") {
            print(Help.commands[command] ?? Help.overview)
            return
        }
        let arguments = try Arguments(rest, valueOptions: handler.valueOptions.union(GlobalOptions.valueOptions),
                                      flagOptions: handler.flagOptions)
        global.merge(arguments)
        try handler.run(arguments, global)
    }
}

/// `--store` and `--schemas`, from the command line (before or after the command) or the environment.
struct GlobalOptions {
    static let valueOptions: Set<String> = ["--store", "--schemas"]
    var store: String?
    var schemas: String?

    mutating func merge(_ arguments: Arguments) {
        if let value = arguments.value("--store") { store = value }
        if let value = arguments.value("--schemas") { schemas = value }
    }

    var storeDirectory: String {
        store ?? ProcessInfo.processInfo.environment["EVSYNC_STORE"].flatMap { $0.isEmpty ? nil : $0 } ?? ".evsync"
    }

    func schemaRegistry() throws -> SchemaRegistry {
        guard let directory = schemas ?? ProcessInfo.processInfo.environment["EVSYNC_SCHEMAS"], !directory.isEmpty else {
            return SchemaRegistry()
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw CLIError(.noInput, "no schema directory at \(directory)")
        }
        return try SchemaRegistry(directory: directory)
    }

    /// Opens the store; commands that only read pass `create: false`, so a missing store is exit 66.
    func openStore(create: Bool) throws -> Store {
        try Store(directory: storeDirectory, schemas: try schemaRegistry(), create: create)
    }
}

func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
