public import Foundation

/// An executable SwiftPM built beside the tests: `evsync`, `evsync-fuzz`, `GuardProbe`. A test target that depends
/// on an executable target has it built first, into the products directory that holds the test bundle:
/// on Linux `.build/<triple>/debug/`, beside `evsyncPackageTests.xctest` (an executable, whose directory is
/// `Bundle.main.bundleURL`); on macOS the `.xctest` is a bundle in that directory. The one place tests look.
public enum BuiltProduct {
    /// The products directory: where the test bundle is.
    public static let directory: URL = {
        var bundle = Bundle.main.bundleURL
        if bundle.pathExtension == "xctest" { bundle.deleteLastPathComponent() }
        return bundle
    }()

    /// The product `name` in the products directory (whether built or not: a test that runs it says so).
    public static func url(_ name: String) -> URL {
        directory.appendingPathComponent(name)
    }

    /// The `evsync` binary: `EVSYNC_TESTS_BINARY` when set (a release build, an installed copy), else the one built here.
    public static let evsync: URL = {
        if let path = ProcessInfo.processInfo.environment["EVSYNC_TESTS_BINARY"], !path.isEmpty { return URL(fileURLWithPath: path) }
        return url("evsync")
    }()
}
