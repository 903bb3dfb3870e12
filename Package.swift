// swift-tools-version:6.0
import PackageDescription

// The targets are the layers, and each may import only the ones below it, so
// the compiler keeps the direction (docs/architecture.md):
//
//   evsync (CLI) → Sealing, KintoAdapter, ParseAdapter, DAVAdapter → EventSync (engine) → EventStore → Storage → CLMDBGuard → CLMDB
//                                                                                  ↘ CZstd       ↘ CCRC32C, CFileStatus
//       ↘ CPrctl, CTerminal  ↘ RemoteHTTP → HTTPTransport → CCurl (RemoteHTTP also → EventSync)
//
// EventStore knows no network and no server; EventSync knows no LMDB and no
// particular server; KintoAdapter is one remote among possible others.
let package = Package(
    name: "evsync",
    products: [
        .library(name: "EventSync", targets: ["EventStore", "EventSync", "KintoAdapter", "ParseAdapter", "DAVAdapter", "Sealing"]),
        .executable(name: "evsync", targets: ["evsync"]),
    ],
    targets: [
        .systemLibrary(name: "CLMDB", pkgConfig: "lmdb", providers: [.apt(["liblmdb-dev"])]),
        // zstd, for the blocks of archive segments (Store+Compact.swift).
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        // libsodium: Argon2id and XChaCha20-Poly1305 for end-to-end encrypted sync (Sealing); no cryptography of our own.
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // prctl(2), for the CLI to keep credentials out of core dumps (a header only: it is in libc).
        .systemLibrary(name: "CPrctl"),
        // wcwidth(3) and ferror(stdout), for the CLI's tables and streamed output (a header only: libc).
        .systemLibrary(name: "CTerminal"),
        // The commit a release was built from, given by Tools/install (a header only).
        .systemLibrary(name: "CBuildInfo"),
        // LMDB calls that return an error rather than crash when a damaged data file sends LMDB astray.
        .target(name: "CLMDBGuard", dependencies: ["CLMDB"]),
        // CRC-32C by SSE 4.2's instruction, for the checksum of every event read and written (CRC32C.swift).
        .target(name: "CCRC32C"),
        // statx(2) for a file's identity and size without reading its times, at every commit (Environment.swift).
        .target(name: "CFileStatus"),
        // The storage engine: LMDB's environment, transactions, cursors and group commit, behind a narrow `package` API,
        // so that no other module reaches LMDB's handles or files; and the checksum of stored bytes.
        .target(name: "Storage", dependencies: ["CLMDB", "CLMDBGuard", "CCRC32C", "CFileStatus"]),
        // The local store: JSON, log, views, schemas, the Store API and its ingest API for sync batches.
        .target(name: "EventStore", dependencies: ["Storage", "CZstd"]),
        // The sync engine: pull, push, merge, lock, report, the SyncRemote protocol and an in-memory remote.
        .target(name: "EventSync", dependencies: ["EventStore"]),
        // End-to-end encrypted sync (docs/encryption.md): a remote that seals every record before it leaves the
        // device and opens every record pulled, its keys wrapped by a passphrase and kept on the server.
        .target(name: "Sealing", dependencies: ["EventSync", "EventStore", "CSodium"]),
        // HTTP over libcurl and the one retry loop, shared by the remote adapters; it knows no sync and no server.
        .target(name: "HTTPTransport", dependencies: ["CCurl"]),
        // What the adapters share above HTTPTransport: their settings and their error, in the engine's terms.
        .target(name: "RemoteHTTP", dependencies: ["EventSync", "HTTPTransport"]),
        // The Kinto remote: Kinto's protocol.
        .target(name: "KintoAdapter", dependencies: ["EventSync", "EventStore", "HTTPTransport", "RemoteHTTP"]),
        // The Parse Server remote: Parse's REST protocol and its weak spots (no conditional writes, no tombstones).
        .target(name: "ParseAdapter", dependencies: ["EventSync", "EventStore", "HTTPTransport", "RemoteHTTP"]),
        // The CalDAV/CardDAV remote (docs/dav.md): the iCalendar/vCard content-line codec, the Holiday and Birthday
        // mappings, a WebDAV XML reader of its own, discovery, sync-collection pulls and conditional pushes.
        .target(name: "DAVAdapter", dependencies: ["EventSync", "EventStore", "HTTPTransport", "RemoteHTTP"]),
        .executableTarget(name: "evsync", dependencies: ["EventStore", "EventSync", "KintoAdapter", "ParseAdapter", "DAVAdapter", "Sealing", "CPrctl", "CTerminal", "CBuildInfo"]),
        // The decoders of outside input under libFuzzer (Tools/fuzz); a normal build replays the corpus.
        .executableTarget(name: "evsync-fuzz", dependencies: ["EventStore", "KintoAdapter", "DAVAdapter"], path: "Tests/Fuzz",
                          exclude: ["Corpus"]),
        // What the test targets share: processes, temporary directories, seeded random, a clock,
        // remote doubles and the random two-store world the engine tests run on any remote.
        .target(name: "TestSupport", dependencies: ["EventStore", "EventSync"], path: "Tests/Support"),
        // An app with its own signal handlers and a store, for the crash-guard tests to run as a child process.
        .executableTarget(name: "GuardProbe", dependencies: ["EventStore"], path: "Tests/GuardProbe"),
        .testTarget(name: "EventStoreTests", dependencies: ["EventStore", "Storage", "GuardProbe", "TestSupport"], exclude: ["Fixtures"]),
        // The engine without a server (RemoteFold's rules, InMemoryRemote): with EventStoreTests, the core loop.
        .testTarget(name: "EventSyncTests", dependencies: ["EventStore", "EventSync", "TestSupport"]),
        // The adapters' decisions without a server (KintoPull's and ParsePull's steps as table rows).
        .testTarget(name: "AdapterTests", dependencies: ["EventStore", "EventSync", "KintoAdapter", "ParseAdapter"]),
        // The DAV codec and mappings without a server: folding, escaping, round trips of other clients' items.
        .testTarget(name: "DAVAdapterTests", dependencies: ["EventStore", "EventSync", "DAVAdapter", "TestSupport"]),
        // Sealing without a server: libsodium's primitives as evsync uses them, the keyring, the envelope, what
        // sealing commits. The sealed remote's scenarios, lies included, are in SyncTests (SealedRemoteTests), on
        // each server.
        .testTarget(name: "SealingTests", dependencies: ["EventStore", "EventSync", "Sealing", "TestSupport"]),
        .testTarget(name: "evsyncTests", dependencies: ["EventStore", "EventSync", "evsync", "evsync-fuzz", "TestSupport"]),
        .testTarget(name: "SyncTests", dependencies: ["EventStore", "EventSync", "KintoAdapter", "ParseAdapter", "DAVAdapter", "HTTPTransport", "Sealing",
                                                   "evsync", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)

// Strict concurrency everywhere, set once (as swift-log does); imports are
// internal unless marked, so a module's dependencies do not leak to its users.
for target in package.targets where target.type != .system {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    target.swiftSettings = settings
}
