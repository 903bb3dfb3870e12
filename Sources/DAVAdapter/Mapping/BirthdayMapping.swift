public import EventStore
public import Foundation

/// Birthday ⇄ a vCard (3.0, RFC 2426, or 4.0, RFC 6350).
///
/// | Birthday field | vCard 3.0 | vCard 4.0 |
/// | --- | --- | --- |
/// | `name` | FN, and N written from it | the same |
/// | `date` | BDAY `1985-04-12`; no year: `BDAY;X-APPLE-OMIT-YEAR=1604:1604-04-12` | BDAY `19850412`; no year: `--0412` |
/// | `giftIdeas` | the first NOTE | the same |
/// | `facebook` | the first `X-SOCIALPROFILE;TYPE=facebook` (Apple's) | the first `SOCIALPROFILE;SERVICE-TYPE=Facebook` (RFC 9554) |
/// | `image` | the first inline PHOTO (`ENCODING=b;TYPE=JPEG`) | the first PHOTO with a `data:` URI |
///
/// Read: either form of the social profile in either version (TYPE or SERVICE-TYPE, any case); a year-less
/// BDAY (`--0412`, `--04-12`, Apple's X-APPLE-OMIT-YEAR) as the day in year 1604 (see `DAVDate`); a BDAY with a
/// time as its day. No BDAY, a BDAY that is text (`VALUE=text:circa 1800`) or has no day, no FN (nor N to make
/// one from), no UID, or a version other than 3.0 and 4.0 is a skip. New cards are vCard 3.0, the version every
/// CardDAV server must take (RFC 6352 §6.3.1) and the only one some take; a patched card keeps its version.
/// Patched: the changed fields' properties, then REV. A changed name rewrites FN and N; N is "last word;the
/// rest" (`Lovelace;Ada;;;`), what a contacts app shows best for most names.
public struct BirthdayMapping: DAVMapping {
    /// The schema read items are checked against (nil: none); the built-in Birthday's by default.
    public let schema: EntitySchema?

    public init(schema: EntitySchema? = try? SchemaRegistry().schema(named: "Birthday")) {
        self.schema = schema
    }

    public var component: String { "VCARD" }

    public var mappedFields: Set<String> { ["name", "date", "giftIdeas", "facebook", "image"] }

    public func read(_ document: VDocument) throws(DAVSkip) -> DAVMappedItem {
        let card = try MappingSupport.single("VCARD", in: document)
        _ = try MappingSupport.vCardVersion(of: card)
        let uid = try MappingSupport.uid(of: card)
        guard let name = Self.name(of: card) else { throw DAVSkip(.missingProperty, "vCard \(uid) has no FN") }
        guard let birthday = card.line(named: "BDAY") else { throw DAVSkip(.missingProperty, "vCard \(uid) (\(name)) has no BDAY") }
        let date = try Self.day(birthday, uid: uid)
        var optional: JSONObject = [:]
        optional["giftIdeas"] = card.line(named: "NOTE").map { .string($0.textValue) }
        // A URI as written; a user name (VALUE=TEXT in vCard 4) as TEXT.
        optional["facebook"] = card.lines.first(where: Self.isFacebook).map { .string($0.value.contains(":") ? $0.value : $0.textValue) }
        optional["image"] = card.lines.lazy.compactMap(Self.photoData).first.map(JSONValue.string)
        let fields = try MappingSupport.record(required: ["name": .string(name), "date": .string(date.description)],
                                               optional: optional, schema: schema)
        return DAVMappedItem(uid: uid, fields: fields)
    }

    public func write(uid: String, fields: JSONObject, onto base: VDocument?, now: Date) throws(DAVMappingError) -> VDocument {
        let wanted = try Wanted(fields)
        guard let base else { return new(uid: uid, wanted, now: now) }
        let changed = try MappingSupport.changedFields(self, base: base, uid: uid, wanted: wanted.fields)
        guard !changed.isEmpty else { return base }
        // read() found exactly one VCARD, of version 3.0 or 4.0.
        let version = (try? MappingSupport.vCardVersion(of: MappingSupport.single("VCARD", in: base))) ?? .three
        var document = base
        for index in document.components.indices where document.components[index].isNamed("VCARD") {
            patch(&document.components[index], changed: changed, wanted, version: version, now: now)
        }
        return document
    }

    // MARK: Writing

    typealias Version = VCardVersion

    /// A record's mapped fields, checked, as they are compared with an item's and written.
    private struct Wanted {
        let name: String
        let date: DAVDate
        let giftIdeas: String?
        let facebook: String?
        let image: String?
        let fields: JSONObject

        init(_ record: JSONObject) throws(DAVMappingError) {
            name = try MappingSupport.string(record, "name")
            date = try MappingSupport.date(record, "date")
            giftIdeas = try MappingSupport.optionalString(record, "giftIdeas")
            facebook = try MappingSupport.optionalString(record, "facebook")
            image = try MappingSupport.base64(record, "image")
            var fields: JSONObject = ["name": .string(name), "date": .string(date.description)]
            fields["giftIdeas"] = giftIdeas.map(JSONValue.string)
            fields["facebook"] = facebook.map(JSONValue.string)
            fields["image"] = image.map(JSONValue.string)
            self.fields = fields
        }

        var fn: ContentLine { ContentLine("FN", text: name) }

        var n: ContentLine { MappingSupport.structuredName(from: name) }

