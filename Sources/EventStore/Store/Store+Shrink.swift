import Storage

extension Store {
    /// What `shrinkDataFile(in:)` did.
    public struct Shrink: Sendable, Equatable, Codable {
        /// The data file's size before and after.
        public var bytesBefore: UInt64
        public var bytesAfter: UInt64
        /// A process that has the store open, so that the file was left as it was (-1: one that is gone, or
        /// one that committed while the copy was being made); nil when it was rewritten.
        public var heldOpenBy: Int32?

        /// Whether the file was rewritten.
        public var shrunk: Bool { heldOpenBy == nil }
    }

    /// Rewrites the data file of the store in `directory` compactly, giving its free pages back to the disk,
    /// unless another process has the store open (then `heldOpenBy` names it and nothing changes; try again later).
    /// How, and why it is safe: `DataFileShrink`.
    /// - Throws: `.failure` when a `Store` of this process is open on `directory` (close it first); as
    ///   `init(directory:configuration:)` when the store cannot be opened; `.diskFull` when the copy does not fit.
    public static func shrinkDataFile(in directory: String, configuration: Configuration = Configuration()) throws(StoreError) -> Shrink {
        guard SharedEnvironments.users(of: directory) == 0 else {
            throw StoreError(.failure, "\(directory) is open in this process: close its stores before shrinking its data file")
        }
        var configuration = configuration
        configuration.create = false
        // Opened first, so that a store that is not there, or not a store, is named as such.
        let context = try Store(directory: directory, configuration: configuration).errorContext
        do {
            let outcome = try DataFileShrink.run(in: directory, withStoreOpen: { body in
                let store = try Store(directory: directory, configuration: configuration)
                try withExtendedLifetime(store) { try body(store.environment) }
            }, reopen: {
                _ = try Store(directory: directory, configuration: configuration)
            })
            return Shrink(bytesBefore: outcome.bytesBefore, bytesAfter: outcome.bytesAfter, heldOpenBy: outcome.heldOpenBy)
        } catch {
            throw StoreError.wrap(error, in: context)
        }
    }
}
