import Foundation
import Testing
import TestSupport

/// Runs commands under the crash-trace shim on a directory standing for a disk, then builds the states a power
/// cut could have left it in at points of the trace and checks each one (docs/crash-states.md).
///
/// A state is put back into the files the run left, in place (the same inodes, on the same device), and every
/// command that checks it reads another boot id: to the store it is a disk after a power cut, not a copy.
/// `lock.mdb` is modelled as any file, though its content never matters after a cut: no process holds its lock
/// then, so the first to open the store takes it exclusively and `mdb_env_setup_locks` (liblmdb 0.9, mdb.c)
/// re-initialises the reader table, its mutexes, magic and format (`*excl > 0`), reading nothing in it.
final class CrashStateExplorer {
    let sandbox: Sandbox
    let shim: String
    /// The directory the shim traces: the store, and whatever a command writes beside it (a backup).
    let disk: URL
    let log: String
    /// A second name for every file the run opened or the trace began with, by inode (`CRASH_TRACE_KEEP`).
    let keep: String
    /// What the commands run by `prepare` printed: acknowledged before the trace began.
    private(set) var prepared = ""
    /// The disk as it was when the trace began: durable.
    private var initial: DiskModel

    var store: String { disk.appendingPathComponent("store").path }

    /// How many states a scenario checks, and the seed of its sample: `CRASH_STATES_BUDGET` and
    /// `CRASH_STATES_SEED` make a longer or another run.
    static let budget = ProcessInfo.processInfo.environment["CRASH_STATES_BUDGET"].flatMap { Int($0) } ?? 96
    static let seed = ProcessInfo.processInfo.environment["CRASH_STATES_SEED"].flatMap { UInt64($0) } ?? 0xC0FFEE

    /// `CRASH_STATES_VERBOSE=1` prints every state checked.
    static let verbose = ProcessInfo.processInfo.environment["CRASH_STATES_VERBOSE"] == "1"

    init(sandbox: Sandbox) throws {
        self.sandbox = sandbox
        shim = try CrashTrace.shim.get()
        // Canonical: the shim compares the paths it sees, which the kernel gives canonical.
        let root = URL(fileURLWithPath: sandbox.root.path).resolvingSymlinksInPath()
        disk = root.appendingPathComponent("disk", isDirectory: true)
        log = root.appendingPathComponent("crash-trace.log").path
        keep = root.appendingPathComponent("inodes").path
        try FileManager.default.createDirectory(at: disk, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: keep, withIntermediateDirectories: true)
        initial = try DiskModel(root: disk.path)
    }

