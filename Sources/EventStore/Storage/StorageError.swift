import CLMDB

/// An error from the LMDB layer: the LMDB return code, what evsync was doing, and LMDB's own message.
public struct StorageError: Error, Sendable, CustomStringConvertible {
    public let code: Int32
    public let operation: String

    public var description: String {
        let message = String(cString: mdb_strerror(code))
        return "store: \(operation) failed: \(message)"
    }

    /// Turns an LMDB return code into a thrown error; `MDB_SUCCESS` passes.
    static func check(_ code: Int32, _ operation: @autoclosure () -> String) throws(StorageError) {
        guard code == MDB_SUCCESS else { throw StorageError(code: code, operation: operation()) }
    }
}
