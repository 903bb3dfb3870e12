import Foundation

/// A directory that exists for the life of the object.
public final class TemporaryDirectory: Sendable {
    public let path: String

    public init(_ label: String = "synctests") throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    public func file(_ name: String) -> String { path + "/" + name }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}
