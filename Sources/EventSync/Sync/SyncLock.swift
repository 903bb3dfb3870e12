import EventStore
import Foundation

/// One sync per store at a time, across processes: an exclusive `flock` on
/// `sync.lock` in the store directory. The kernel drops it when the holder
/// exits, however it exits, so a killed sync never leaves the store locked.
final class SyncLock {
    private let descriptor: Int32

    init(directory: String) throws(SyncError) {
        let path = directory + "/sync.lock"
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw SyncError(.failure, "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            close(descriptor)
            throw SyncError(.busy, "sync already in progress")
        }
        self.descriptor = descriptor
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
