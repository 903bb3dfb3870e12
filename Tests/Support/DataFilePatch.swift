import Foundation

/// Damages a store on purpose, the way a bad disk would: replaces every
/// occurrence of `find` in its `data.mdb` by `replace` (of the same length;
/// older copies of a page stay in the file as free pages until reused).
/// - Returns: how many occurrences were replaced, for the test to check.
@discardableResult
public func patchDataFile(ofStore directory: String, _ find: String, _ replace: String) throws -> Int {
    try patchDataFile(ofStore: directory, Array(find.utf8), Array(replace.utf8))
}

/// `patchDataFile` for any bytes (a stored event, one byte of it changed).
@discardableResult
public func patchDataFile(ofStore directory: String, _ find: [UInt8], _ replace: [UInt8]) throws -> Int {
    precondition(find.count == replace.count, "a patch keeps the file's length")
    let url = URL(fileURLWithPath: directory + "/data.mdb")
    var bytes = try Data(contentsOf: url)
    var start = bytes.startIndex
    var found = 0
    while let range = bytes.range(of: Data(find), in: start..<bytes.endIndex) {
        bytes.replaceSubrange(range, with: Data(replace))
        start = range.upperBound
        found += 1
    }
    try bytes.write(to: url)
    return found
}
