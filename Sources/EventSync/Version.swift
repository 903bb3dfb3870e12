/// The version of evsync, in one place: the library, the CLI and the HTTP
/// user agent all report this string.
///
/// ```swift
/// print("evsync \(EvsyncVersion.current)")   // evsync 0.1.0, as `evsync --version` prints it
/// ```
public enum EvsyncVersion {
    /// `major.minor.patch`.
    public static let current = "0.1.0"

    /// What a remote adapter sends as its `User-Agent`: `evsync/0.1.0`.
    public static var userAgent: String { "evsync/\(current)" }
}
