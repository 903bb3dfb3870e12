import EventStore
import Foundation

extension CommandLine {
    /// The arguments after the program's name; nil in their place when one is
    /// not valid UTF-8. `CommandLine.arguments` would have replaced the bad
    /// bytes with U+FFFD, a value nobody typed (and a path that is not the file).
    static var validUTF8Arguments: [String?] {
        (1..<Int(argc)).map { index in unsafeArgv[index].flatMap { String(validatingCString: $0) } }
    }

    /// Runs one command and returns its exit status; errors become one line on stderr.
    static func run(_ words: [String?]) -> Int32 {
        do {
            var valid: [String] = []
            for (position, word) in words.enumerated() {
                guard let word else { throw CLIError(.dataError, "argument \(position + 1) is not valid UTF-8") }
                valid.append(word)
            }
            try dispatch(valid)
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
            if Help.helpOption.names.contains(word) { print(Help.overview); return }
            if word == "--version" { print(Help.version); return }
            let name = word.split(separator: "=", maxSplits: 1).first.map(String.init) ?? word
            guard GlobalOptions.options.contains(where: { $0.name == name }) else {
                let known = (GlobalOptions.options + [Help.helpOption]).flatMap(\.names) + ["--version"]
                throw CLIError(.usage, "unknown option \(name)\(Suggestion.didYouMean(name, among: known))")
            }
            guard let value = name == word ? words.popFirst() : String(word.dropFirst(name.count + 1)) else {
                throw CLIError(.usage, "option \(word) needs a value")
            }
            global.set(name, value)
        }
        guard let word = words.popFirst() else {
            print(Help.overview)
            throw CLIError(.usage, "no command given")
        }
        var rest = Array(words)
        // `--version` anywhere before `--`, as after a command (`evsync list --version`).
        if (rest.firstIndex(of: "--") ?? rest.endIndex) > (rest.firstIndex(of: "--version") ?? rest.endIndex) {
            print(Help.version)
            return
        }
        if word == "__complete" {
            CompletionsCommand.complete(rest, global)
            return
        }
        if word == "help" {
            // `help --man`: the man page, for Tools/install and packagers.
            if rest.first == "--man" { print(ManPage.text, terminator: ""); return }
            print(rest.first.flatMap { Commands.named($0, then: rest.dropFirst().first) }.map(Help.text) ?? Help.overview)
            return
        }
        guard let command = Commands.named(word, then: rest.first) else {
            throw CLIError(.usage, "unknown command '\(word)'\(Commands.suggestion(for: word)) (see evsync --help)")
        }
        let wantsHelp = rest.contains { Help.helpOption.names.contains($0) }
        // A command named by more than one word (`log tail`) needs them all, unless help is asked for.
        for subcommand in command.words.dropFirst() {
            if rest.first == subcommand {
                rest.removeFirst()
            } else if !wantsHelp {
                let group = Commands.all.filter { $0.words.first == word }.map { "`\($0.name)`" }
                throw CLIError(.usage, "expected \(group.joined(separator: " or ")); usage: \(command.usage)")
            }
        }
        if wantsHelp {
            print(Help.text(for: command))
            return
        }
        let arguments = try Arguments(rest, options: command.options + GlobalOptions.options, usage: command.usage)
        try arguments.checkPositionals(command.positionals)
        global.merge(arguments)
        try command.run(arguments, global)
    }
}

/// `--store` and `--schemas`, from the command line (before or after the command) or the environment.
struct GlobalOptions {
    /// Accepted by every command, before or after its name.
    static let options = [
        Option("--store", value: "DIR", help: "the store (or EVSYNC_STORE; default ./.evsync)"),
        Option("--schemas", value: "DIR", help: "extra entity schemas (or EVSYNC_SCHEMAS)"),
    ]
    var store: String?
    var schemas: String?

    mutating func set(_ name: String, _ value: String) {
        if name == "--store" { store = value } else if name == "--schemas" { schemas = value }
    }

    mutating func merge(_ arguments: Arguments) {
        for option in Self.options {
            if let value = arguments.value(option.name) { set(option.name, value) }
        }
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
        return try SchemaRegistry(directory: directory, remoteProtocols: RemoteFactory.schemaProtocols)
    }

    /// Opens the store; commands that only read pass `create: false`, so a missing store is exit 66.
    func openStore(create: Bool) throws -> Store {
        do {
            return try announcingCreation(create) { try Store(directory: storeDirectory, configuration: try storeConfiguration(create: create)) }
        } catch let error as StoreError where error.code == .notFound && error.message.hasPrefix("no store at") {
            // Said to a person who may not know how stores come about.
            throw CLIError(.noInput, "\(error.message) (`evsync add` or `evsync import` creates one; --store DIR or EVSYNC_STORE picks another)")
        }
    }

    /// Opens (creating if needed) the store for `import`, whose one transaction writes its pages in place
    /// (see `Store.init(importingInto:)`).
    func openStoreForImport() throws -> Store {
        try announcingCreation(true) { try Store(importingInto: storeDirectory, configuration: try storeConfiguration(create: true)) }
    }

    /// Whether the store has been made (its data file is there).
    var storeExists: Bool { FileManager.default.fileExists(atPath: storeDirectory + "/data.mdb") }

    /// Runs `open`, and when it made a new store says where, on stderr: the default `./.evsync` follows the
    /// working directory, and a store made in the wrong one would otherwise go unnoticed.
    private func announcingCreation(_ mayCreate: Bool, _ open: () throws -> Store) throws -> Store {
        let existed = !mayCreate || storeExists
        let store = try open()
        if !existed { printError("evsync: created a new store in \(URL(fileURLWithPath: storeDirectory).standardizedFileURL.path)") }
        return store
    }

    /// Opens the store to rebuild its views, which may be missing (see `Store.init(repairingViews:)`).
    func openStoreRepairingViews() throws -> Store {
        try Store(repairingViews: storeDirectory, configuration: try storeConfiguration(create: false))
    }

    /// What the library is told about the store, from the flags and `EVSYNC_*`: the library reads no
    /// environment variable itself. The CLI turns a damaged page into exit 74 rather than a crash (`crashGuard`).
    func storeConfiguration(create: Bool) throws -> Store.Configuration {
        var configuration = Store.Configuration(schemas: try schemaRegistry(), create: create,
                                                author: EnvironmentVariable.value("EVSYNC_AUTHOR"), crashGuard: true)
        #if DEBUG
        // Tests fill a small map through the CLI.
        configuration.mapSize = EnvironmentVariable.value("EVSYNC_MAP_SIZE").flatMap(Int.init)
        #endif
        return configuration
    }
}

/// One line on stderr. Messages quote values, ids and URLs that may come from a
/// server, so control characters are shown escaped and the line stays one line.
func printError(_ message: String) {
    // What stdout holds goes first: through `2>&1` a table and its "(3 Birthday records)" line come out in order.
    fflush(nil)
    FileHandle.standardError.write(Data((Output.safe(message) + "\n").utf8))
}
