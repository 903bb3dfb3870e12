import Foundation
import Testing
import TestSupport

/// The fuzzing corpus (Tests/Fuzz/Corpus), seeds and past findings alike,
/// replayed through the decoders on every test run, uninstrumented: an input
/// that once crashed one stays fixed. Tools/fuzz searches for new ones.
@Suite("Fuzz corpus")
struct FuzzCorpusTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz/Corpus")

    @Test("every corpus input runs through its decoder without a crash or a failed round trip",
          arguments: ["json", "event", "import", "page", "batch", "multistatus", "vcard"])
    func replay(target: String) async throws {
        let directory = Self.corpus.appendingPathComponent(target)
        let inputs = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(!inputs.isEmpty, "no seeds for \(target)")
        let fuzzer = BuiltProduct.url("evsync-fuzz")
        let run = try await ProcessRunner.run(fuzzer.path, [target, directory.path], environment: ["SWIFT_BACKTRACE": "enable=no"])
        #expect(run.status == 0 && !run.killedBySignal, "\(run)")
        #expect(run.stdout == "\(target): \(inputs.count) inputs ran\n")
    }
}
