import Foundation
import Synchronization

/// One open environment per data file per process, shared by every `Store` on it.
///
/// LMDB forbids opening one environment twice in a process: its locks on
/// `lock.mdb` are `fcntl` locks, which belong to the process, so closing either
/// environment drops the other's. Other processes then take this one for dead,
/// clear its reader slots, and reuse pages it is still reading (measured: adds
/// reported stored and then missing). So a directory already open here is
/// given the environment it has, keyed by the data file's device and inode,
/// and the environment closes when the last `Store` using it goes.
///
/// The first opening sets the environment's mode: a later `Store(importingInto:)`
/// of a store open the usual way shares that (and imports without `MDB_WRITEMAP`),
/// and a store opened read-only stays so for all.
package enum SharedEnvironments {
    package struct Opened {
        package let environment: Environment
        /// Whether its map is smaller than the first size tried.
        package let mapReduced: Bool
        /// Why it was opened read-only (an `errno`), if it was.
        package let readOnlyBecause: Int32?

        package init(environment: Environment, mapReduced: Bool, readOnlyBecause: Int32?) {
            (self.environment, self.mapReduced, self.readOnlyBecause) = (environment, mapReduced, readOnlyBecause)
        }
    }

    fileprivate struct FileKey: Hashable {
        let device: UInt64
        let inode: UInt64
    }

    private struct Entry {
        let opened: Opened
        var users: Int
    }

    /// Opening and closing both happen under this lock: an environment being
    /// closed is never open beside a new one on the same file.
    private static let open = Mutex<[FileKey: Entry]>([:])

    /// The environment open on `directory`'s data file, or a new one from `opening`.
    /// Each lease must be given back with `release` (`EnvironmentLease` does).
    package static func lease(_ directory: String, opening: () throws -> Opened) throws -> EnvironmentLease {
        try open.withLock { (entries) throws -> EnvironmentLease in
            if let key = fileKey(of: directory + "/data.mdb"), var entry = entries[key] {
                entry.users += 1
                entries[key] = entry
                return EnvironmentLease(entry.opened, key: key)
            }
            let opened = try opening()
            // A new store's file exists once its environment is open.
            guard let key = fileKey(of: directory + "/data.mdb") else { return EnvironmentLease(opened, key: nil) }
            entries[key] = Entry(opened: opened, users: 1)
            return EnvironmentLease(opened, key: key)
        }
    }

    fileprivate static func release(_ key: FileKey, environment: Environment) {
        open.withLock { entries in
            guard var entry = entries[key], entry.opened.environment === environment else { return }
            entry.users -= 1
            if entry.users > 0 {
                entries[key] = entry
            } else {
                entries[key] = nil
                entry.opened.environment.close()
            }
        }
    }

    private static func fileKey(of path: String) -> FileKey? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return FileKey(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
    }

    /// How many `Store`s of this process use the environment on `directory`'s data file (for tests).
    package static func users(of directory: String) -> Int {
        open.withLock { entries in fileKey(of: directory + "/data.mdb").flatMap { entries[$0]?.users } ?? 0 }
    }
}

/// One `Store`'s share of an environment: given back when the store goes.
package final class EnvironmentLease: Sendable {
    package let opened: SharedEnvironments.Opened
    private let key: SharedEnvironments.FileKey?

    fileprivate init(_ opened: SharedEnvironments.Opened, key: SharedEnvironments.FileKey?) {
        self.opened = opened
        self.key = key
    }

    package var environment: Environment { opened.environment }

    deinit {
        if let key { SharedEnvironments.release(key, environment: opened.environment) }
    }
}
