@testable import EventStore
@testable import EventSync
import TestSupport
import Foundation
import Synchronization
import Testing

/// The engine syncing by itself (`start(every:)`): debounced local changes, `syncNow()` coalesced, backoff
/// for a server that cannot be reached, `stop()` after the page at hand. Against `InMemoryRemote`; syncs
/// are counted by the remote's maker (one call per sync), and waits are handshakes on the engine's state.
@Suite("Sync scheduler", .timeLimit(.minutes(2)))
struct SyncSchedulerTests {
    private func makeStore(_ directory: TemporaryDirectory) throws -> Store {
        try Store(directory: directory.file("store"), create: true)
    }

    @Test func aBurstOfTwentyWritesIsPushedByOneSyncAndItsOwnEventsAskForNone() async throws {
        let directory = try TemporaryDirectory()
        let store = try makeStore(directory)
        let remote = InMemoryRemote(pageSize: 50)
        let syncs = Atomic<Int>(0)
        let engine = SyncEngine(store: store) {
            syncs.add(1, ordering: .relaxed)
            return remote
        }
        let looks = Mutex<[SyncScheduler.Look]>([])
        // A debounce longer than the log's polling (200 ms), so that the burst is one whatever the machine's speed.
        var statuses = engine.start(SyncScheduler.Settings(interval: .seconds(3600), debounce: .seconds(1)),
                                    probe: { look in looks.withLock { $0.append(look) } }).makeAsyncIterator()
        #expect(try await Self.nextReport(&statuses).result == .noData, "the sync at start")

        for n in 0..<20 { try store.add("Holiday", id: "h\(n)", fields: holiday("Burst \(n)")) }
        let burst = try await Self.nextReport(&statuses)
        #expect(burst.pushed == 20, "\(burst)")
        #expect(syncs.load(ordering: .relaxed) == 2)
        #expect(remote.records(in: "Holiday").count == 20)

        // The sync's acknowledgements grew the log: the watcher looked at them and found nothing to push.
        let acknowledged = try store.lastSeq()
        try await Self.until { looks.withLock { $0.last?.seq ?? 0 } >= acknowledged }
        #expect(looks.withLock { $0.last?.foundLocalChange } == false)
        #expect(engine.scheduler.withLock { $0 }?.hasLocalChangeWaiting == false)
        #expect(looks.withLock { $0.filter(\.foundLocalChange).count } >= 1)

        let now = try await engine.syncNow()
        #expect(now.result == .noData)
        #expect(syncs.load(ordering: .relaxed) == 3, "start, the burst, syncNow: nothing else")
        await engine.stop()
        #expect(try await Self.nextReport(&statuses) == now, "the run's stream holds syncNow's sync")
        #expect(await statuses.next() == nil, "and ends with the run")
    }

