public import EventStore
public import Foundation

/// What one DAV item holds for evsync: its UID and the fields of the entity the collection maps.
public struct DAVMappedItem: Sendable, Hashable {
    public let uid: String
    public let fields: JSONObject

    public init(uid: String, fields: JSONObject) {
        self.uid = uid
        self.fields = fields
    }
}

/// How one entity is an iCalendar or vCard item, both ways. Pure: no I/O, and the clock is a parameter.
///
/// evsync owns only the properties a mapping maps. `read` takes those from an item; `write` makes a new item
/// from a record, or patches the server's item: only the properties of the fields that changed are written
/// again, every other line staying as it was, and an item whose fields did not change comes back as it was.
public protocol DAVMapping: Sendable {
    /// The component an item of this entity is: `VEVENT`, `VTODO` or `VJOURNAL` (in a calendar) or `VCARD` (in an address book).
    var component: String { get }

    /// The fields the mapping reads and writes; the entity's others stay local (`RemoteRecord.localFields`).
    var mappedFields: Set<String> { get }

    /// The record an item holds, or why it cannot be held.
    func read(_ document: VDocument) throws(DAVSkip) -> DAVMappedItem

    /// The item for a record: new when `base` is nil, else `base` with the changed fields' lines replaced.
    /// `now` stamps a changed item (DTSTAMP and LAST-MODIFIED, REV).
    func write(uid: String, fields: JSONObject, onto base: VDocument?, now: Date) throws(DAVMappingError) -> VDocument
}

extension DAVMapping {
    /// The record in a text as a server sent it.
    public func read(text: String) throws(DAVSkip) -> DAVMappedItem {
        try read(bytes: Array(text.utf8))
    }

    /// The record in a body as a server sent it.
    public func read(bytes: [UInt8]) throws(DAVSkip) -> DAVMappedItem {
        let document: VDocument
        do {
            document = try VDocument(parsing: bytes)
        } catch {
            throw DAVSkip(.unreadable, "not valid iCalendar or vCard: \(error)")
        }
        return try read(document)
    }

    /// Whether going from `old` to `new` changed what evsync maps. A server's new DTSTAMP, PRODID or REV, a
    /// reordering, other folds or another client's property is not an edit; a change of a mapped field is.
    /// An item that becomes readable or unreadable, or skipped for another reason, is an edit.
    public func isEdit(from old: VDocument, to new: VDocument) -> Bool {
        Result { () throws(DAVSkip) in try read(old) } != Result { () throws(DAVSkip) in try read(new) }
    }
}
