import CLMDB
import CLMDBGuard
import Foundation

/// An error from the LMDB layer: the LMDB return code, what evsync was doing, and LMDB's own message.
///
/// `code` is LMDB's return code: one of LMDB's own (`MDB_MAP_FULL` is
/// -30792, `MDB_CORRUPTED` -30796…) or an `errno` value from the system
/// call that failed (`ENOSPC`, `EROFS`, `EACCES`…).
public struct StorageError: Error, Sendable, CustomStringConvertible {
    public let code: Int32
    public let operation: String
    /// What is wrong, when evsync found it rather than LMDB (a data file cut short); else nil.
    public let reason: String?

    package init(code: Int32, operation: String, reason: String? = nil) {
        self.code = code
        self.operation = operation
        self.reason = reason
    }

    /// LMDB's text for `code` (the system's for an `errno`), or `reason` when there is one.
    public var explanation: String {
        if let reason { return reason }
        if code == EVSYNC_MDB_FAULT { return "LMDB met a page it cannot follow" }
        return String(cString: mdb_strerror(code))
    }

    public var description: String { "store: \(operation) failed: \(explanation)" }

    /// Turns an LMDB return code into a thrown error; `MDB_SUCCESS` passes.
    package static func check(_ code: Int32, _ operation: @autoclosure () -> String) throws(StorageError) {
        guard code == MDB_SUCCESS else { throw StorageError(code: code, operation: operation()) }
    }

    /// A use of the store that cannot work (a write inside another on one thread, a data file replaced
    /// under this process): `reason` says what, and how to go on.
    package static func misuse(_ reason: String) -> StorageError {
        StorageError(code: misuseCode, operation: "using the store", reason: reason)
    }

    /// Not one of LMDB's codes (they run from -30799 to -30780), nor `EVSYNC_MDB_FAULT` (-30700).
    static let misuseCode: Int32 = -30701

    /// What kind of trouble `code` is, for the store's error codes.
    package enum Kind {
        /// `MDB_MAP_FULL`: the map, the most the store can hold, is used up.
        case mapFull
        /// `ENOSPC`, `EDQUOT`: the device or the user's quota is full.
        case diskFull
        /// `EROFS`, `EACCES`, `EPERM`: the files cannot be written.
        case readOnly
        /// The data file is not what LMDB wrote: a page of the wrong type or out of range, a bad meta
        /// page, a page that leads back up its own path (`MDB_CURSOR_FULL`), or one that sent LMDB
        /// out of the file (`EVSYNC_MDB_FAULT`, see `CLMDBGuard`).
        case damaged
        /// `misuse`.
        case misuse
        case other
    }

    package var kind: Kind {
        switch code {
        case MDB_MAP_FULL: .mapFull
        case ENOSPC, EDQUOT: .diskFull
        case EROFS, EACCES, EPERM: .readOnly
        // MDB_CURSOR_FULL: a tree deeper than LMDB allows, which only a page pointing back up its own path makes.
        case MDB_CORRUPTED, MDB_PAGE_NOTFOUND, MDB_INVALID, MDB_VERSION_MISMATCH, MDB_CURSOR_FULL, EVSYNC_MDB_FAULT: .damaged
        case Self.misuseCode: .misuse
        default: .other
        }
    }

    /// Whether a failed write left the file system holding `directory` full.
    /// LMDB reports a short write as `EIO` ("short write, filesystem full?"
    /// in its debug log) where a write that could not start gets `ENOSPC`; a
    /// page written through the map (`Environment.writesInPlace`) that finds
    /// no block faults (`EVSYNC_MDB_FAULT`) where its reservation fell short.
    package func leftDeviceFull(holding directory: String) -> Bool {
        guard code == EIO || code == EVSYNC_MDB_FAULT else { return false }
        var stats = statvfs()
        guard statvfs(directory, &stats) == 0 else { return false }
        // root may use the blocks kept back for it; anyone else only the available ones.
        let blocks = geteuid() == 0 ? stats.f_bfree : stats.f_bavail
        return UInt64(blocks) * UInt64(stats.f_frsize) < 1 << 20
    }
}
