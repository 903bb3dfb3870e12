import Foundation
import TestSupport
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

    /// The tmux client forks the server, which keeps what it inherited: `DaemonStarter`, not `Process`.
    @discardableResult
    private func tmux(_ arguments: [String], environment: [String: String]? = nil) throws -> String {
        try DaemonStarter.run(["/usr/bin/tmux", "-L", socket, "-f", "/dev/null"] + arguments,
                              environment: environment ?? ProcessInfo.processInfo.environment).stdout
    }
}

struct TerminalUnavailable: Error, CustomStringConvertible {
    let reason: String
    var description: String { reason }
}