        func bday(_ version: Version) -> ContentLine {
            switch (version, date.isYearless) {
            case (.three, false): ContentLine("BDAY", value: date.description)
            case (.three, true): ContentLine("BDAY", parameters: [.init("X-APPLE-OMIT-YEAR", String(DAVDate.yearlessYear))], value: date.description)
            case (.four, false): ContentLine("BDAY", value: date.basic)
            case (.four, true): ContentLine("BDAY", value: date.yearlessBasic)
            }
        }

        var note: ContentLine? { giftIdeas.map { ContentLine("NOTE", text: $0) } }

        func socialProfile(_ version: Version, group: String?) -> ContentLine? {
            facebook.map { profile in
                let isURI = profile.contains(":")
                switch version {
                case .three:
                    return ContentLine("X-SOCIALPROFILE", group: group, parameters: [.init("TYPE", "facebook")],
                                       value: isURI ? profile : VText.escape(profile))
                case .four:
                    // RFC 9554: a URI by default; a user name is VALUE=TEXT.
                    return isURI
                        ? ContentLine("SOCIALPROFILE", group: group, parameters: [.init("SERVICE-TYPE", "Facebook")], value: profile)
                        : ContentLine("SOCIALPROFILE", group: group, parameters: [.init("SERVICE-TYPE", "Facebook"), .init("VALUE", "TEXT")], text: profile)
                }
            }
        }

        func photo(_ version: Version) -> ContentLine? { image.map { InlineImage.vCardLine("PHOTO", base64: $0, version: version) } }
    }

    private func new(uid: String, _ wanted: Wanted, now: Date) -> VDocument {
        let lines: [ContentLine?] = [
            ContentLine("VERSION", value: "3.0"), ContentLine("PRODID", value: MappingSupport.productID), ContentLine("UID", text: uid),
            wanted.fn, wanted.n, wanted.bday(.three), wanted.note, wanted.socialProfile(.three, group: nil), wanted.photo(.three),
            ContentLine("REV", value: DAVDate.utcStamp(now)),
        ]
        return VDocument([VComponent("VCARD", children: lines.compactMap { $0.map(VComponent.Child.line) })])
    }

    private func patch(_ card: inout VComponent, changed: Set<String>, _ wanted: Wanted, version: Version, now: Date) {
        if changed.contains("name") {
            card.replaceLines(named: "FN", with: [wanted.fn])
            card.replaceLines(named: "N", with: [wanted.n])
        }
        if changed.contains("date") { card.replaceLines(named: "BDAY", with: [wanted.bday(version)]) }
        if changed.contains("giftIdeas") { card.replaceFirstLine(where: { $0.isNamed("NOTE") }, with: wanted.note) }
        if changed.contains("facebook") {
            // The line keeps its group (Apple's `item1.`), so the labels that go with it still do.
            let group = card.lines.first(where: Self.isFacebook)?.group
            card.replaceFirstLine(where: Self.isFacebook, with: wanted.socialProfile(version, group: group))
        }
        if changed.contains("image") {
            card.replaceFirstLine(where: { Self.photoData($0) != nil }, with: wanted.photo(version))
        }
        MappingSupport.stampCard(&card, now: now)
    }

    // MARK: Reading

    /// FN, or the name N spells (given, additional, family) when FN is empty.
    private static func name(of card: VComponent) -> String? {
        if let fn = card.line(named: "FN")?.textValue.trimmingSpaces, !fn.isEmpty { return fn }
        guard let n = card.line(named: "N").map({ VText.structured($0.value) }) else { return nil }
        let parts = [1, 2, 0].compactMap { $0 < n.count ? n[$0].joined(separator: " ") : nil }.filter { !$0.isEmpty }
        return parts.isEmpty ? nil : parts.joined(separator: " ")
    }

    /// The day of a BDAY: a date, a date with a time (its day), or a day without a year (as year 1604).
    private static func day(_ line: ContentLine, uid: String) throws(DAVSkip) -> DAVDate {
        let value = line.value.trimmingSpaces
        if line.hasParameter("VALUE", value: "TEXT") {
            throw DAVSkip(.invalidValue, "vCard \(uid)'s BDAY is text ('\(VText.unescape(value))'), not a date")
        }
        if let yearless = DAVDate(yearless: value) { return yearless }
        let day = value.split(separator: "T", maxSplits: 1).first.map(String.init) ?? value
        guard let date = DAVDate(day) else {
            throw DAVSkip(.invalidValue, "vCard \(uid)'s BDAY '\(value)' has no month and day evsync can hold")
        }
        // Apple's vCard 3: the year in the value stands for none when X-APPLE-OMIT-YEAR names it.
        if let omitted = line.parameter("X-APPLE-OMIT-YEAR")?.first, Int(omitted) == date.year {
            return DAVDate(year: DAVDate.yearlessYear, month: date.month, day: date.day) ?? date
        }
        return date
    }

    /// A Facebook profile: SOCIALPROFILE or X-SOCIALPROFILE with TYPE or SERVICE-TYPE `facebook`, any case.
    static func isFacebook(_ line: ContentLine) -> Bool {
        (line.isNamed("X-SOCIALPROFILE") || line.isNamed("SOCIALPROFILE"))
            && (line.hasParameter("TYPE", value: "facebook") || line.hasParameter("SERVICE-TYPE", value: "facebook"))
    }

    /// The base64 bytes of a PHOTO that carries them: a `data:` URI (vCard 4, and some vCard 3 writers), or
    /// vCard 3's ENCODING=b (or BASE64); nil for a PHOTO that links to an image, or another property.
    static func photoData(_ line: ContentLine) -> String? {
        line.isNamed("PHOTO") ? InlineImage.vCardData(line) : nil
    }
}
