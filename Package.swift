// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "evsync",
    products: [
        .library(name: "EventSync", targets: ["EventSync"]),
        .executable(name: "evsync", targets: ["evsync"]),
    ],
    targets: [
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"])]
        ),
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .target(name: "EventSync", dependencies: ["CLMDB", "CCurl"]),
        .executableTarget(name: "evsync", dependencies: ["EventSync"]),
        .testTarget(name: "EventSyncTests", dependencies: ["EventSync"]),
        .testTarget(name: "evsyncTests", dependencies: ["EventSync", "evsync"]),
        .testTarget(name: "SyncTests", dependencies: ["EventSync", "evsync"]),
    ],
    swiftLanguageModes: [.v6]
)

// Strict concurrency everywhere, set once (as swift-log does).
for target in package.targets where target.type != .system {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    target.swiftSettings = settings
}
