import Foundation

// The CLI is a thin layer: parse the words, call the library, print.
let exitCode = CommandLine.run(CommandLine.validUTF8Arguments)
fflush(nil)
exit(exitCode)
