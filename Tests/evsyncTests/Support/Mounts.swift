import Foundation
import Testing
import TestSupport

/// Real file systems for the tests of a full disk and of read-only media:
/// a small tmpfs, a read-only bind mount, an immutable file. They need root
/// (`CAP_SYS_ADMIN`, `CAP_LINUX_IMMUTABLE`); the tests that use them are
/// enabled only where a trial run works, and undo what they did on every path.
enum Mounts {
    /// Whether this process can mount a tmpfs and bind mounts: tried once.
    static let permitted: Bool = {
        guard geteuid() == 0, let directory = try? scratchDirectory("mount-trial") else { return false }
        defer { try? FileManager.default.removeItem(at: directory) }
        guard (try? tmpfs(at: directory, size: "64k")) != nil else { return false }
        unmount(directory)
        return true
    }()

    /// Whether this process can make a file immutable (`chattr +i`) where temporary files live: tried once.
    static let immutablePermitted: Bool = {
        guard geteuid() == 0, let directory = try? scratchDirectory("chattr-trial") else { return false }
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("file")
        guard FileManager.default.createFile(atPath: file.path, contents: Data("x".utf8)),
              (try? setImmutable(file, true)) != nil else { return false }
        defer { try? setImmutable(file, false) }
        return open(file.path, O_WRONLY) < 0 && errno == EPERM
    }()

    /// Whether this process can make an ext4 file system in a file and mount it through a loop device: tried once.
    static let loopPermitted: Bool = {
        guard permitted, let directory = try? scratchDirectory("loop-trial") else { return false }
        defer { try? FileManager.default.removeItem(at: directory) }
        guard let disk = try? LoopDisk(in: directory, size: "16M") else { return false }
        disk.detach()
        return true
    }()

    /// An ext4 file system in a file, mounted through a loop device: a real disk
    /// whose device can be copied at any instant. A copy holds what the file
    /// system has written to the device and nothing of its page cache: the
    /// disk as a power cut at that instant would leave it.
    struct LoopDisk {
        let image: URL
        let device: String
        let mountPoint: URL

        /// Makes an image of `size` (as `truncate -s`) in `directory` and mounts it there.
        init(in directory: URL, size: String) throws {
            let image = directory.appendingPathComponent("disk-\(UUID().uuidString).img")
            try run("truncate", ["-s", size, image.path])
            try run("mkfs.ext4", ["-q", image.path])
            try self.init(mounting: image)
        }

        private init(mounting image: URL) throws {
            let device = try output("losetup", ["-f", "--show", image.path]).trimmingCharacters(in: .whitespacesAndNewlines)
            let mountPoint = image.deletingPathExtension()
            do {
                try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
                try run("mount", [device, mountPoint.path])
            } catch {
                try? run("losetup", ["-d", device])
                throw error
            }
            (self.image, self.device, self.mountPoint) = (image, device, mountPoint)
        }

        /// Copies the device as it is now, without syncing anything, and mounts the copy
        /// (replaying ext4's journal, as after a power cut).
        ///
        /// The copy takes a while, and a write landing behind it while a later one lands ahead would make
        /// a disk no power cut leaves: one missing a write that was flushed before a write it holds. So
        /// the processes `pausing` names (the writers) are stopped for the copy; what the kernel writes
        /// back meanwhile was not flushed, and may or may not be on a disk after a power cut.
        /// `whilePaused` runs once they are stopped, before the copy: what it reads of them is all they did before it.
        func powerCut(pausing processes: [pid_t] = [], whilePaused: () -> Void = {}) throws -> LoopDisk {
            for process in processes { kill(process, SIGSTOP) }
            defer { for process in processes { kill(process, SIGCONT) } }
            for process in processes { Self.waitUntilStopped(process) }
            whilePaused()
            let copy = image.deletingLastPathComponent().appendingPathComponent("cut-\(UUID().uuidString).img")
            try run("cp", ["--sparse=always", image.path, copy.path])
            return try LoopDisk(mounting: copy)
        }

        /// Waits (a second at most) until `process` shows as stopped: its write under way, if any, is done.
        private static func waitUntilStopped(_ process: pid_t) {
            for _ in 0..<1000 {
                guard let stat = try? String(contentsOfFile: "/proc/\(process)/stat", encoding: .utf8),
                      let close = stat.lastIndex(of: ")") else { return }
                if stat[close...].dropFirst(2).first == "T" { return }
                usleep(1_000)
            }
        }

        /// Mounts the file system again, read-only or read-write.
        func remount(readOnly: Bool) throws {
            try run("mount", ["-o", readOnly ? "remount,ro" : "remount,rw", mountPoint.path])
        }

        func detach() {
            Mounts.unmount(mountPoint)
            try? run("losetup", ["-d", device])
        }
    }

    /// Mounts a tmpfs of `size` (as `mount -o size=`) on `directory`.
    static func tmpfs(at directory: URL, size: String) throws {
        try run("mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", directory.path])
    }

    /// Makes `source` visible, read-only, at `directory`.
    static func readOnlyBind(_ source: URL, at directory: URL) throws {
        try run("mount", ["--bind", source.path, directory.path])
        do {
            try run("mount", ["-o", "remount,ro,bind", directory.path])
        } catch {
            unmount(directory)
            throw error
        }
    }

    /// Unmounts `directory`; lazily if it is busy, so the test's directory can still go.
    static func unmount(_ directory: URL) {
        if (try? run("umount", [directory.path])) == nil { try? run("umount", ["-l", directory.path]) }
    }

    /// Sets or clears the immutable attribute of `file`.
    static func setImmutable(_ file: URL, _ on: Bool) throws {
        try run("chattr", [on ? "+i" : "-i", file.path])
    }

    private static func scratchDirectory(_ label: String) throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("evsync-\(label)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private static func run(_ tool: String, _ arguments: [String]) throws {
        _ = try output(tool, arguments)
    }

    /// Runs `tool` and returns what it printed on standard output.
    private static func output(_ tool: String, _ arguments: [String]) throws -> String {
        guard let path = ProcessRunner.which(tool) ?? ["/usr/bin/\(tool)", "/bin/\(tool)", "/usr/sbin/\(tool)", "/sbin/\(tool)"]
            .first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw Failure(description: "no \(tool) on this machine")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            throw Failure(description: "\(tool) \(arguments.joined(separator: " ")) failed (\(process.terminationStatus))")
        }
        return String(decoding: printed, as: UTF8.self)
    }
}
