import Foundation
import Storage

/// An error from the store's public API, with the kind of failure a caller
/// (the CLI's exit code, an app's alert) needs to tell apart, a message for
/// people, and what it came from.
///
/// ```swift
/// do {
///     try store.add("Holiday", fields: fields)
/// } catch let error where error.code == .diskFull {
///     showAlert("Free some space: \(error.message)")
/// }
/// ```
public struct StoreError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable {
        /// The input breaks a rule: bad JSON, a schema violation, an unknown field or entity, a bad id.
        case invalidData
        /// The store, a file or a record does not exist.
        case notFound
        /// The store is damaged or from a newer evsync: LMDB found a bad page or
        /// meta page (`MDB_CORRUPTED`, `MDB_PAGE_NOTFOUND`, `MDB_INVALID`,
        /// `MDB_VERSION_MISMATCH`), the data file is cut short, or an event or
        /// a view entry cannot be decoded.
        case corrupt
        /// The store's map, the most it can ever hold, is used up (`MDB_MAP_FULL`). Nothing was written.
        case mapFull
        /// The device holding the store has no space left (`ENOSPC`, `EDQUOT`,
        /// or a write cut short that left it full). Nothing was written.
        case diskFull
        /// The store cannot be written: it is on a read-only file system
        /// (`EROFS`) or this user may not write its files (`EACCES`, `EPERM`).
        /// A store on read-only media is opened for reading, so only writes fail; unless it lost power since
        /// its last writes, when opening it fails until a process that can write has restored it.
        case readOnly
        /// Anything else (I/O, LMDB).
        case failure
    }

    /// What can set a damaged or foreign store right, when something can: the words for it are the
    /// caller's (the CLI names its commands; `description` names the library's calls).
    public enum Remedy: Sendable {
        /// The log is whole; the views can be replayed from it (`Store(repairingViews:)`, then `rebuildViews()`).
        case rebuildViews
        /// The log itself is damaged: only a backup (`Store.backup(to:)`) brings it back.
        case restoreFromBackup
        /// A newer evsync wrote it: open it with that one or a newer one.
        case useNewerVersion
    }

    public let code: Code
    /// What went wrong, naming what it was about; `remedy` says what can set it right.
    public let message: String
    public let remedy: Remedy?
    /// The store's directory, for errors about the store as a whole (damaged, full, read-only).
    public let directory: String?
    /// The error behind this one: a `StorageError` (with LMDB's return code), an `EventDecodingError`…
    public let cause: (any Error & Sendable)?
    /// `message`, with the remedy in the library's terms.
    public var description: String {
        switch remedy {
        case nil: message
        case .rebuildViews?: message + ": replay the views from the log (Store(repairingViews:), then rebuildViews())"
        case .restoreFromBackup?: message + ": rebuilding the views cannot help; restore it from a backup (Store.backup(to:))"
        case .useNewerVersion?: message + ": open it with that evsync or a newer one"
        }
    }

    /// LMDB's return code, or the `errno` LMDB passed on, when the storage layer failed (see `StorageError`).
    public var storageCode: Int32? { (cause as? StorageError)?.code }

    public init(_ code: Code, _ message: String, remedy: Remedy? = nil, directory: String? = nil, cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.remedy = remedy
        self.directory = directory
        self.cause = cause
    }

    /// Wraps errors from lower layers into the store's error type, keeping their messages.
    package static func wrap(_ error: any Error) -> StoreError {
        wrap(error, in: nil)
    }

    /// What a store's errors say about it: where it is and how large its map is.
    struct Context {
        let directory: String
        /// The map's size in bytes, once the store is open.
        let mapSize: Int?
        /// The map is smaller than evsync asks for, because the address space would not allow more.
        let mapReduced: Bool
        /// Why the store was opened read-only (`EROFS`, `EACCES`, `EPERM`), if it was.
        let readOnlyBecause: Int32?
    }

    /// Wraps errors from lower layers, naming the store's directory and what to do for the ones about the whole store.
    static func wrap(_ error: any Error, in context: Context?) -> StoreError {
        switch error {
        case let error as StoreError: error
        case let error as SchemaError: StoreError(.invalidData, error.description, cause: error)
        case let error as JSONParseError: StoreError(.invalidData, error.description, cause: error)
        case let error as EventDecodingError: decoding(error, in: context)
        case let error as StorageError: storage(error, in: context)
        default: StoreError(.failure, "\(error)")
        }
    }

    private static func decoding(_ error: EventDecodingError, in context: Context?) -> StoreError {
        let store = name(context)
        if error.isNewerFormat {
            let event = error.seq.map { "event \($0): " } ?? ""
            return StoreError(.corrupt, "\(store) was written by a newer evsync (\(event)\(error.reason))", remedy: .useNewerVersion,
                              directory: context?.directory, cause: error)
        }
        if error.inViews {
            return StoreError(.corrupt, "the views of \(store) are damaged (\(error.reason))", remedy: .rebuildViews,
                              directory: context?.directory, cause: error)
        }
        return damaged(error.description, in: context, cause: error)
    }

    private static func storage(_ error: StorageError, in context: Context?) -> StoreError {
        let store = name(context)
        let directory = context?.directory
        var kind = error.kind
        if kind == .other || kind == .damaged, let directory, error.leftDeviceFull(holding: directory) { kind = .diskFull }
        switch kind {
        case .mapFull:
            let size = context?.mapSize.map { " (its \(byteCount($0)) map)" } ?? ""
            let advice = context?.mapReduced == true
                ? "the address space allowed no larger map, so raise its limit (ulimit -v) and retry"
                : "a store cannot grow past its map, so sync it, then start a new store and pull into it"
            return StoreError(.mapFull, "\(store) is full\(size): nothing was written; \(advice)", directory: directory, cause: error)
        case .diskFull:
            let device = directory.map { "the device holding \($0)" } ?? "the store's device"
            return StoreError(.diskFull, "no space left on \(device): nothing was written; free some space and retry",
                              directory: directory, cause: error)
        case .readOnly where error.reason != nil:
            // A store that must be restored before it is read (`LegacyJournal.refuseIfCutOff`).
            return StoreError(.readOnly, "\(store) \(error.explanation): open it once with write access (as its owner, "
                              + "on a file system mounted read-write)", directory: directory, cause: error)
        case .readOnly:
            // A store opened read-only refuses a write transaction with EACCES; say why it was opened so.
            let code = error.code == EACCES ? context?.readOnlyBecause ?? error.code : error.code
            let (why, advice) = switch code {
            case EROFS: ("its file system is mounted read-only", "remount it read-write or copy the store elsewhere")
            case EPERM: ("its files may not be changed", "clear their immutable flag (chattr -i) or copy the store elsewhere")
            default: ("permission denied", "run as the store's owner or make its files writable")
            }
            return StoreError(.readOnly, "\(store) is read-only (\(why)): nothing can be written to it; \(advice)",
                              directory: directory, cause: error)
        case .damaged:
            return damaged(error.explanation, in: context, cause: error)
        case .misuse:
            return StoreError(.failure, error.explanation, directory: directory, cause: error)
        case .other:
            return StoreError(.failure, error.description, directory: directory, cause: error)
        }
    }

    private static func damaged(_ reason: String, in context: Context?, cause: any Error & Sendable) -> StoreError {
        StoreError(.corrupt, "\(name(context)) is damaged (\(reason))", remedy: .restoreFromBackup,
                   directory: context?.directory, cause: cause)
    }

    private static func name(_ context: Context?) -> String {
        context.map { "the store at \($0.directory)" } ?? "the store"
    }

    /// `bytes` in the largest binary unit that divides it, or in MiB with a fraction.
    static func byteCount(_ bytes: Int) -> String {
        for (unit, shift) in [("GiB", 30), ("MiB", 20), ("KiB", 10)] where bytes >= 1 << shift && bytes % (1 << shift) == 0 {
            return "\(bytes >> shift) \(unit)"
        }
        return bytes >= 1 << 20 ? String(format: "%.1f MiB", Double(bytes) / Double(1 << 20)) : "\(bytes) bytes"
    }
}