    @Test func syncNowCallsDuringASyncAreAnsweredByExactlyOneMore() async throws {
        let directory = try TemporaryDirectory()
        let store = try makeStore(directory)
        let remote = InMemoryRemote(pageSize: 1)
        remote.put("r0", holiday("Remote"), in: "Holiday")
        let syncs = Atomic<Int>(0)
        let entered = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let engine = SyncEngine(store: store) {
            // The first sync (at start) is held at its first page until the calls are queued.
            guard syncs.add(1, ordering: .relaxed).newValue == 1 else { return remote }
            return HookedRemote(remote, onPage: { page in
                guard page == 1 else { return }
                entered.signal()
                release.wait()
            })
        }
        var statuses = engine.start(every: .seconds(3600), debounce: .zero).makeAsyncIterator()
        try await onThread { entered.wait() }
        #expect(engine.isSyncing)

        let calls = Task {
            try await withThrowingTaskGroup(of: SyncReport.self) { group in
                for _ in 0..<5 { group.addTask { try await engine.syncNow() } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        try await Self.until { engine.scheduler.withLock { $0 }?.waitingCount == 5 }
        release.signal()
        let reports = try await calls.value

        #expect(try await Self.nextReport(&statuses).pulled == 1, "the held sync")
        let next = try await Self.nextReport(&statuses)
        #expect(reports == Array(repeating: next, count: 5), "all five answered by the one sync after it")
        #expect(next.result == .noData)
        #expect(syncs.load(ordering: .relaxed) == 2)
        _ = try await engine.syncNow()
        #expect(syncs.load(ordering: .relaxed) == 3, "nothing ran in between")
        await engine.stop()
    }

    /// Attempts are timed where they start (the remote's maker), so that each gap is at least the wait the
    /// failed report announced; local changes written all along do not bring an attempt forward.
    @Test func anUnreachableServerIsTriedAgainWithGrowingWaitsAndReportedAsFailed() async throws {
        let directory = try TemporaryDirectory()
        let store = try makeStore(directory)
        let attempts = Mutex<[ContinuousClock.Instant]>([])
        let engine = SyncEngine(store: store) {
            attempts.withLock { $0.append(.now) }
            throw SyncError(.unavailable, "no network in this test")
        }
        let settings = SyncScheduler.Settings(interval: .milliseconds(800), debounce: .zero, firstRetry: .milliseconds(50))
        var statuses = engine.start(settings).makeAsyncIterator()
        let writer = Task {
            var n = 0
            while !Task.isCancelled {
                try store.add("Holiday", id: "w\(n)", fields: holiday("Written meanwhile \(n)"))
                n += 1
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        var reports: [SyncReport] = []
        for _ in 0..<6 { reports.append(try await Self.nextReport(&statuses)) }
        writer.cancel()

        #expect(reports.map(\.retryIn) == [50, 100, 200, 400, 800, 800].map { .milliseconds($0) })
        #expect(reports.allSatisfy { $0.result == .failed && $0.failure?.code == .unavailable && $0.error == "no network in this test" })
        let times = attempts.withLock { $0 }
        #expect(times.count >= 6 && times.count <= 7, "\(times.count) attempts")
        for k in 1..<6 {
            let gap = times[k] - times[k - 1]
            #expect(gap >= reports[k - 1].retryIn ?? .zero, "attempt \(k + 1) came \(gap) after the one before")
        }
        // The refresh button does not wait for the backoff.
        await #expect { try await engine.syncNow() } throws: { ($0 as? SyncError)?.code == .unavailable }
        await engine.stop()
        #expect(try store.status().pendingRecords > 0, "nothing was pushed")
    }

    @Test func stopReturnsOnceTheSyncHasStoppedAfterThePageAtHand() async throws {
        let directory = try TemporaryDirectory()
        let store = try makeStore(directory)
        let remote = InMemoryRemote(pageSize: 2)
        for n in 0..<10 { remote.put("r\(n)", holiday("Remote \(n)"), in: "Holiday") }
        let reached = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        // Page 1 is Birthday's (empty), 3 is Holiday's second; the first sync only is held.
        let held = Atomic<Bool>(false)
        let engine = SyncEngine(store: store) {
            HookedRemote(remote, onPage: { page in
                guard page == 3, !held.exchange(true, ordering: .relaxed) else { return }
                reached.signal()
                release.wait()
            })
        }
        var statuses = engine.start(every: .seconds(3600)).makeAsyncIterator()
        try await onThread { reached.wait() }

        let stopped = Atomic<Bool>(false)
        let stopping = Task {
            await engine.stop()
            stopped.store(true, ordering: .relaxed)
        }
        try await Self.until { engine.scheduler.withLock { $0 }?.isStopping == true }
        let returnedEarly = stopped.load(ordering: .relaxed)
        #expect(!returnedEarly, "stop waits for the page at hand")
        release.signal()
        await stopping.value
        #expect(!engine.isSyncing)

        let report = try await Self.nextReport(&statuses)
        #expect(report.interrupted && report.pulled == 4, "\(report)")
        #expect(await statuses.next() == nil)
        #expect(try store.records("Holiday").count == 4)
        #expect(engine.scheduler.withLock { $0 } == nil)
        // Stopped, syncNow is a plain sync, which finishes the job.
        #expect(try await engine.syncNow().pulled == 6)
    }

    @Test func theWaitAfterAFailureDoublesUpToTheIntervalForAnUnreachableServerOnly() {
        let waits = (1...9).map { SyncScheduler.retryDelay(after: .unavailable, failures: $0, first: .seconds(1), interval: .seconds(60)) }
        #expect(waits == [1, 2, 4, 8, 16, 32, 60, 60, 60].map { .seconds($0) })
        #expect(SyncScheduler.retryDelay(after: .server, failures: 2, first: .seconds(1), interval: .seconds(60)) == .seconds(2))
        #expect(SyncScheduler.retryDelay(after: .busy, failures: 1, first: .seconds(1), interval: .seconds(60)) == .seconds(1))
        #expect(SyncScheduler.retryDelay(after: .unauthorized, failures: 1, first: .seconds(1), interval: .seconds(60)) == .seconds(60))
        #expect(SyncScheduler.retryDelay(after: .unavailable, failures: 1_000_000, first: .seconds(1), interval: .seconds(60)) == .seconds(60))
        // `--watch 0.3`: never more than the interval.
        let short = SyncScheduler.Settings(interval: .milliseconds(300), debounce: .zero)
        #expect(SyncScheduler.retryDelay(after: .unavailable, failures: 1, first: short.firstRetry, interval: short.interval) == .milliseconds(300))
    }

    @Test func aSyncThatFailsTheSameWayAgainWaitsPastTheIntervalDoublingUpToFiveMinutes() async throws {
        let directory = try TemporaryDirectory()
        let store = try makeStore(directory)
        let failure = Mutex(SyncError(.server, "the server at http://127.0.0.1/records sent a response larger than 256 MiB; refusing it"))
        let engine = SyncEngine(store: store) { throw failure.withLock { $0 } }
        // An interval longer than the test: no sync starts by itself after the first, each is a syncNow (the
        // handshake: its finished report carries the wait the scheduler chose).
        let settings = SyncScheduler.Settings(interval: .seconds(60), debounce: .zero, firstRetry: .seconds(60))
        var statuses = engine.start(settings).makeAsyncIterator()
        var waits = [try await Self.nextReport(&statuses).retryIn]
        func syncNow() async throws {
            await #expect(throws: SyncError.self) { try await engine.syncNow() }
            waits.append(try await Self.nextReport(&statuses).retryIn)
        }
        for _ in 0..<4 { try await syncNow() }
        // Another failure starts over; so does a server out of reach, which is retried at the interval's rate.
        failure.withLock { $0 = SyncError(.server, "the server answered HTTP 500") }
        try await syncNow()
        failure.withLock { $0 = SyncError(.unavailable, "cannot reach http://127.0.0.1/: Connection refused") }
        try await syncNow()
        try await syncNow()
        await engine.stop()
        #expect(waits == [60, 120, 240, 300, 300, 60, 60, 60].map { .seconds($0) })
    }

    @Test func aFailureThatRepeatsGoesOnDoublingPastTheIntervalUnlessTheServerIsOutOfReach() {
        func wait(_ code: SyncError.Code, repeats: Int, interval: Int = 10) -> Duration {
            SyncScheduler.retryDelay(after: code, failures: repeats, repeats: repeats, first: .seconds(1), interval: .seconds(interval))
        }
        #expect((1...11).map { wait(.server, repeats: $0) } == [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300].map { .seconds($0) })
        #expect((1...4).map { wait(.unauthorized, repeats: $0) } == [10, 20, 40, 80].map { .seconds($0) })
        // A server out of reach or a busy store keeps the interval's rate.
        #expect((1...6).map { wait(.unavailable, repeats: $0) } == [1, 2, 4, 8, 10, 10].map { .seconds($0) })
        #expect((1...6).map { wait(.busy, repeats: $0) } == [1, 2, 4, 8, 10, 10].map { .seconds($0) })
        // Different failures in a row keep the interval as the longest wait.
        #expect(SyncScheduler.retryDelay(after: .server, failures: 9, repeats: 1, first: .seconds(1), interval: .seconds(10)) == .seconds(10))
        // An interval longer than five minutes stays the longest wait.
        #expect(wait(.server, repeats: 14, interval: 3600) == .seconds(3600))
    }

    @Test func aSubscriberThatFallsBehindGetsEveryStartAndFinishedReportAndTheLatestSteps() async {
        let broadcast = StatusBroadcast()
        var updates = broadcast.subscribe().makeAsyncIterator()
        func step(_ page: Int) -> SyncStatus {
            .inProgress(SyncProgress(phase: .pulling, entity: "Holiday", records: page, pages: page, total: nil))
        }
        var expected: [SyncStatus] = []
        for sync in 0..<10 {
            var report = SyncReport()
            report.pulled = sync
            broadcast.yield(.inProgress(nil))
            for page in 1...50 { broadcast.yield(step(page)) }
            broadcast.yield(.finished(report))
            expected += [.inProgress(nil)] + (35...50).map(step) + [.finished(report)]
        }
        var received: [SyncStatus] = []
        for _ in expected.indices { if let status = await updates.next() { received.append(status) } }
        #expect(received == expected)
    }

    @Test func aStatusStreamDroppedUnreadLeavesNoSubscriberBehind() async {
        let broadcast = StatusBroadcast()
        do { _ = broadcast.subscribe() }
        let kept = broadcast.subscribe()
        broadcast.yield(.inProgress(nil))
        #expect(broadcast.count == 1)
        var iterator = kept.makeAsyncIterator()
        #expect(await iterator.next() == .inProgress(nil))
    }

    // MARK: Helpers

    /// The report of the next sync to finish in `statuses`.
    private static func nextReport(_ statuses: inout AsyncStream<SyncStatus>.Iterator) async throws -> SyncReport {
        while let status = await statuses.next() {
            if let report = status.finishedReport { return report }
        }
        throw SyncError(.failure, "the statuses ended before a sync finished")
    }

    /// Waits for a condition the code under test makes true (a handshake, checked every 5 ms).
    private static func until(_ condition: @Sendable () -> Bool) async throws {
        while !condition() { try await Task.sleep(for: .milliseconds(5)) }
    }
}
