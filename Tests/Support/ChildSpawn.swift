import Foundation

/// Starts a program with its standard input, output and error on files, as a test's child should start: no
/// signal blocked and the usual dispositions (a test runs on a worker thread that blocks most signals, and this
/// process ignores SIGPIPE; a child would inherit both and never see the SIGTERM a test sends), and no other
/// descriptor of this process (a long-lived child, a server, must not hold a test's pipes or sockets open).
///
/// Not Foundation's `Process`: on Linux it learns of a child's exit through a socket the child inherits, and
/// then waits for that child with a blocking `waitpid` on its one monitoring thread. A child that let go of
/// the socket while it ran (the Parse stand-in, seen once) held that thread, and with it the exit of every other
/// child, for ever. The caller here waits for its own child alone (`waitpid` of that pid).
enum ChildSpawn {
    /// What the child reads on standard input.
    enum Input {
        /// The file at this path.
        case file(String)
        /// This descriptor of the test process (a pipe's read end).
        case descriptor(Int32)
    }

    /// - Parameter directory: the child's working directory; nil, this process's.
    static func spawn(_ argv: [String], environment: [String: String], stdin: Input, stdout: String, stderr: String,
                      directory: String? = nil) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        switch stdin {
        case .file(let path): posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, path, O_RDONLY, 0)
        case .descriptor(let descriptor): posix_spawn_file_actions_adddup2(&actions, descriptor, STDIN_FILENO)
        }
        if let directory {
            guard let changeDirectory else { throw DaemonStarter.Failure(description: "this C library has no posix_spawn_file_actions_addchdir_np (glibc 2.29)") }
            _ = changeDirectory(&actions, directory)
        }
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard let closeFrom else { throw DaemonStarter.Failure(description: "this C library has no posix_spawn_file_actions_addclosefrom_np (glibc 2.34)") }
        _ = closeFrom(&actions, 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigmask(&attributes, &unblocked)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let arguments = argv.map { strdup($0) } + [nil]
        let variables = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (arguments + variables).forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, argv[0], &actions, &attributes, arguments, variables)
        guard spawned == 0 else { throw DaemonStarter.Failure(description: "cannot run \(argv[0]): \(String(cString: strerror(spawned)))") }
        return pid
    }

    /// glibc's `posix_spawn_file_actions_addchdir_np` (2.29), which Swift's Glibc module does not show.
    private typealias ChangeDirectory = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
    private static let changeDirectory: ChangeDirectory? =
        dlsym(nil, "posix_spawn_file_actions_addchdir_np").map { unsafeBitCast($0, to: ChangeDirectory.self) }  // nil: RTLD_DEFAULT

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34), which Swift's Glibc module does not show.
    private typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static let closeFrom: CloseFrom? =
        dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map { unsafeBitCast($0, to: CloseFrom.self) }  // nil: RTLD_DEFAULT

    /// Waits for the child (blocking this thread) and returns its exit status, or 128 + the signal that killed it
    /// with `killedBySignal`.
    static func wait(for pid: pid_t) -> (status: Int32, killedBySignal: Bool) {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1, errno == EINTR {}
        let signal = status & 0x7F
        return signal == 0 ? ((status >> 8) & 0xFF, false) : (signal, true)
    }
}
