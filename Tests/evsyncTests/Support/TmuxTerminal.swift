import Foundation
import Testing

/// An interactive bash in a detached tmux session: a real terminal with job control,
/// as a person has one (a bare pty from `script` has none, and hid the pager bug).
/// Each instance has a tmux server of its own (`-L`), killed by `close()`.
struct TmuxTerminal {
    let socket = "evsync-tests-\(UUID().uuidString.prefix(8))"
    let rows: Int

    /// Starts `bash -i` in `directory` with `environment`, on a screen of `columns` × `rows`.
    init(directory: URL, environment: [String: String], columns: Int = 100, rows: Int = 20) throws {
        self.rows = rows
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/tmux") else {
            throw TerminalUnavailable(reason: "tmux is not installed (Tools/test installs it)")
        }
        // --norc: the machine's bashrc must not change the prompt or the job control under test.
        let bash = "cd '\(directory.path)' && PS1='$ ' exec bash --norc --noprofile -i"
        var environment = environment
        environment["TERM"] = "xterm-256color"
        try tmux(["new-session", "-d", "-x", "\(columns)", "-y", "\(rows)", bash], environment: environment)
    }

    /// Types `text` and presses Enter.
    func type(_ line: String) throws { try tmux(["send-keys", "-l", line]); try tmux(["send-keys", "Enter"]) }

    /// Presses keys by tmux name (`q`, `C-c`), without Enter.
    func press(_ keys: String...) throws { try tmux(["send-keys"] + keys) }

    /// What the screen shows now.
    func screen() throws -> String { try tmux(["capture-pane", "-p"]) }

    /// Waits until the screen shows `text`, for at most `seconds`; returns the screen either way.
    @discardableResult
    func waitFor(_ text: String, seconds: Double = 20) throws -> (found: Bool, screen: String) {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let shown = try screen()
            if shown.contains(text) { return (true, shown) }
            if Date() > deadline { return (false, shown) }
            usleep(50_000)
        }
    }

    func close() { _ = try? tmux(["kill-server"]) }

    /// Runs the tmux client with posix_spawn and waitpid. Not Foundation's `Process`: the client
    /// forks the tmux server, which keeps what it inherited open, and `Process` was seen never to
    /// notice the client's exit (a zombie, `waitUntilExit` waiting for ever).
    @discardableResult
    private func tmux(_ arguments: [String], environment: [String: String]? = nil) throws -> String {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("\(socket)-\(UUID().uuidString).out")
        defer { try? FileManager.default.removeItem(at: output) }
        let argv = ["/usr/bin/tmux", "-L", socket, "-f", "/dev/null"] + arguments
        let variables = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0)
        let cArguments = argv.map { strdup($0) } + [nil]
        let cVariables = variables.map { strdup($0) } + [nil]
        defer { (cArguments + cVariables).forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, argv[0], &actions, nil, cArguments, cVariables)
        guard spawned == 0 else { throw TerminalUnavailable(reason: "cannot run tmux: \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1, errno == EINTR {}
        return String(decoding: (try? Data(contentsOf: output)) ?? Data(), as: UTF8.self)
    }
}

struct TerminalUnavailable: Error, CustomStringConvertible {
    let reason: String
    var description: String { reason }
}