    /// Runs `evsync arguments…` untraced, before the trace begins: what it leaves is flushed, the disk as the trace starts.
    @discardableResult
    func prepare(_ arguments: [String], stdin: Data? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws -> CLIResult {
        try #require(!FileManager.default.fileExists(atPath: log), "prepare before any traced command", sourceLocation: sourceLocation)
        var result: CLIResult?
        try prepare(sourceLocation: sourceLocation) { store in
            result = try sandbox.run(arguments, stdin: stdin, environment: ["EVSYNC_STORE": store], sourceLocation: sourceLocation)
        }
        let finished = try #require(result, sourceLocation: sourceLocation)
        prepared += finished.stdout
        #expect(finished.status == Exit.ok, "evsync \(arguments.joined(separator: " ")): \(finished)", sourceLocation: sourceLocation)
        return finished
    }

    /// The environment of a traced command.
    var traced: [String: String?] {
        ["LD_PRELOAD": shim, "CRASH_TRACE_DIR": disk.path, "CRASH_TRACE_LOG": log, "CRASH_TRACE_KEEP": keep, "EVSYNC_STORE": store]
    }

    /// Writes to the disk untraced, before the trace begins, through `body` given the store's path; what it leaves
    /// is flushed, the disk as the trace starts.
    func prepare(sourceLocation: SourceLocation = #_sourceLocation, _ body: (String) throws -> Void) throws {
        try #require(!FileManager.default.fileExists(atPath: log), "prepare before any traced command", sourceLocation: sourceLocation)
        try body(store)
        sync()
        initial = try DiskModel(root: disk.path)
        for file in initial.files { _ = link(disk.path + "/" + (initial.name(of: file.inode) ?? ""), keep + "/\(file.inode)") }
    }

    /// Starts `executable arguments…` traced, with the environment `evsync` gets.
    func launch(_ executable: URL, _ arguments: [String]) throws -> RunningProcess {
        var environment = sandbox.environment
        for (key, value) in traced { environment[key] = value }
        return try RunningProcess(executable: executable.path, arguments: arguments, environment: environment, input: .none,
                                  directory: sandbox.root.path)
    }

    /// Runs `evsync arguments…` traced, to completion.
    @discardableResult
    func run(_ arguments: [String], stdin: Data? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws -> CLIResult {
        let result = try sandbox.run(arguments, stdin: stdin, environment: traced, sourceLocation: sourceLocation)
        #expect(result.status == Exit.ok, "traced evsync \(arguments.joined(separator: " ")): \(result)", sourceLocation: sourceLocation)
        return result
    }

    /// What a check of one state is given.
    struct State {
        let explorer: CrashStateExplorer
        /// What each process printed before the cut, by process, in order: what it acknowledged.
        let printed: [Int32: String]
        /// What the commands run by `prepare` printed.
        let prepared: String
        /// Whether the cut is after the whole trace.
        let isLast: Bool
        let bootID: String

        var acknowledged: String { printed.keys.sorted().compactMap { printed[$0] }.joined() }

        /// Runs `evsync arguments…` on the state, as after a reboot, untraced.
        func run(_ arguments: [String]) throws -> CLIResult {
            try explorer.sandbox.run(arguments, environment: ["LD_PRELOAD": explorer.shim, "CRASH_TRACE_BOOT_ID": bootID,
                                                              "EVSYNC_STORE": explorer.store])
        }
    }

    /// Replays the trace and checks its crash states: at every cut sampled, the store is sound (`log verify`,
    /// `rebuild-views --verify`), and whatever `check` says of what was acknowledged holds. Records an issue for
    /// the first three failing states, and how many more, with the trace and the state kept on disk for a look.
    func explore(_ name: String, sourceLocation: SourceLocation = #_sourceLocation, check: (State) throws -> [String]) throws {
        let failures = try failures(name, sourceLocation: sourceLocation, check: check)
        for failure in failures.prefix(3) { Issue.record("\(name): \(failure)", sourceLocation: sourceLocation) }
        if failures.count > 3 { Issue.record("\(name): and \(failures.count - 3) more failing states", sourceLocation: sourceLocation) }
    }

    /// The failing states of the trace, described; `storeChecks` false leaves out the store's
    /// soundness, for a trace of something else than a store.
    func failures(_ name: String, storeChecks: Bool = true, sourceLocation: SourceLocation = #_sourceLocation,
                  check: (State) throws -> [String]) throws -> [String] {
        let events = try CrashTrace.read(log)
        try #require(!events.isEmpty, "the trace is empty: the shim did not load", sourceLocation: sourceLocation)
        // The cuts worth most: just before each flush, where the most is written and not yet flushed (a cut just
        // after an acknowledgement leaves a subset of what the cut before the next flush may), and the end.
        var cuts = events.indices.filter { index in
            index == events.count - 1 || [.flush, .flushAll].contains(events[index + 1].kind)
        }
        var random = SplitMix64(seed: Self.seed)
        let cutBudget = max(1, Self.budget / 6)
        if cuts.count > cutBudget { cuts = Array(cuts.shuffled(using: &random).prefix(cutBudget)).sorted() }
        let perCut = max(4, Self.budget / max(1, cuts.count))

        var model = initial
        var seen: Set<Int> = [], checked = 0, failures: [String] = []
        var nextCut = cuts.makeIterator(), cut = nextCut.next()
        for (index, event) in events.enumerated() {
            model.play(event, index: index)
            guard index == cut else { continue }
            cut = nextCut.next()
            var printed: [Int32: String] = [:]
            for output in model.outputs { printed[output.pid, default: ""] += output.text }
            for choices in model.choices(budget: perCut, enumerateUpTo: 16, using: &random) {
                let state = model.state(choices)
                var hasher = Hasher()
                hasher.combine(printed.count)
                hasher.combine(printed.values.map(\.count).reduce(0, +))
                hasher.combine(state.names)
                hasher.combine(state.images)
                guard seen.insert(hasher.finalize()).inserted else { continue }
                try materialise(state, model: model)
                checked += 1
                let context = State(explorer: self, printed: printed, prepared: prepared, isLast: index == events.count - 1, bootID: UUID().uuidString.lowercased())
                let problems = try (storeChecks ? soundness(context) : []) + check(context)
                if Self.verbose { print("\(name): state after event \(index) (\(event.summary)): \(problems.isEmpty ? "sound" : "FAILS")\n\(model.describe(choices))") }
                guard !problems.isEmpty else { continue }
                // The state as the cut left it, before the checks opened it.
                try materialise(state, model: model)
                let kept = failures.isEmpty ? keepFailure(name) : nil
                let before = (max(0, index - 12)...index).map { "  #\($0) \(events[$0].summary)" }
                failures.append("""
                    crash state after event \(index) of \(events.count) (\(event.summary)):
                    \(problems.joined(separator: "\n"))
                    acknowledged before the cut: \(context.acknowledged.debugDescription)
                    what the cut kept of what was not flushed:
                    \(model.describe(choices))
                    the last events before the cut:
                    \(before.joined(separator: "\n"))
                    \(kept.map { "trace and state kept in \($0)" } ?? "")
                    """)
            }
        }
        #expect(checked > 0, "\(name): no crash state was checked", sourceLocation: sourceLocation)
        print("crash states of \(name): \(checked) checked at \(cuts.count) cuts of \(events.count) events, \(failures.count) failing (seed \(Self.seed), budget \(Self.budget))")
        return failures
    }

    /// What every state must be: a store that opens, whose log and views are sound; or no store, before it was made.
    private func soundness(_ state: State) throws -> [String] {
        guard FileManager.default.fileExists(atPath: store + "/data.mdb") else {
            return state.acknowledged.isEmpty ? [] : ["the store is gone"]
        }
        let verify = try state.run(["log", "verify"])
        if verify.status == Exit.noInput, state.acknowledged.isEmpty {
            // Cut while the store was being made, before anything was acknowledged: no store yet is fair, if the
            // next write makes one.
            let add = try state.run(["add", "Holiday", "name=After the cut", "date=2026-02-01"])
            return add.status == Exit.ok ? [] : ["no store after the cut, and evsync add then fails: \(add)"]
        }
        var problems = verify.status == Exit.ok ? [] : ["evsync log verify: \(verify)"]
        let views = try state.run(["rebuild-views", "--verify"])
        if views.status != Exit.ok { problems.append("evsync rebuild-views --verify: \(views)") }
        return problems
    }

    /// Puts a state onto the disk directory: its directories, and each file's content in its own inode when the run
    /// left that inode (else in a new file).
    private func materialise(_ state: (names: [String: DiskModel.Node], images: [Int: DiskModel.Image]), model: DiskModel) throws {
        let manager = FileManager.default
        for item in try manager.contentsOfDirectory(atPath: disk.path) { try manager.removeItem(atPath: disk.path + "/" + item) }
        for (path, node) in state.names.sorted(by: { $0.key < $1.key }) where node == .directory {
            // A directory whose parent's name was lost is lost with it.
            let parent = (path as NSString).deletingLastPathComponent
            guard parent.isEmpty || state.names[parent] == .directory else { continue }
            try manager.createDirectory(atPath: disk.path + "/" + path, withIntermediateDirectories: false)
        }
        var used: Set<UInt64> = []
        for (path, node) in state.names {
            guard case .file(let file) = node, let image = state.images[file] else { continue }
            let parent = (path as NSString).deletingLastPathComponent
            guard parent.isEmpty || manager.fileExists(atPath: disk.path + "/" + parent) else { continue }
            let target = disk.path + "/" + path, inode = model.files[file].inode
            if !used.contains(inode), link(keep + "/\(inode)", target) == 0 { used.insert(inode) }
            let descriptor = open(target, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            defer { close(descriptor) }
            guard ftruncate(descriptor, 0) == 0, ftruncate(descriptor, off_t(image.size)) == 0 else { throw POSIXError(.EIO) }
            for (block, bytes) in image.blocks where bytes.contains(where: { $0 != 0 }) {
                let offset = block * DiskModel.blockSize
                let count = min(bytes.count, image.size - offset)
                guard count > 0 else { continue }
                let written = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, count, off_t(offset)) }
                guard written == count else { throw POSIXError(.EIO) }
            }
        }
    }

    /// Copies the trace and the failing state out of the sandbox, which goes at the end of the test.
    private func keepFailure(_ name: String) -> String? {
        let kept = FileManager.default.temporaryDirectory.appendingPathComponent("crash-state-failure-\(name)-\(UUID().uuidString.prefix(8))")
        do {
            try FileManager.default.createDirectory(at: kept, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: log, toPath: kept.appendingPathComponent("crash-trace.log").path)
            // Sparse: an import's data file is as long as the map.
            let copy = Process()
            copy.executableURL = URL(fileURLWithPath: "/bin/cp")
            copy.arguments = ["-a", "--sparse=always", disk.path, kept.appendingPathComponent("disk").path]
            try copy.run()
            copy.waitUntilExit()
            return copy.terminationStatus == 0 ? kept.path : nil
        } catch {
            return nil
        }
    }
}
