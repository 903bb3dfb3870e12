import Foundation

/// Runs a command that starts a daemon (tmux, `Tools/kinto start`) and returns once the
/// command itself exits, with its status and standard output.
///
/// Not Foundation's `Process`: the daemon keeps what it inherited open, and `Process` was
/// seen never to notice the command's exit then (a zombie, `waitUntilExit` waiting for ever).
/// Here the output goes to files, and `waitpid` waits for the command alone.
public enum DaemonStarter {
    /// - Parameter environment: the command's; nil, this process's.
    public static func run(_ argv: [String], environment: [String: String]? = nil) throws -> (status: Int32, stdout: String, stderr: String) {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("daemon-starter-\(UUID().uuidString).out")
        let errors = output.appendingPathExtension("err")
        defer {
            try? FileManager.default.removeItem(at: output)
            try? FileManager.default.removeItem(at: errors)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, errors.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let arguments = argv.map { strdup($0) } + [nil]
        let variables = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (arguments + variables).forEach { free($0) } }
        // A test runs on a worker thread that blocks most signals, and a spawned program inherits that mask (and
        // this process's ignored SIGPIPE): a daemon started so would never see the SIGTERM its stop sends, and be
        // killed only after the stop's grace time. The daemon gets no blocked signals and default dispositions.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigmask(&attributes, &unblocked)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGQUIT] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, argv[0], &actions, &attributes, arguments, variables)
        guard spawned == 0 else { throw Failure(description: "cannot run \(argv[0]): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1, errno == EINTR {}
        let exit = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        func text(_ file: URL) -> String { String(decoding: (try? Data(contentsOf: file)) ?? Data(), as: UTF8.self) }
        return (exit, text(output), text(errors))
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }
}
