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

/// A child process (`ChildSpawn`). Its standard input, output and error are
/// temporary files (never pipes), so a chatty child can never block on a full
/// pipe and the output is read only after it exits. Waiting is asynchronous: a
/// thread of its own waits for this child alone, none of the test runner's.
public final class RunningProcess: Sendable {
    private let files: URL
    private let state = ExitState()

    public let pid: Int32

    public init(executable: String, arguments: [String], environment: [String: String], stdin: String? = nil) throws {
        files = FileManager.default.temporaryDirectory.appendingPathComponent("synctests-proc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        let inURL = files.appendingPathComponent("stdin")
        try Data((stdin ?? "").utf8).write(to: inURL)
        pid = try ChildSpawn.spawn([executable] + arguments, environment: environment, stdin: inURL.path,
                                   stdout: files.appendingPathComponent("stdout").path, stderr: files.appendingPathComponent("stderr").path)
        let (pid, state) = (pid, state)
        Thread.detachNewThread {
            let ended = ChildSpawn.wait(for: pid)
            let waiters = state.mutex.withLock { state in
                state.ended = ended
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    deinit {
        try? FileManager.default.removeItem(at: files)
    }

    public var hasExited: Bool { state.mutex.withLock { $0.ended != nil } }

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
            let ended = state.mutex.withLock { state in
                if state.ended == nil { state.waiters.append(continuation) }
                return state.ended != nil
            }
            if ended { continuation.resume() }
        }
        let (status, killedBySignal) = state.mutex.withLock { $0.ended } ?? (0, false)
        let (stdout, stderr) = outputSoFar()
        return ProcessOutput(status: status, killedBySignal: killedBySignal, stdout: stdout, stderr: stderr)
    }
}

/// Whether the process has exited, and who waits for it.
private final class ExitState: Sendable {
    let mutex = Mutex<(ended: (status: Int32, killedBySignal: Bool)?, waiters: [CheckedContinuation<Void, Never>])>((nil, []))
}

public enum ProcessRunner {
    /// Runs a program to completion, with this process's environment unless given another.
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                    stdin: String? = nil) async throws -> ProcessOutput {
        try await RunningProcess(executable: executable, arguments: arguments, environment: environment ?? ProcessInfo.processInfo.environment,
                                 stdin: stdin).wait()
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
