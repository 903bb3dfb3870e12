import Foundation

// The CLI is a thin layer: parse the words, call the library, print.
let exitCode = CommandLine.run(Array(CommandLine.arguments.dropFirst()))
fflush(nil)
exit(exitCode)
