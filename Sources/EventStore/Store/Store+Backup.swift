import Foundation
import Storage

/// Backups: what the damage messages send a user back to.
extension Store {
    /// Writes a consistent, compacted copy of the store to the directory `destination`, which must not
    /// exist or must be empty.
    ///
    /// The copy is one read snapshot of the store, so other processes go on writing and syncing while it
    /// is made. It holds all that a store holds: the log, the views, and in `meta` the remembered remote,
    /// the pull cursors and the last sync; free pages are left out. The archive segments of a compacted store
    /// are copied too, into the backup's `archive/`. The schemas are not part of a store
    /// (they come from the directory given with `--schemas`, or are built in), nor is `lock.mdb` or `sync.lock`.
    ///
    /// It is written into a new sibling of `destination` (`.NAME.partial-XXXXXX`), flushed to disk, opened as a
    /// store to check it, and only then renamed to `destination`: a crash leaves no partial backup under that
    /// name. The directory is its owner's only (0700, its `data.mdb` 0600), as the store is.
    ///
    /// A backup is a store: `Store(directory: destination)` (the CLI's `--store DIR`) opens it as it is, and
    /// copying it to where the store belongs restores it. A store restored from a backup older than its last
    /// sync syncs cleanly: the pull brings what the server got since, and recognises the changes that were
    /// pending in the backup and pushed since as already there, so none is pushed twice.
    /// - Parameter destination: the backup's directory; its parent must exist.
    /// - Returns: where the backup is, how many events it holds and its size.
    /// - Throws: `.invalidData` when `destination` exists and is not an empty directory; `.notFound` when its
    ///   parent does not exist; `.diskFull` or `.readOnly` when it cannot be written; `.corrupt` when the store is damaged.
    @discardableResult
    public func backup(to destination: String) throws(StoreError) -> Backup {
        // Split by hand: Foundation's NSString path methods trap on some one-letter paths.
        var path = destination
        while path.count > 1, path.hasSuffix("/") { path.removeLast() }
        let slash = path.lastIndex(of: "/")
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        let parent = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        guard !["", ".", ".."].contains(name) else {
            throw StoreError(.invalidData, "'\(destination)' cannot be a backup's directory: name a new or empty directory")
        }
        try Self.checkBackupDestination(path, parent: parent)
        var template = Array("\(parent)/.\(name).partial-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ $0.baseAddress.flatMap(mkdtemp) }) else {
            throw backupFailure(StorageError(code: errno, operation: "creating a directory in \(parent)"), path, parent: parent)
        }
        let partial = String(cString: made)
        do {
            let bytes = try writeCopy(into: partial)
            let events = try Self.check(copy: partial)
            // The check's lock file is no part of a store: LMDB makes one for whoever opens it.
            unlink(partial + "/lock.mdb")
            try Self.flush(directory: partial)
            guard rename(partial, path) == 0 else {
                if errno == ENOTEMPTY || errno == EEXIST || errno == ENOTDIR {
                    throw StoreError(.invalidData, "\(path) is no longer empty: a backup goes to a new or empty directory, never over files")
                }
                throw StorageError(code: errno, operation: "renaming \(partial) to \(path)")
            }
            try? Self.flush(directory: parent)
            return Backup(directory: path, events: events, bytes: bytes)
        } catch {
            try? FileManager.default.removeItem(atPath: partial)
            throw backupFailure(error, path, parent: parent)
        }
    }

    /// Refuses a destination that holds anything: a backup never mixes with other files, nor replaces them.
    private static func checkBackupDestination(_ path: String, parent: String) throws(StoreError) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            guard FileManager.default.fileExists(atPath: parent, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw StoreError(.notFound, "no directory \(parent) to hold the backup \(path)")
            }
            return
        }
        guard isDirectory.boolValue else {
            throw StoreError(.invalidData, "\(path) exists and is not a directory: a backup goes to a new or empty directory")
        }
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: path) else {
            throw StoreError(.readOnly, "cannot read the directory \(path) (permission denied)")
        }
        guard entries.isEmpty else {
            throw StoreError(.invalidData, "\(path) is not empty: a backup goes to a new or empty directory, never over files")
        }
    }

    /// Copies the store into `directory/data.mdb`, flushed to disk; returns its size in bytes.
    private func writeCopy(into directory: String) throws -> Int {
        let descriptor = open(directory + "/data.mdb", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, Environment.fileMode)
        guard descriptor >= 0 else { throw StorageError(code: errno, operation: "creating \(directory)/data.mdb") }
        defer { close(descriptor) }
        try environment.copyCompacted(to: descriptor)
        guard fsync(descriptor) == 0 else { throw StorageError(code: errno, operation: "flushing \(directory)/data.mdb") }
        var status = stat()
        let bytes = fstat(descriptor, &status) == 0 ? Int(status.st_size) : 0
        return bytes + (try copyArchive(into: directory))
    }

    /// Copies the archive segments, flushed, after the data file: a segment is in `archive/` before any commit
    /// refers to it and never changes after, so those there now hold every event the copied log lacks.
    private func copyArchive(into directory: String) throws -> Int {
        let fileManager = FileManager.default
        let names = ((try? fileManager.contentsOfDirectory(atPath: archiveDirectory)) ?? []).filter { $0.hasSuffix(".evarchive") }.sorted()
        guard !names.isEmpty else { return 0 }
        let destination = directory + "/archive"
        try fileManager.createDirectory(atPath: destination, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        var bytes = 0
        for name in names {
            let target = destination + "/" + name
            try fileManager.copyItem(atPath: (archiveDirectory as NSString).appendingPathComponent(name), toPath: target)
            let descriptor = open(target, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw StorageError(code: errno, operation: "opening \(target)") }
            defer { close(descriptor) }
            guard fsync(descriptor) == 0 else { throw StorageError(code: errno, operation: "flushing \(target)") }
            var status = stat()
            if fstat(descriptor, &status) == 0 { bytes += Int(status.st_size) }
        }
        try Self.flush(directory: destination)
        return bytes
    }

    /// Opens the copy as a store would be opened (which checks that its log ends where its last commit left
    /// it), and returns its events' count; the copy is closed again on return.
    private static func check(copy directory: String) throws -> UInt64 {
        try Store(directory: directory).lastSeq()
    }

    static func flush(directory: String) throws {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw StorageError(code: errno, operation: "opening \(directory)") }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw StorageError(code: errno, operation: "flushing \(directory)") }
    }

    /// What went wrong, said of the backup rather than the store, unless it is the store's damage.
    private func backupFailure(_ error: any Error, _ path: String, parent: String) -> StoreError {
        guard let failure = error as? StorageError else { return wrap(error) }
        if failure.kind == .damaged { return wrap(error) }
        if failure.kind == .diskFull || failure.leftDeviceFull(holding: parent) {
            return StoreError(.diskFull, "no space left on the device holding \(parent): the backup \(path) was not written; free some space and retry",
                              cause: failure)
        }
        let what = "cannot write the backup \(path) (\(failure.operation): \(failure.explanation))"
        return failure.kind == .readOnly
            ? StoreError(.readOnly, "\(what): choose a directory this user may write", cause: failure)
            : StoreError(.failure, what, cause: failure)
    }
}

/// A backup `Store.backup(to:)` wrote.
public struct Backup: Sendable, Equatable {
    /// Its directory: a store, which `Store(directory:)` opens.
    public let directory: String
    /// The events it holds: the log as it was when the copy began.
    public let events: UInt64
    /// The size of its data file, in bytes.
    public let bytes: Int
}
