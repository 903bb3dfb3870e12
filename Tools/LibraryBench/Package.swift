// swift-tools-version:6.0
import PackageDescription

// The issue-24 library bench: evsync's library API and SQLite's C API doing the same work, side by side.
// Its own package so that evsync's package never depends on SQLite; built and run by Tools/bench only (case 13).
let package = Package(
    name: "LibraryBench",
    dependencies: [.package(name: "evsync", path: "../..")],
    targets: [
        .systemLibrary(name: "CSQLite", providers: [.apt(["libsqlite3-dev"])]),
        .executableTarget(name: "LibraryBench", dependencies: ["CSQLite", .product(name: "EventSync", package: "evsync")]),
    ],
    swiftLanguageModes: [.v6]
)
