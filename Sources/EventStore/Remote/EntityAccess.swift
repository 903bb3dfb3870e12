/// What the server lets this account do with an entity's records, as the last sync learned it from the
/// server (Kinto's permissions endpoint): `Store.access(of:)`, `SyncState.access`. A local change of a `readOnly`
/// (or `noAccess`) entity is refused before it is written, unless forced (`Store.write(overridingReadOnly:_:)`).
/// The raw values are the words `status --json` writes.
public enum EntityAccess: String, Sendable, Codable, CaseIterable {
    /// Read every record, create, change and delete.
    case readWrite = "read-write"
    /// Read every record; no change is accepted.
    case readOnly = "read-only"
    /// Read every record and create new ones; a change to another's record is refused.
    case readAndCreate = "read-and-create"
    /// Create records, and then read and change those alone (Kinto's `record:create`): a drop box.
    case createOnly = "create-only"
    /// Only the records shared with this account one by one can be read (Kinto's record permissions, the
    /// collection's own closed to it): the server decides each change, and nothing is refused up front.
    case sharedRecords = "shared-records"
    /// Read every record; change only those shared with this account for writing, or made by it (Kinto gives a
    /// record's creator write access to it): the server decides each change, and nothing is refused up front.
    case readWriteSome = "read-write-some"
    /// Neither read nor write: the entity's place is closed to this account (a sync names it unreadable).
    case noAccess = "none"

    /// The access that reading, changing any record and creating records grant, however a server names them: each
    /// adapter says which of its permissions give the three, and this says what they make.
    public init(reads: Bool, changes: Bool, creates: Bool) {
        switch (reads, changes, creates) {
        case (true, true, _): self = .readWrite
        case (true, false, true): self = .readAndCreate
        case (true, false, false): self = .readOnly
        case (false, _, true): self = .createOnly
        case (false, _, false): self = .noAccess
        }
    }
}
