import Foundation
import Testing

/// Runs a command that starts a daemon (tmux, `Tools/kinto start`) and returns once the
/// command itself exits, with its status and standard output.
///
/// Not Foundation's `Process` (`ChildSpawn` says why): the daemon keeps what it inherited open,
/// and `Process` was seen never to notice the command's exit then (a zombie, `waitUntilExit`
/// waiting for ever). `RunningProcess` puts the output in files and waits for the command alone.
public enum DaemonStarter {
    /// - Parameter environment: the command's; nil, this process's.
    /// - Returns: the exit status, 128 + the signal for a command killed by one.
    public static func run(_ argv: [String], environment: [String: String]? = nil) throws -> (status: Int32, stdout: String, stderr: String) {
        let output = try RunningProcess(executable: argv[0], arguments: Array(argv.dropFirst()),
                                        environment: environment ?? ProcessInfo.processInfo.environment, input: .none).finish()
        return (output.killedBySignal ? 128 + output.status : output.status, output.stdout, output.stderr)
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }
}
