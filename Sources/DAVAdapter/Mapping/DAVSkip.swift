/// Why an item on a DAV server cannot be held as an evsync record: what kind of reason, and the reason in one line.
///
/// A pull records it as a `skipped` event and goes on with the other items; the item stays on the server untouched.
public struct DAVSkip: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        /// Not iCalendar or vCard text (the codec's error is in the reason).
        case unreadable
        /// Not the component the collection's entity maps (a VTODO among holidays), or several in one item.
        case wrongComponent
        /// No UID, which CalDAV and CardDAV require and evsync's id comes from.
        case noUID
        /// A VEVENT at a time of day, not a whole day.
        case timedEvent
        /// An all-day VEVENT that lasts more than one day.
        case multiDay
        /// A property the entity requires is missing (SUMMARY, DTSTART, FN, BDAY).
        case missingProperty
        /// A property has a value the entity cannot take (a BDAY that is text, a DTSTART that is no date).
        case invalidValue
        /// A vCard version other than 3.0 and 4.0.
        case unsupportedVersion
        /// The fields read break the entity's schema.
        case invalidRecord
    }

    public let kind: Kind
    public let reason: String

    public init(_ kind: Kind, _ reason: String) {
        self.kind = kind
        self.reason = reason
    }

    public var description: String { reason }
}

/// Why a record cannot be written as a DAV item: a field the mapping needs is missing or is not what the schema
/// promises (a store's records always are; a caller's may not be).
public struct DAVMappingError: Error, Sendable, Hashable, CustomStringConvertible {
    public let reason: String

    public init(_ reason: String) {
        self.reason = reason
    }

    public var description: String { reason }
}
