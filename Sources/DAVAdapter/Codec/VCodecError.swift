/// Why a text is not iCalendar or vCard as evsync reads it: the line where it went wrong and a one-line reason.
///
/// The codec never traps on input: whatever a server or another client sent ends in a value or in this error.
public struct VCodecError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The physical line (1-based) where the problem starts, or nil when it is the text as a whole.
    public let line: Int?
    /// What is wrong, in one line (`END:VEVENT closes BEGIN:VALARM`).
    public let reason: String

    public init(line: Int?, _ reason: String) {
        self.line = line
        self.reason = reason
    }

    public var description: String { line.map { "line \($0): \(reason)" } ?? reason }
}
