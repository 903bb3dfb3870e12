import Foundation
import Synchronization

/// What a finished child process left behind.
public struct ProcessOutput: Sendable, CustomStringConvertible {
    public var status: Int32
    /// True when the process died of a signal (`status` is then the signal number).
    public var killedBySignal: Bool
    public var stdout: String
    public var stderr: String

    public var stdoutLines: [String] { stdout.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) }
    public var stderrLines: [String] { stderr.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) }

    public var description: String {
        "exit \(killedBySignal ? "signal " : "")\(status)\n--- stdout ---\n\(stdout.prefix(4000))\n--- stderr ---\n\(stderr.prefix(4000))"
    }
}

public struct ProcessFailure: Error, CustomStringConvertible {
    public let command: String
    public let output: ProcessOutput
    public var description: String { "\(command) failed: \(output)" }

    public init(command: String, output: ProcessOutput) {
        self.command = command
        self.output = output
    }
}

/// A child process started with Foundation's `Process`. Its standard input,
/// output and error are temporary files (never pipes), so a chatty child can
/// never block on a full pipe and the output is read only after it exits.
/// Waiting is asynchronous: no thread of the test runner blocks on it.
public final class RunningProcess: @unchecked Sendable {
    // `process` is touched only in `init` and, once it has exited, to read
    // its status; everything shared with the termination handler is in `state`.
    private let process = Process()
    private let files: URL
    private let state = ExitState()

    public let pid: Int32

    public init(executable: String, arguments: [String], environment: [String: String], stdin: String? = nil) throws {
        files = FileManager.default.temporaryDirectory.appendingPathComponent("synctests-proc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        let inURL = files.appendingPathComponent("stdin")
        try Data((stdin ?? "").utf8).write(to: inURL)
        _ = FileManager.default.createFile(atPath: files.appendingPathComponent("stdout").path, contents: nil)
        _ = FileManager.default.createFile(atPath: files.appendingPathComponent("stderr").path, contents: nil)
        let input = try FileHandle(forReadingFrom: inURL)
        let output = try FileHandle(forWritingTo: files.appendingPathComponent("stdout"))
        let error = try FileHandle(forWritingTo: files.appendingPathComponent("stderr"))
        defer {
            try? input.close()
            try? output.close()
            try? error.close()
        }
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        process.standardInput = input
        process.standardOutput = output
        process.standardError = error
        process.terminationHandler = { [state] _ in
            let waiters = state.mutex.withLock { state in
                state.exited = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
        try process.run()
        pid = process.processIdentifier
    }

    deinit {
        try? FileManager.default.removeItem(at: files)
    }

    public var hasExited: Bool { state.mutex.withLock { $0.exited } }

    public func signal(_ signal: Int32) {
        if !hasExited { kill(pid, signal) }
    }

    /// What the process has written so far, while it runs (a watcher's lines).
    public func outputSoFar() -> (stdout: String, stderr: String) {
        func read(_ name: String) -> String {
            (try? String(contentsOf: files.appendingPathComponent(name), encoding: .utf8)) ?? ""
        }
        return (read("stdout"), read("stderr"))
    }

    /// Waits for the process to exit and collects its output.
    public func wait() async -> ProcessOutput {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.mutex.withLock { state in
                if !state.exited { state.waiters.append(continuation) }
                return state.exited
            }
            if done { continuation.resume() }
        }
        let (stdout, stderr) = outputSoFar()
        return ProcessOutput(status: process.terminationStatus, killedBySignal: process.terminationReason == .uncaughtSignal,
                             stdout: stdout, stderr: stderr)
    }
}

/// Whether the process has exited, and who waits for it.
private final class ExitState: Sendable {
    public let mutex = Mutex<(exited: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
}

public enum ProcessRunner {
    /// Runs a program to completion.
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String],
                    stdin: String? = nil) async throws -> ProcessOutput {
        try await RunningProcess(executable: executable, arguments: arguments, environment: environment, stdin: stdin).wait()
    }

    /// The full path of a program on PATH.
    public static func which(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}
