// evsync-fuzz: the decoders of outside input under libFuzzer.
//
//   Tools/fuzz TARGET [SECONDS]   builds this with -sanitize=fuzzer and runs it on Tests/Fuzz/Corpus/TARGET
//   evsync-fuzz TARGET FILE…      (a normal build) runs each file through TARGET once: the corpus replay the tests do
//
// libFuzzer's own `main` is not linked when the program has one, so this one
// picks the target from the first argument and hands the rest to libFuzzer's driver.
#if canImport(Glibc)
import Glibc
#endif
import Foundation

let usage = "usage: evsync-fuzz \(FuzzTarget.allCases.map(\.rawValue).joined(separator: "|")) [FILE…|libFuzzer options]"
guard CommandLine.arguments.count >= 2, let target = FuzzTarget(rawValue: CommandLine.arguments[1]) else {
    FileHandle.standardError.write(Data((usage + "\n").utf8))
    exit(64)
}

#if FUZZING
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

// libFuzzer's driver refers to this symbol by name; it cannot capture, so the target is a global.
nonisolated(unsafe) var fuzzed = target
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzed.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

var arguments = [CommandLine.unsafeArgv[0]] + (2..<Int(CommandLine.argc)).map { CommandLine.unsafeArgv[$0] }
var count = CInt(arguments.count)
arguments.append(nil)
let status = arguments.withUnsafeMutableBufferPointer { buffer in
    var argv = buffer.baseAddress
    return LLVMFuzzerRunDriver(&count, &argv, fuzzOne)
}
exit(status)
#else
var ran = 0
for path in CommandLine.arguments.dropFirst(2) {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
        FileHandle.standardError.write(Data("evsync-fuzz: no such file: \(path)\n".utf8))
        exit(66)
    }
    let files = isDirectory.boolValue
        ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { path + "/" + $0 }
        : [path]
    for file in files {
        guard let data = FileManager.default.contents(atPath: file) else { continue }
        data.withUnsafeBytes { target.run($0) }
        ran += 1
    }
}
print("\(target.rawValue): \(ran) inputs ran")
#endif
