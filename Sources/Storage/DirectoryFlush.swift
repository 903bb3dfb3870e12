import Glibc

/// Flushing a directory, so that the names made, renamed or removed in it are on disk: a file's own flush does
/// not make its name durable.
enum DirectoryFlush {
    static func flush(_ path: String) throws(StorageError) {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0, fsync(descriptor) == 0 else {
            let code = errno
            if descriptor >= 0 { close(descriptor) }
            throw StorageError(code: code, operation: "flushing \(path)")
        }
        close(descriptor)
    }
}
