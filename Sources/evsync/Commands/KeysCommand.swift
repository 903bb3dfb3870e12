import EventStore
import EventSync
import Foundation
import Sealing

/// `evsync keys`: the keys of the store's end-to-end encrypted remote (docs/encryption.md): a new key, or a new passphrase.
enum KeysCommand {
    static let keys = Command(
        name: "keys", section: .server,
        usage: "evsync keys rotate|passphrase [--passphrase-file FILE] [--new-passphrase-file FILE] [--auth-file FILE] [--allow-insecure-auth]",
        summary: "rotate the encrypted remote's key, or change its passphrase",
        description: """
        For a store that syncs end-to-end encrypted (sync --encrypt) with its remote.
        rotate: a new key seals every write from now on; records sealed under older keys are re-sealed a few
        hundred at each later sync, never all at once, and every device still opens them.
        passphrase: the keys are wrapped by a new passphrase (--new-passphrase-file FILE, or asked twice without
        echo); other devices are told at their next sync, in one line, to give the new one.
        The passphrase comes from --passphrase-file FILE, EVSYNC_PASSPHRASE_FILE or a prompt, never the command line.
        Exit 78 when the passphrase does not open the remote's keys.
        """,
        positionals: 1...1,
        options: [
            Option("--passphrase-file", value: "FILE", help: "a file holding the passphrase (or EVSYNC_PASSPHRASE_FILE; else a prompt)"),
            Option("--new-passphrase-file", value: "FILE", help: "passphrase: a file holding the new passphrase (else asked twice)"),
            Option("--auth-file", value: "FILE", help: "a file holding user:password (or EVSYNC_AUTH_FILE; else EVSYNC_AUTH)"),
            Option("--allow-insecure-auth", help: "send credentials over plain http to another machine (or EVSYNC_ALLOW_INSECURE_AUTH=1)"),
        ]
    ) { arguments, global in
        let action = arguments.positionals[0]
        guard ["rotate", "passphrase"].contains(action) else {
            throw CLIError(.usage, "evsync keys takes rotate or passphrase, not '\(action)'")
        }
        if action == "rotate", arguments.value("--new-passphrase-file") != nil {
            throw CLIError(.usage, "--new-passphrase-file is for evsync keys passphrase")
        }
        let store = try global.openStore(create: false)
        guard let address = try store.rememberedRemote(), try store.sealingValue("place", remote: address) != nil else {
            throw CLIError(.usage, "this store syncs with no end-to-end encrypted remote (evsync sync --encrypt makes one)")
        }
        let credentials = try SyncCommand.credentials(authFile: arguments.value("--auth-file"))
        let allowInsecureAuth = try arguments.has("--allow-insecure-auth") || EnvironmentVariable.flag("EVSYNC_ALLOW_INSECURE_AUTH")
        let choice = try RemoteChoice(url: address, given: nil)
        let inner = try choice.makeRemote(credentials: credentials, allowInsecureAuth: allowInsecureAuth, wantsTotals: false, retries: nil)
        let passphrase = try PassphraseSource(file: arguments.value("--passphrase-file")).read()
        let remote = SealedRemote(inner, store: store) { passphrase }
        if action == "rotate" {
            let id = try remote.rotateKey(entities: store.schemas.entities.map(\.name))
            print("new writes to \(Output.safe(address)) are sealed with key \(id); older records are re-sealed a few hundred at each sync")
        } else {
            let new: String
            if let file = arguments.value("--new-passphrase-file") {
                new = try PassphraseSource(file: file).read()
            } else {
                new = try PassphraseSource.prompt("New passphrase: ")
                guard try PassphraseSource.prompt("The new passphrase again: ") == new else {
                    throw CLIError(.usage, "the two new passphrases differ: nothing was changed")
                }
            }
            try remote.changePassphrase(to: new)
            print("the passphrase of \(Output.safe(address)) is changed; other devices are asked for the new one at their next sync")
        }
    }
}
