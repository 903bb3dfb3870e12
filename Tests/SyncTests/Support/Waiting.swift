import TestSupport
import Testing

extension RunningProcess {
    /// Polls until `done` holds: a test waits for a state it can see, never for a time. Fails the
    /// test, with the output so far, once the process has exited or `timeout` has passed. `what` is
    /// read only then, so it may tell the state of what the process waits on.
    func waitFor(_ what: @autoclosure () -> String, timeout: Duration = .seconds(30), sourceLocation: SourceLocation = #_sourceLocation,
                 _ done: () -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while !done() {
            try #require(!hasExited && ContinuousClock.now < deadline, "waiting for \(what()): \(outputSoFar())",
                         sourceLocation: sourceLocation)
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}
