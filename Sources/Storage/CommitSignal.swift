import Foundation
import Synchronization

/// Wakes those waiting for a store to change: at once after a commit in this
/// process, and soon after one in another.
///
/// LMDB tells no one of a commit. A commit by another process writes the
/// data file (`pwrite`, or a file time set by `Environment.write` when pages go
/// through the map), so once someone waits, a thread of the signal's own
/// watches the store's directory with inotify, blocked in `poll` until an
/// event comes: an idle store costs no CPU. The same watch sees the data file
/// removed or replaced. Where inotify cannot be had (its limits, a file system
/// without it), `isWatching` is false and waiters poll instead.
package final class CommitSignal: Sendable {
    private struct State {
        /// Bumped at each change seen.
        var generation: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter: UInt64 = 0
        /// The inotify descriptor and the pipe that stops the watcher, once started.
        var watch: (inotify: Int32, stop: Int32)?
        var watchFailed = false
    }

    private let directory: String
    private let state = Mutex(State())

    package init(directory: String) {
        self.directory = directory
    }

    /// How many changes were seen so far: read it before looking at the store, then `wait(past:)` it.
    package var generation: UInt64 { state.withLock { $0.generation } }

    /// Whether other processes' commits are seen (inotify is watching); false until `startWatching`.
    package var isWatching: Bool { state.withLock { $0.watch != nil } }

    /// Wakes every waiter: something changed.
    package func notify() {
        let waiters = state.withLock { state in
            state.generation &+= 1
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once a change after `generation` was seen, or the task is cancelled. Call
    /// `startWatching` before reading `generation`, or another process's commit may come unseen.
    package func wait(past generation: UInt64) async {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state in
                    if state.generation != generation || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }

    /// `wait(past:)`, or `interval` where other processes' commits are not watched.
    package func wait(past generation: UInt64, orAfter interval: Duration) async {
        guard !isWatching else { return await wait(past: generation) }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.wait(past: generation) }
            group.addTask { try? await Task.sleep(for: interval) }
            await group.next()
            group.cancelAll()
        }
    }

    /// Starts watching for other processes' commits, once: before the first look at the store, so that
    /// a commit after that look is seen (inotify reports only what happens once the watch is in place).
    package func startWatching() {
        let descriptors = state.withLock { state -> (Int32, Int32)? in
            guard state.watch == nil, !state.watchFailed else { return nil }
            let inotify = inotify_init1(Int32(IN_CLOEXEC))
            var stop: [Int32] = [-1, -1]
            let events = UInt32(IN_MODIFY | IN_ATTRIB | IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM)
            guard inotify >= 0, inotify_add_watch(inotify, directory, events) >= 0, pipe(&stop) == 0 else {
                if inotify >= 0 { Foundation.close(inotify) }
                state.watchFailed = true
                return nil
            }
            for end in stop { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            state.watch = (inotify, stop[1])
            return (inotify, stop[0])
        }
        guard let (inotify, stopReader) = descriptors else { return }
        // A thread of its own, not a task: it blocks in `poll` for as long as the store is open.
        Thread.detachNewThread { [self] in
            self.watch(inotify: inotify, stop: stopReader)
            Foundation.close(inotify)
            Foundation.close(stopReader)
        }
    }

    /// Reads inotify events until the stop pipe is written or closed, notifying on those about the data file.
    ///
    /// A commit becomes visible when its writer sets the last transaction's number in `lock.mdb`'s shared
    /// memory, just after its last write to `data.mdb`, and that change makes no inotify event: a reader
    /// woken by the write can look a moment too early, find nothing, and wait for ever. So each burst of
    /// events is told again `rechecks` later, once the writer has surely finished; an idle store still
    /// wakes no one.
    private func watch(inotify: Int32, stop: Int32) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var descriptors = [pollfd(fd: inotify, events: Int16(POLLIN), revents: 0), pollfd(fd: stop, events: Int16(POLLIN), revents: 0)]
        var rechecks: ArraySlice<Int32> = []
        while true {
            let ready = poll(&descriptors, 2, rechecks.first ?? -1)
            if ready < 0 { if errno == EINTR { continue } else { return } }
            if ready == 0 {
                rechecks.removeFirst()
                notify()
                continue
            }
            if descriptors[1].revents != 0 { return }
            let count = buffer.withUnsafeMutableBytes { read(inotify, $0.baseAddress, $0.count) }
            if count < 0 { if errno == EINTR || errno == EAGAIN { continue } else { return } }
            if Self.mentionsDataFile(buffer.prefix(count)) {
                notify()
                rechecks = Self.rechecks[...]
            }
        }
    }

    /// How long after a burst of writes to the data file to tell waiters again, in milliseconds (see `watch`).
    private static let rechecks: [Int32] = [2, 20, 200]

    /// Whether a run of inotify events names `data.mdb` (the lock file changes on every read; it is no commit),
    /// or lost events (the queue overflowed), which may have.
    private static func mentionsDataFile(_ bytes: ArraySlice<UInt8>) -> Bool {
        let header = MemoryLayout<inotify_event>.size
        var offset = bytes.startIndex
        while offset + header <= bytes.endIndex {
            let (mask, length) = bytes[offset..<(offset + header)].withUnsafeBytes {
                ($0.loadUnaligned(fromByteOffset: 4, as: UInt32.self), Int($0.loadUnaligned(fromByteOffset: 12, as: UInt32.self)))
            }
            if mask & UInt32(IN_Q_OVERFLOW) != 0 { return true }
            let name = bytes[(offset + header)..<min(offset + header + length, bytes.endIndex)].prefix { $0 != 0 }
            if name.elementsEqual("data.mdb".utf8) { return true }
            offset += header + length
        }
        return false
    }

    /// Stops the watcher thread (the store is closing).
    package func stopWatching() {
        guard let watch = state.withLock({ state in defer { state.watch = nil }; return state.watch }) else { return }
        Foundation.close(watch.stop)
    }
}
