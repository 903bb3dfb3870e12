import Foundation
import Testing
import TestSupport

/// The crash guard with an app's own signal handlers: installed only when asked, it forwards a
/// fault outside evsync to the handler installed before it, and takes its place back from one
/// installed after, so that a damaged page is still an error. Each case runs `GuardProbe` (an app
/// that faults on purpose) as a child process, with the Swift runtime's backtracer off so that
/// the handler it finds first is SIG_DFL.
@Suite("Crash guard and the app's signal handlers")
struct CrashGuardTests {
    static let probe = BuiltProduct.url("GuardProbe").path

    static func run(_ scenario: String) async throws -> ProcessOutput {
        let directory = try TemporaryDirectory("crash-guard")
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        return try await ProcessRunner.run(probe, [scenario, directory.file("store")], environment: environment)
    }

    @Test("an app's handler installed before the guard gets a fault outside evsync, called as it was installed",
          arguments: [("before", "app handler: SIGSEGV with siginfo"), ("before-plain", "app handler: SIGSEGV")])
    func handlerInstalledBefore(scenario: String, line: String) async throws {
        let output = try await Self.run(scenario)
        #expect(!output.killedBySignal && output.status == 40 + SIGSEGV, "\(output)")
        #expect(output.stdoutLines == ["records: 50", "faulting", line], "\(output)")
    }

    @Test("with SIG_DFL before the guard, a fault outside evsync kills the process with SIGSEGV, as without evsync")
    func defaultBefore() async throws {
        let output = try await Self.run("before-default")
        #expect(output.killedBySignal && output.status == SIGSEGV, "\(output)")
        #expect(output.stdoutLines == ["records: 50", "faulting"], "\(output)")
    }

    @Test("with SIG_IGN before the guard, a SIGSEGV another process sends is ignored, and a real fault kills as the kernel would")
    func ignoredBefore() async throws {
        let output = try await Self.run("before-ignore")
        #expect(output.killedBySignal && output.status == SIGSEGV, "\(output)")
        #expect(output.stdoutLines == ["records: 50", "a SIGSEGV sent by kill was ignored", "faulting"], "\(output)")
    }

    /// A fault that cuts one of LMDB's write calls short leaves what LMDB holds for the environment unknown: the
    /// process writes no more to the store, and says why, rather than commit on top of it.
    @Test("after a fault inside a write, the process refuses every later write to that store, saying why")
    func writesRefusedAfterAFault() async throws {
        let output = try await Self.run("write-after-fault")
        #expect(!output.killedBySignal && output.status == 0, "\(output)")
        let lines = output.stdoutLines
        try #require(lines.count == 3, "\(output)")
        #expect(lines[0] == "records: 50")
        #expect(lines[1].hasPrefix("write 1: corrupt ") && lines[1].contains("LMDB met a page it cannot follow"), "\(lines[1])")
        #expect(lines[2].hasPrefix("write 2: corrupt ") && lines[2].contains("this process writes no more to the store"), "\(lines[2])")
    }

    @Test("an app's handlers installed after opening: the next read puts the guard back in front, a page past the file's end is an error, and the app's handler gets a fault outside evsync")
    func handlersInstalledAfter() async throws {
        let output = try await Self.run("after")
        #expect(!output.killedBySignal && output.status == 40 + SIGSEGV, "\(output)")
        let lines = output.stdoutLines
        try #require(lines.count == 6, "\(output)")
        #expect(Array(lines[0...1]) == ["records: 50", "in front: other other"])
        #expect(lines[2].hasPrefix("error: corrupt the store at ") && lines[2].contains(" is damaged (LMDB met a page it cannot follow)"), "\(lines[2])")
        #expect(Array(lines[3...]) == ["in front: guard guard", "faulting", "app handler: SIGSEGV with siginfo"])
    }

    @Test("an app's handler installed after that forwards to the one it replaced (the guard) reaches the handler before the guard, never itself again")
    func forwardingHandlerInstalledAfter() async throws {
        let output = try await Self.run("after-forwarding")
        // The handler before the guard was SIG_DFL: the guard restores it, and the app's handler goes on to exit.
        #expect(!output.killedBySignal && output.status == 52, "\(output)")
        let lines = output.stdoutLines
        try #require(lines.count == 7, "\(output)")
        #expect(Array(lines[0...1]) == ["records: 50", "in front: other guard"])
        #expect(lines[2].contains(" is damaged (LMDB met a page it cannot follow)"), "\(lines[2])")
        #expect(Array(lines[3...]) == ["in front: guard guard", "faulting", "app handler: forwarding",
                                       "app handler: the handler it replaced returned"])
    }

    @Test("without CrashGuard.install(), opening and using a store installs no handler, and a fault in LMDB is the process's as without evsync")
    func notInstalled() async throws {
        let output = try await Self.run("off")
        #expect(output.killedBySignal && output.status == SIGBUS, "\(output)")
        #expect(output.stdoutLines == ["records: 50", "installed: false", "handlers unchanged: default default"], "\(output)")
    }
}
