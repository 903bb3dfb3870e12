public import Foundation
import Synchronization
public import Testing

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

/// A child process (`ChildSpawn`): the one way tests run a program, the CLI above all. Its standard output and
/// error are temporary files (never pipes), so a chatty child can never block on a full pipe, and what it has
/// written can be read while it runs. A thread of its own waits for this child alone, none of the test runner's;
/// a test waits for the exit asynchronously (`wait()`) or blocking its thread (`finish(timeout:)`). A child still
/// running when the object goes is killed.
public final class RunningProcess: Sendable {
    /// What the child reads on standard input.
    public enum Input: Sendable {
        /// Nothing (`/dev/null`).
        case none
        /// These bytes, from a regular file.
        case bytes(Data)
        /// The read end of this pipe, which the test writes to and closes.
        case pipe(Pipe)
    }

    private let files: URL
    private let state = ExitState()

    public let pid: Int32
    /// The program and its arguments, for messages.
    public let command: String

    public init(executable: String, arguments: [String], environment: [String: String], input: Input,
                directory: String? = nil) throws {
        command = ([executable] + arguments).joined(separator: " ")
        files = FileManager.default.temporaryDirectory.appendingPathComponent("evsync-tests-proc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        let stdin: ChildSpawn.Input
        switch input {
        case .none:
            stdin = .file("/dev/null")
        case .bytes(let data):
            let url = files.appendingPathComponent("stdin")
            try data.write(to: url)
            stdin = .file(url.path)
        case .pipe(let pipe):
            stdin = .descriptor(pipe.fileHandleForReading.fileDescriptor)
        }
        pid = try ChildSpawn.spawn([executable] + arguments, environment: environment, stdin: stdin,
                                   stdout: files.appendingPathComponent("stdout").path, stderr: files.appendingPathComponent("stderr").path,
                                   directory: directory)
        // The child has its own copy of the pipe's read end: the test's must go, so that its writes fail once the child is gone.
        if case .pipe(let pipe) = input { try? pipe.fileHandleForReading.close() }
        let (pid, state) = (pid, state)
        Thread.detachNewThread {
            let ended = ChildSpawn.wait(for: pid)
            let waiters = state.mutex.withLock { state in
                state.ended = ended
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter() }
        }
    }

    /// - Parameter stdin: what the child reads; nil, nothing.
    public convenience init(executable: String, arguments: [String], environment: [String: String], stdin: String? = nil) throws {
        try self.init(executable: executable, arguments: arguments, environment: environment, input: stdin.map { .bytes(Data($0.utf8)) } ?? .none)
    }

    deinit {
        if !hasExited { Glibc.kill(pid, SIGKILL) }
        try? FileManager.default.removeItem(at: files)
    }

    public var hasExited: Bool { state.mutex.withLock { $0.ended != nil } }
    public var isRunning: Bool { !hasExited }

    public func signal(_ signal: Int32) {
        if !hasExited { Glibc.kill(pid, signal) }
    }

    /// Kills the child (SIGKILL) and waits for it to be gone.
    public func kill() {
        signal(SIGKILL)
        _ = finish()
    }

    /// What the process has written so far, while it runs (a watcher's lines).
    public func outputSoFar() -> (stdout: String, stderr: String) {
        func read(_ name: String) -> String {
            String(decoding: (try? Data(contentsOf: files.appendingPathComponent(name))) ?? Data(), as: UTF8.self)
        }
        return (read("stdout"), read("stderr"))
    }

    /// Waits for the process to exit and collects its output.
    public func wait() async -> ProcessOutput {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            whenEnded { continuation.resume() }
        }
        return output()
    }

    /// Waits for the process to exit, blocking this thread, and collects its output; after `timeout` seconds
    /// records an issue and kills it.
    public func finish(timeout: TimeInterval = 120, sourceLocation: SourceLocation = #_sourceLocation) -> ProcessOutput {
        let ended = DispatchSemaphore(value: 0)
        whenEnded { ended.signal() }
        if ended.wait(timeout: .now() + timeout) == .timedOut {
            Issue.record("\(command) did not finish in \(timeout) s; killing it", sourceLocation: sourceLocation)
            Glibc.kill(pid, SIGKILL)
            ended.wait()
        }
        return output()
    }

    private func whenEnded(_ waiter: @escaping @Sendable () -> Void) {
        let ended = state.mutex.withLock { state in
            if state.ended == nil { state.waiters.append(waiter) }
            return state.ended != nil
        }
        if ended { waiter() }
    }

    private func output() -> ProcessOutput {
        let (status, killedBySignal) = state.mutex.withLock { $0.ended } ?? (0, false)
        let (stdout, stderr) = outputSoFar()
        return ProcessOutput(status: status, killedBySignal: killedBySignal, stdout: stdout, stderr: stderr)
    }
}

/// Whether the process has exited, and who waits for it.
private final class ExitState: Sendable {
    let mutex = Mutex<(ended: (status: Int32, killedBySignal: Bool)?, waiters: [@Sendable () -> Void])>((nil, []))
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
