import EventStore
import Glibc

// An app, for the crash-guard tests (EventStoreTests/CrashGuardTests.swift) and the power-cut tests of
// single writes (`writer`, evsyncTests/SingleWritePowerCutTests.swift): its own signal
// handlers, a store used with or without `CrashGuard`, and a fault on purpose, in a process of
// its own so that the tests' runner survives it. `GuardProbe <scenario> <store directory>`; what
// it did goes to stdout, one line a step, and the app's handler exits with 51 (SIGSEGV) or 47
// (SIGBUS) after saying so. Run with SWIFT_BACKTRACE=enable=no, so that the handler found first is SIG_DFL.

/// The app's handler, installed with SA_SIGINFO: says which signal, and whether it was given the siginfo and context.
func siginfoHandler(_ signal: Int32, _ info: UnsafeMutablePointer<siginfo_t>?, _ context: UnsafeMutableRawPointer?) {
    let complete = info?.pointee.si_signo == signal && context != nil
    say(signal == SIGBUS ? (complete ? "app handler: SIGBUS with siginfo\n" : "app handler: SIGBUS without siginfo\n")
                         : (complete ? "app handler: SIGSEGV with siginfo\n" : "app handler: SIGSEGV without siginfo\n"))
    _exit(40 + signal)
}

/// The app's handler, installed without SA_SIGINFO.
func plainHandler(_ signal: Int32) {
    say(signal == SIGBUS ? "app handler: SIGBUS\n" : "app handler: SIGSEGV\n")
    _exit(40 + signal)
}

/// What `forwardingHandler` replaced: the guard's handler, in `after-forwarding`.
nonisolated(unsafe) var replaced = sigaction()

/// An app's handler that passes the fault on to the one it replaced, as crash reporters do, then exits.
func forwardingHandler(_ signal: Int32, _ info: UnsafeMutablePointer<siginfo_t>?, _ context: UnsafeMutableRawPointer?) {
    say("app handler: forwarding\n")
    replaced.__sigaction_handler.sa_sigaction?(signal, info, context)
    say("app handler: the handler it replaced returned\n")
    _exit(52)
}

/// Writes a literal with write(2): all a signal handler may do.
func say(_ text: StaticString) {
    _ = write(1, text.utf8Start, text.utf8CodeUnitCount)
}

func report(_ line: String) {
    print(line)
    fflush(nil)
}

func install(_ signal: Int32, siginfo: Bool) -> sigaction {
    var action = sigaction(), previous = sigaction()
    if siginfo {
        action.__sigaction_handler.sa_sigaction = siginfoHandler
        action.sa_flags = SA_SIGINFO
    } else {
        action.__sigaction_handler.sa_handler = plainHandler
    }
    sigemptyset(&action.sa_mask)
    sigaction(signal, &action, &previous)
    return previous
}

func handler(of signal: Int32) -> UnsafeRawPointer? {
    var current = sigaction()
    sigaction(signal, nil, &current)
    return unsafeBitCast(current.__sigaction_handler.sa_handler, to: UnsafeRawPointer?.self)
}

/// Names the handler in place for SIGSEGV and SIGBUS: the guard's, SIG_DFL, or another.
func front(guardHandler: UnsafeRawPointer?) -> String {
    [SIGSEGV, SIGBUS].map { signal in
        let current = handler(of: signal)
        return current == nil ? "default" : current == guardHandler ? "guard" : "other"
    }.joined(separator: " ")
}

/// Creates or opens the store and writes and reads it.
func use(_ directory: String) throws -> Store {
    let store = try Store(directory: directory, create: true)
    for day in 1...50 {
        _ = try store.add("Holiday", fields: ["name": .string("Day \(day)"), "date": .string("2026-01-\(day % 28 + 1 < 10 ? "0" : "")\(day % 28 + 1)")])
    }
    report("records: \(try store.records("Holiday").count)")
    return store
}

/// Cuts the data file to its two meta pages under the open store, and reads: LMDB follows a page past the file's end.
func readCutFile(_ store: Store, _ directory: String) {
    guard truncate(directory + "/data.mdb", 8192) == 0 else { return report("cannot truncate") }
    do {
        report("records after the cut: \(try store.records("Holiday").count)")
    } catch {
        report("error: \(error.code) \(error.message)")
    }
}

/// A SIGSEGV in the app's own code.
func faultOutsideEvsync() -> Never {
    report("faulting")
    let address = UnsafeMutablePointer<Int>(bitPattern: 16)
    address?.pointee = 1
    report("no fault")
    exit(3)
}

