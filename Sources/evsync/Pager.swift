import Foundation

/// Long output for a person goes through a pager, as git's does: `PAGER`, else
/// `less -FRX` (which quits at once when it all fits on one screen, keeps colours,
/// and leaves the text on the screen). Only when standard output is a terminal;
/// `--no-pager`, or `PAGER` set to empty or `cat`, turns it off.
final class Pager {
    private let process: Process

    /// Starts the pager and points standard output at it; nil when there is to be none.
    static func start(disabled: Bool) -> Pager? {
        guard !disabled, isatty(STDOUT_FILENO) == 1 else { return nil }
        let environment = ProcessInfo.processInfo.environment
        let command = environment["PAGER"] ?? "less -FRX"
        guard !command.trimmingCharacters(in: .whitespaces).isEmpty, command != "cat" else { return nil }
        let pipe = Pipe()
        let process = Process()
        // PAGER is a command line, as for git and man: the shell splits it.
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        process.standardInput = pipe
        var childEnvironment = environment
        if childEnvironment["LESS"] == nil { childEnvironment["LESS"] = "FRX" }
        process.environment = childEnvironment
        do { try process.run() } catch { return nil }
        fflush(nil)
        dup2(pipe.fileHandleForWriting.fileDescriptor, STDOUT_FILENO)
        try? pipe.fileHandleForWriting.close()
        // Quitting the pager early closes the pipe: the write fails (rather than a signal killing
        // the process), `list` stops reading and exits 0, as git does.
        signal(SIGPIPE, SIG_IGN)
        return Pager(process: process)
    }

    private init(process: Process) { self.process = process }

    /// Ends the output and waits for the person to quit the pager.
    func finish() {
        fflush(nil)
        close(STDOUT_FILENO)
        process.waitUntilExit()
    }
}
