import Foundation
import Testing
@testable import EventStore
import TestSupport

/// The CLI's documented exit codes.
enum Exit {
    static let ok: Int32 = 0
    static let failure: Int32 = 1
    static let usage: Int32 = 64
    static let dataError: Int32 = 65
    static let noInput: Int32 = 66
    static let cannotWrite: Int32 = 73
    static let damaged: Int32 = 74
}

/// What one run of the binary did.
struct CLIResult: CustomStringConvertible {
    /// The exit status; the negated signal number if it was killed by a signal.
    let status: Int32
    let stdout: String
    let stderr: String

    init(_ output: ProcessOutput) {
        status = output.killedBySignal ? -output.status : output.status
        (stdout, stderr) = (output.stdout, output.stderr)
    }

    var description: String { "exit \(status)\n--- stdout\n\(stdout)--- stderr\n\(stderr)" }

    /// Standard output split into lines, without empty ones.
    var lines: [String] { stdout.split(separator: "\n").map(String.init) }

    /// Standard output parsed as one JSON document.
    func json() throws -> JSONValue { try JSONParser.parse(stdout) }
}

extension RunningProcess {
    /// Everything written to standard output so far.
    var currentOutput: String { outputSoFar().stdout }

    /// Waits for the process to exit, blocking this thread; kills it (and records an issue) after `timeout` seconds.
    func wait(timeout: TimeInterval = 120, sourceLocation: SourceLocation = #_sourceLocation) -> CLIResult {
        CLIResult(finish(timeout: timeout, sourceLocation: sourceLocation))
    }
}

/// A scratch directory holding one store, and a way to run the binary on it.
///
/// Children get the test process's environment minus every `EVSYNC_*`
/// variable, plus `EVSYNC_STORE` (this sandbox's store) and `EVSYNC_AUTHOR`;
/// they run in the sandbox, so even the default `./.evsync` lands there.
struct Sandbox {
    let root: URL

    var store: URL { root.appendingPathComponent("store", isDirectory: true) }

    static let author = "tester@evsync-tests"

    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("EVSYNC_") }
        environment["EVSYNC_STORE"] = store.path
        environment["EVSYNC_AUTHOR"] = Self.author
        // Tables are fitted to COLUMNS when it is set; tests that want that set it themselves.
        environment["COLUMNS"] = nil
        return environment
    }

    /// Starts `evsync arguments…`. `environment` entries override the defaults; a nil value removes the variable.
    func launch(_ arguments: [String], stdin: Data? = nil, environment overrides: [String: String?] = [:]) throws -> RunningProcess {
        try launch(arguments, input: stdin.map { .bytes($0) } ?? .none, environment: overrides)
    }

    /// Starts `evsync arguments…` reading standard input from `input`.
    func launch(_ arguments: [String], input: RunningProcess.Input, environment overrides: [String: String?] = [:]) throws -> RunningProcess {
        // A write to a pipe whose reader is gone must fail, not kill the test process.
        if case .pipe = input { signal(SIGPIPE, SIG_IGN) }
        try #require(FileManager.default.isExecutableFile(atPath: BuiltProduct.evsync.path), "no evsync binary at \(BuiltProduct.evsync.path)")
        var environment = self.environment
        for (key, value) in overrides { environment[key] = value }
        return try RunningProcess(executable: BuiltProduct.evsync.path, arguments: arguments, environment: environment, input: input,
                                  directory: root.path)
    }

    /// Starts `/bin/sh -c script` with the same environment as the binary gets,
    /// plus `EVSYNC_BINARY_PATH` (the binary) for the script to call.
    func launchShell(_ script: String) throws -> RunningProcess {
        var environment = self.environment
        environment["EVSYNC_BINARY_PATH"] = BuiltProduct.evsync.path
        return try RunningProcess(executable: "/bin/sh", arguments: ["-c", script], environment: environment, input: .none,
                                  directory: root.path)
    }

    /// Runs `evsync arguments…` to completion.
    func run(_ arguments: [String], stdin: Data? = nil, environment: [String: String?] = [:],
             sourceLocation: SourceLocation = #_sourceLocation) throws -> CLIResult {
        try launch(arguments, stdin: stdin, environment: environment).wait(sourceLocation: sourceLocation)
    }

    /// Runs `evsync arguments…` to completion with `stdin` written to it
    /// through a pipe (not a regular file), by a thread of its own.
    func run(_ arguments: [String], pipingStdin stdin: Data, sourceLocation: SourceLocation = #_sourceLocation) throws -> CLIResult {
        let pipe = Pipe()
        let command = try launch(arguments, input: .pipe(pipe))
        let writer = pipe.fileHandleForWriting
        let written = DispatchSemaphore(value: 0)
        Thread {
            // The command may stop reading early (a bad line): a broken pipe is not an error here.
            try? writer.write(contentsOf: stdin)
            try? writer.close()
            written.signal()
        }.start()
        let result = command.wait(sourceLocation: sourceLocation)
        written.wait()
        return result
    }

    /// Runs a command that must succeed, and returns its result.
    @discardableResult
    func succeed(_ arguments: [String], stdin: Data? = nil, environment: [String: String?] = [:],
                 sourceLocation: SourceLocation = #_sourceLocation) throws -> CLIResult {
        let result = try run(arguments, stdin: stdin, environment: environment, sourceLocation: sourceLocation)
        #expect(result.status == Exit.ok, "evsync \(arguments.joined(separator: " ")): \(result)", sourceLocation: sourceLocation)
        return result
    }

    /// The stored bytes of event `seq`, read in this process (which lets go of the store before returning).
    func storedEvent(_ seq: UInt64) throws -> [UInt8]? {
        let opened = try Store(directory: store.path)
        return try opened.environment.read { try $0.get(Keys.sequence(seq), in: opened.log.events) }
    }

    /// `status --json`, parsed.
    func status(sourceLocation: SourceLocation = #_sourceLocation) throws -> JSONObject {
        let result = try succeed(["status", "--json"], sourceLocation: sourceLocation)
        return try #require(try result.json().objectValue, sourceLocation: sourceLocation)
    }

    /// The number of events in the log, from `status --json`.
    func eventCount(sourceLocation: SourceLocation = #_sourceLocation) throws -> Int64 {
        try #require(try status(sourceLocation: sourceLocation)["events"]?.int64Value, sourceLocation: sourceLocation)
    }

    /// `list <entity> --json` as `id → fields`.
    func records(_ entity: String, _ extra: [String] = [], sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: JSONObject] {
        let result = try succeed(["list", entity, "--json"] + extra, sourceLocation: sourceLocation)
        let array = try #require(try result.json().arrayValue, sourceLocation: sourceLocation)
        var records: [String: JSONObject] = [:]
        for element in array {
            var object = try #require(element.objectValue, sourceLocation: sourceLocation)
            let id = try #require(object.removeValue(forKey: "id")?.stringValue, sourceLocation: sourceLocation)
            records[id] = object
        }
        return records
    }

    /// Writes a file in the sandbox and returns its path.
    @discardableResult
    func write(_ name: String, _ text: String) throws -> String {
        let url = root.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
        return url.path
    }
}

/// Runs `body` with a fresh sandbox, removed afterwards.
func withSandbox<T>(_ body: (Sandbox) throws -> T) throws -> T {
    let root = FileManager.default.temporaryDirectory
        .appendingPathComponent("evsync-cli-tests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: root) }
    return try body(Sandbox(root: root))
}
