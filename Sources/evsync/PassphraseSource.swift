import CPrctl
import Foundation

/// Where the passphrase of an end-to-end encrypted remote comes from (docs/encryption.md): `--passphrase-file`,
/// else `EVSYNC_PASSPHRASE_FILE`, else a prompt without echo on the terminal. Never argv, where other users'
/// `ps` would read it; never printed, not even when a passphrase was typed where a file name belongs.
struct PassphraseSource: Sendable {
    /// `--passphrase-file`'s value, if given.
    let file: String?

    /// The passphrase, read when a sealed remote first needs it (once per process).
    func read(prompt: String = "Passphrase: ") throws -> String {
        if let path = file ?? EnvironmentVariable.value("EVSYNC_PASSPHRASE_FILE") {
            let source = file == nil ? "EVSYNC_PASSPHRASE_FILE" : "--passphrase-file"
            guard let data = FileManager.default.contents(atPath: path) else {
                let reason = access(path, F_OK) == 0 ? "it cannot be read" : "no such file"
                throw CLIError(.noInput, "\(source) names no readable file (\(reason); its value is not shown, in case it is the passphrase)")
            }
            Self.keepOutOfCoreDumps()
            // One trailing newline is the file's, not the passphrase's (`echo secret > file`).
            var text = String(decoding: data, as: UTF8.self)
            if text.hasSuffix("\r\n") { text.removeLast(2) } else if text.hasSuffix("\n") { text.removeLast() }
            guard !text.isEmpty else { throw CLIError(.dataError, "the passphrase file given by \(source) is empty") }
            return text
        }
        return try Self.prompt(prompt)
    }

    /// Asks on the controlling terminal with echo off, as ssh and gpg do; refused where there is none.
    static func prompt(_ prompt: String) throws -> String {
        let tty = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard tty >= 0 else {
            throw CLIError(.usage, "an encrypted remote needs its passphrase: give --passphrase-file FILE or EVSYNC_PASSPHRASE_FILE "
                + "(there is no terminal to ask on)")
        }
        defer { close(tty) }
        var saved = termios()
        guard tcgetattr(tty, &saved) == 0 else { throw CLIError(.usage, "cannot ask for the passphrase: the terminal does not answer") }
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO)
        _ = tcsetattr(tty, TCSAFLUSH, &quiet)
        defer {
            _ = tcsetattr(tty, TCSAFLUSH, &saved)
            _ = write(tty, "\n", 1)
        }
        _ = prompt.withCString { write(tty, $0, strlen($0)) }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while Glibc.read(tty, &byte, 1) == 1, byte != UInt8(ascii: "\n") { line.append(byte) }
        keepOutOfCoreDumps()
        guard !line.isEmpty else { throw CLIError(.usage, "no passphrase was given") }
        return String(decoding: line, as: UTF8.self)
    }

    /// A passphrase in memory keeps the process out of core dumps, as credentials do (SyncCommand.credentials).
    private static func keepOutOfCoreDumps() {
        _ = evsync_prctl_set_undumpable()
    }
}
