import Foundation

/// Runs a command that starts a daemon (tmux, `Tools/kinto start`) and returns once the
/// command itself exits, with its status and standard output.
///
/// Not Foundation's `Process` (`ChildSpawn` says why): the daemon keeps what it inherited open,
/// and `Process` was seen never to notice the command's exit then (a zombie, `waitUntilExit`
/// waiting for ever). Here the output goes to files, and `waitpid` waits for the command alone.
public enum DaemonStarter {
    /// - Parameter environment: the command's; nil, this process's.
    public static func run(_ argv: [String], environment: [String: String]? = nil) throws -> (status: Int32, stdout: String, stderr: String) {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("daemon-starter-\(UUID().uuidString).out")
        let errors = output.appendingPathExtension("err")
        defer {
            try? FileManager.default.removeItem(at: output)
            try? FileManager.default.removeItem(at: errors)
        }
        let pid = try ChildSpawn.spawn(argv, environment: environment ?? ProcessInfo.processInfo.environment,
                                       stdin: "/dev/null", stdout: output.path, stderr: errors.path)
        let (status, killedBySignal) = ChildSpawn.wait(for: pid)
        let exit = killedBySignal ? 128 + status : status
        func text(_ file: URL) -> String { String(decoding: (try? Data(contentsOf: file)) ?? Data(), as: UTF8.self) }
        return (exit, text(output), text(errors))
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }
}
