import Foundation

/// Long output for a person goes through a pager, as git's does: `PAGER`, else
/// `less -FRX` (which quits at once when it all fits on one screen, keeps colours,
/// and leaves the text on the screen). Only when standard output is a terminal;
/// `--no-pager`, or `PAGER` set to empty or `cat`, turns it off.
///
/// The pager is spawned with `posix_spawn`, not Foundation's `Process`: `Process`
/// puts its child in a process group of its own, outside the terminal's foreground
/// group, and in a shell with job control the terminal then stops the pager
/// (SIGTTIN) the moment it reads a key: nothing shows and `q` does nothing. Like
/// git's, this pager stays in evsync's process group, which the shell made the
/// foreground one.
final class Pager {
    private let pid: pid_t

    /// Starts the pager and points standard output at it; nil when there is to be none.
    static func start(disabled: Bool) -> Pager? {
        guard !disabled, isatty(STDOUT_FILENO) == 1 else { return nil }
        let environment = ProcessInfo.processInfo.environment
        let command = environment["PAGER"] ?? "less -FRX"
        guard !command.trimmingCharacters(in: .whitespaces).isEmpty, command != "cat" else { return nil }
        var childEnvironment = environment
        if childEnvironment["LESS"] == nil { childEnvironment["LESS"] = "FRX" }
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { return nil }
        let (reading, writing) = (ends[0], ends[1])
        // PAGER is a command line, as for git and man: the shell splits it.
        guard let pid = spawn(["/bin/sh", "-c", command], environment: childEnvironment, stdin: reading, closing: writing) else {
            close(reading)
            close(writing)
            return nil
        }
        close(reading)
        fflush(nil)
        dup2(writing, STDOUT_FILENO)
        close(writing)
        // Quitting the pager early closes the pipe: the write fails (rather than a signal killing
        // the process), `list` stops reading and exits 0, as git does.
        signal(SIGPIPE, SIG_IGN)
        // Ctrl-C and Ctrl-\ reach the whole foreground group: the pager handles them itself, and
        // evsync must not die under it and hand the terminal back to the shell while the pager
        // still reads it. The output ends when the pager quits and closes the pipe.
        signal(SIGINT, SIG_IGN)
        signal(SIGQUIT, SIG_IGN)
        return Pager(pid: pid)
    }

    /// `argv` run with `stdin` as its standard input, in this process's group, with
    /// the default handling of every signal evsync changes.
    private static func spawn(_ argv: [String], environment: [String: String], stdin: Int32, closing other: Int32) -> pid_t? {
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawnattr_init(&attributes)
        defer {
            posix_spawn_file_actions_destroy(&actions)
            posix_spawnattr_destroy(&attributes)
        }
        posix_spawn_file_actions_adddup2(&actions, stdin, STDIN_FILENO)
        posix_spawn_file_actions_addclose(&actions, stdin)
        posix_spawn_file_actions_addclose(&actions, other)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGINT, SIGQUIT] { sigaddset(&defaults, signal) }
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &unblocked)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let arguments = argv.map { strdup($0) } + [nil]
        let variables = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            arguments.forEach { free($0) }
            variables.forEach { free($0) }
        }
        var pid: pid_t = 0
        guard posix_spawn(&pid, argv[0], &actions, &attributes, arguments, variables) == 0 else { return nil }
        return pid
    }

    private init(pid: pid_t) { self.pid = pid }

    /// Ends the output and waits for the person to quit the pager.
    func finish() {
        fflush(nil)
        close(STDOUT_FILENO)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1, errno == EINTR {}
    }
}
