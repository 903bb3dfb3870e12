import EventStore
import Foundation

// The CLI is a thin layer: parse the words, call the library, print.
// It opts in to the crash guard, so a damaged store is an error (exit 74), never a signal.
CrashGuard.install()
let exitCode = CommandLine.run(CommandLine.validUTF8Arguments)
fflush(nil)
exit(exitCode)
