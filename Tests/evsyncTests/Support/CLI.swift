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

/// The built `evsync` binary.
///
/// `evsyncTests` depends on the `evsync` executable target, so SwiftPM builds
/// the binary before the tests and puts it in the same products directory
/// as the test bundle: on Linux `.build/<triple>/debug/evsync`, next to
/// `evsyncPackageTests.xctest` (an executable, whose directory is
/// `Bundle.main.bundleURL`); on macOS the `.xctest` is a bundle in that
/// directory. `EVSYNC_TESTS_BINARY` overrides the location.
enum EvsyncBinary {
    static let url: URL = {
        if let path = ProcessInfo.processInfo.environment["EVSYNC_TESTS_BINARY"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        var candidates: [URL] = []
        var bundle = Bundle.main.bundleURL
        if bundle.pathExtension == "xctest" { bundle.deleteLastPathComponent() }
        candidates.append(bundle.appendingPathComponent("evsync"))
        if let first = CommandLine.arguments.first {
            candidates.append(URL(fileURLWithPath: first).deletingLastPathComponent().appendingPathComponent("evsync"))
        }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[0]
    }()
}

/// What one run of the binary did.
struct CLIResult: CustomStringConvertible {
    /// The exit status; the negated signal number if it was killed by a signal.
    let status: Int32
    let stdout: String
    let stderr: String

    var description: String { "exit \(status)\n--- stdout\n\(stdout)--- stderr\n\(stderr)" }

    /// Standard output split into lines, without empty ones.
    var lines: [String] { stdout.split(separator: "\n").map(String.init) }

    /// Standard output parsed as one JSON document.
    func json() throws -> JSONValue { try JSONParser.parse(stdout) }
}

/// A started `evsync` process whose output goes to files (never pipes, so it
/// can neither block on a full pipe nor keep one open for anybody else).
final class RunningCommand {
    let process: Process
    let arguments: [String]
    private let stdoutURL: URL
    private let stderrURL: URL
    private let handles: [FileHandle]

    /// What a command reads on standard input.
    enum Input {
        /// Nothing (`/dev/null`).
        case none
        /// These bytes, from a regular file.
        case file(Data)
        /// The read end of this pipe, which the test writes to and closes.
        case pipe(Pipe)
    }