/// Writes for ever, one transaction a write, saying each once it returned: an add, every other time an
/// edit of the record added before, and every fifth time the deletion of the one before that (said before
/// it begins too), for the power-cut tests (evsyncTests/SingleWritePowerCutTests.swift).
/// - Parameter writeBack: whether the data file's pages go to the disk after each write, as the kernel may
///   write them back at any moment: the disk then holds every page LMDB reused.
/// - Parameter adds: how many adds before it exits (`writer-N`, for the crash-state tests).
func writeForEver(_ directory: String, durability: Store.Durability, writeBack: Bool = false, adds: Int = .max) throws -> Never {
    let store = try Store(directory: directory, configuration: Store.Configuration(create: true, durability: durability))
    let dataFile = writeBack ? open(directory + "/data.mdb", O_RDONLY | O_CLOEXEC) : -1
    func wrote(_ line: String) {
        // Flushed too, which makes no difference to a copy of the device: what it holds is what was written to it.
        if dataFile >= 0 { fdatasync(dataFile) }
        report(line)
    }
    var added: [String] = []
    for count in 0..<adds {
        let id = try store.add("Holiday", fields: ["name": .string("Day \(count)"), "date": "2026-01-01"]).recordID
        wrote("add \(id)")
        if count % 2 == 1, let previous = added.last {
            _ = try store.edit("Holiday", id: previous, set: ["details": .string("edited")])
            wrote("edit \(previous)")
        }
        if count % 5 == 4, added.count >= 2 {
            let old = added[added.count - 2]
            report("deleting \(old)")
            _ = try store.delete("Holiday", id: old)
            wrote("delete \(old)")
        }
        added.append(id)
        if added.count > 2 { added.removeFirst() }
    }
    exit(0)
}

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    report("usage: GuardProbe before|before-plain|before-default|before-ignore|after|after-forwarding|off|write-after-fault|writer|writer-normal|writer-write-back|writer-N DIRECTORY")
    exit(2)
}
let (scenario, directory) = (arguments[1], arguments[2])
do {
    switch scenario {
    case "before", "before-plain":
        _ = install(SIGSEGV, siginfo: scenario == "before")
        CrashGuard.install()
        _ = try use(directory)
        faultOutsideEvsync()
    case "before-default":
        CrashGuard.install()
        _ = try use(directory)
        faultOutsideEvsync()
    case "before-ignore":
        signal(SIGSEGV, SIG_IGN)
        CrashGuard.install()
        _ = try use(directory)
        kill(getpid(), SIGSEGV)
        report("a SIGSEGV sent by kill was ignored")
        faultOutsideEvsync()
    case "after", "after-forwarding":
        CrashGuard.install()
        let guardHandler = handler(of: SIGSEGV)
        let store = try use(directory)
        if scenario == "after" {
            _ = install(SIGSEGV, siginfo: true)
            _ = install(SIGBUS, siginfo: true)
        } else {
            var action = sigaction()
            action.__sigaction_handler.sa_sigaction = forwardingHandler
            action.sa_flags = SA_SIGINFO
            sigemptyset(&action.sa_mask)
            sigaction(SIGSEGV, &action, &replaced)
        }
        report("in front: \(front(guardHandler: guardHandler))")
        readCutFile(store, directory)
        report("in front: \(front(guardHandler: guardHandler))")
        faultOutsideEvsync()
    case "off":
        let before = [handler(of: SIGSEGV), handler(of: SIGBUS)]
        let store = try use(directory)
        let after = [handler(of: SIGSEGV), handler(of: SIGBUS)]
        report("installed: \(CrashGuard.isInstalled)")
        report("handlers \(before == after ? "unchanged" : "changed"): \(front(guardHandler: nil))")
        readCutFile(store, directory)  // unguarded: SIGBUS kills the process
    case "write-after-fault":
        // A write that meets a page past the file's end inside LMDB's write calls, then two more writes.
        CrashGuard.install()
        let store = try use(directory)
        guard truncate(directory + "/data.mdb", 8192) == 0 else { report("cannot truncate"); exit(1) }
        for attempt in 1...2 {
            do {
                _ = try store.add("Holiday", fields: ["name": "After the cut", "date": "2026-02-01"])
                report("write \(attempt): stored")
            } catch {
                report("write \(attempt): \(error.code) \(error.message)")
            }
        }
        exit(0)
    case "writer":
        try writeForEver(directory, durability: .full)
    case "writer-normal":
        try writeForEver(directory, durability: .normal)
    case "writer-write-back":
        try writeForEver(directory, durability: .full, writeBack: true)
    case _ where scenario.hasPrefix("writer-") && Int(scenario.dropFirst("writer-".count)) != nil:
        try writeForEver(directory, durability: .full, adds: Int(scenario.dropFirst("writer-".count)) ?? 0)
    default:
        report("unknown scenario \(scenario)")
        exit(2)
    }
} catch {
    report("error: \(error)")
    exit(1)
}
