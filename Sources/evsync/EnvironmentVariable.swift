import Foundation

/// The `EVSYNC_*` variables, read and checked: a value evsync cannot use is
/// refused (exit 64, one line naming the variable), never ignored, so that a
/// typo does not silently turn a setting off. An empty value is as if unset.
enum EnvironmentVariable {
    /// The variable's value; nil when it is unset or empty.
    static func value(_ name: String) -> String? {
        ProcessInfo.processInfo.environment[name].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// A switch: `1` on, `0` (or unset) off.
    static func flag(_ name: String) throws(CLIError) -> Bool {
        switch value(name) {
        case nil, "0": return false
        case "1": return true
        case let text?: throw CLIError(.usage, "\(name) takes 1 or 0, not '\(Output.safe(text))'")
        }
    }

    /// A whole number in `range`; nil when unset.
    static func integer(_ name: String, in range: ClosedRange<Int>) throws(CLIError) -> Int? {
        guard let text = value(name) else { return nil }
        guard let number = Int(text), range.contains(number) else {
            throw CLIError(.usage, "\(name) takes a whole number from \(range.lowerBound) to \(range.upperBound), not '\(Output.safe(text))'")
        }
        return number
    }
}