    init(executable: URL, arguments: [String], environment: [String: String], directory: URL,
         stdin: Input, outputDirectory: URL) throws {
        let name = UUID().uuidString
        stdoutURL = outputDirectory.appendingPathComponent("\(name).out")
        stderrURL = outputDirectory.appendingPathComponent("\(name).err")
        _ = FileManager.default.createFile(atPath: stdoutURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        var handles = [try FileHandle(forWritingTo: stdoutURL), try FileHandle(forWritingTo: stderrURL)]
        let input: Any
        switch stdin {
        case .none:
            input = FileHandle.nullDevice
        case .file(let data):
            let inputURL = outputDirectory.appendingPathComponent("\(name).in")
            try data.write(to: inputURL)
            let file = try FileHandle(forReadingFrom: inputURL)
            handles.append(file)
            input = file
        case .pipe(let pipe):
            input = pipe
        }
        self.handles = handles
        self.arguments = arguments
        process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = environment
        process.currentDirectoryURL = directory
        process.standardInput = input
        process.standardOutput = handles[0]
        process.standardError = handles[1]
        try process.run()
    }

    deinit {
        stop()
        for handle in handles { try? handle.close() }
    }

    /// Stops the process with SIGKILL. Not `Process.terminate()` (SIGTERM): on
    /// Linux, Foundation spawns children from a Dispatch worker thread whose
    /// signal mask blocks SIGTERM, and the child inherits that mask, so a
    /// SIGTERM would never arrive and waiting for the exit would hang.
    private func stop() {
        if process.isRunning { _ = kill(process.processIdentifier, SIGKILL) }
    }

    /// Everything written to standard output so far.
    var currentOutput: String {
        String(decoding: (try? Data(contentsOf: stdoutURL)) ?? Data(), as: UTF8.self)
    }

    /// Waits for the process to exit; kills it (and records an issue) after `timeout` seconds.
    func wait(timeout: TimeInterval = 120, sourceLocation: SourceLocation = #_sourceLocation) -> CLIResult {
        let start = Date()
        let deadline = start.addingTimeInterval(timeout)
        var missed: Int32?
        while process.isRunning, Date() < deadline {
            usleep(1_000)
            if Date().timeIntervalSince(start) > 1, let status = reapIfExitWasMissed() {
                missed = status
                break
            }
        }
        if missed == nil, process.isRunning {
            Issue.record("evsync \(arguments.joined(separator: " ")) did not finish in \(timeout) s; killing it", sourceLocation: sourceLocation)
            stop()
            missed = reapIfExitWasMissed()
        }
        let status: Int32
        if let missed {
            status = missed
        } else {
            process.waitUntilExit()
            status = process.terminationReason == .exit ? process.terminationStatus : -process.terminationStatus
        }
        return CLIResult(status: status, stdout: currentOutput,
                         stderr: String(decoding: (try? Data(contentsOf: stderrURL)) ?? Data(), as: UTF8.self))
    }

    /// Foundation's `Process` on Linux was seen, once in a full run, to miss a child's exit: the child
    /// stayed a zombie, `isRunning` true, and `waitUntilExit` waited for ever. A child that is a zombie
    /// after a second is reaped here instead; its status as `wait` gives it (a signal negated), or nil
    /// when it is not a zombie (or Foundation reaped it first).
    private func reapIfExitWasMissed() -> Int32? {
        let pid = process.processIdentifier
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let afterName = stat.range(of: ") ", options: .backwards),
              stat[afterName.upperBound...].hasPrefix("Z") else { return nil }
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
        return status & 0x7F == 0 ? (status >> 8) & 0xFF : -(status & 0x7F)
    }

    /// Kills the process (see `stop()`) and waits for it to be gone.
    func terminate() {
        stop()
        process.waitUntilExit()
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
    private var outputDirectory: URL { root.appendingPathComponent(".cli-output", isDirectory: true) }

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
    func launch(_ arguments: [String], stdin: Data? = nil, environment overrides: [String: String?] = [:]) throws -> RunningCommand {
        try launch(arguments, input: stdin.map { .file($0) } ?? .none, environment: overrides)
    }

    /// Starts `evsync arguments…` reading standard input from `input`.
    func launch(_ arguments: [String], input: RunningCommand.Input, environment overrides: [String: String?] = [:]) throws -> RunningCommand {
        // A write to a pipe whose reader is gone must fail, not kill the test process.
        if case .pipe = input { signal(SIGPIPE, SIG_IGN) }
        try #require(FileManager.default.isExecutableFile(atPath: EvsyncBinary.url.path), "no evsync binary at \(EvsyncBinary.url.path)")
        try FileManager.default.createDirectory(at: outputDirectory, withIntermediateDirectories: true)
        var environment = self.environment
        for (key, value) in overrides { environment[key] = value }
        return try RunningCommand(executable: EvsyncBinary.url, arguments: arguments, environment: environment,
                                  directory: root, stdin: input, outputDirectory: outputDirectory)
    }

    /// Starts `/bin/sh -c script` with the same environment as the binary gets,
    /// plus `EVSYNC_BINARY_PATH` (the binary) for the script to call.
    func launchShell(_ script: String) throws -> RunningCommand {
        try FileManager.default.createDirectory(at: outputDirectory, withIntermediateDirectories: true)
        var environment = self.environment
        environment["EVSYNC_BINARY_PATH"] = EvsyncBinary.url.path
        return try RunningCommand(executable: URL(fileURLWithPath: "/bin/sh"), arguments: ["-c", script], environment: environment,
                                  directory: root, stdin: .none, outputDirectory: outputDirectory)
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
