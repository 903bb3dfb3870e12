import Foundation

/// Images and other bytes carried inline in an item (iCalendar's binary ATTACH, vCard's PHOTO, a custom entity's
/// base64 field), as base64 text.
///
/// evsync's base64 fields are bytes with no media type, so the type written beside them (FMTTYPE,
/// vCard 3's TYPE, a data: URI's) is read from the bytes' signature; an image of no known type is written
/// without one (`application/octet-stream` in a data: URI).
enum InlineImage {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`, from the first bytes of base64 data.
    static func mediaType(ofBase64 text: String) -> String? {
        guard let head = Data(base64Encoded: String(text.prefix(16))).map(Array.init) else { return nil }
        if head.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return "image/png" }
        if head.starts(with: [0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if head.starts(with: [0x47, 0x49, 0x46, 0x38]) { return "image/gif" }
        if head.count >= 12, head.starts(with: [0x52, 0x49, 0x46, 0x46]), Array(head[8..<12]) == [0x57, 0x45, 0x42, 0x50] { return "image/webp" }
        return nil
    }

    /// vCard 3's TYPE for PHOTO: `PNG`, `JPEG`, `GIF`, `WEBP`.
    static func vCard3Type(ofBase64 text: String) -> String? {
        mediaType(ofBase64: text).map { String($0.dropFirst("image/".count)).uppercased() }
    }

    /// `data:image/png;base64,…` (vCard 4's PHOTO, RFC 2397).
    static func dataURI(base64 text: String) -> String {
        "data:" + (mediaType(ofBase64: text) ?? "application/octet-stream") + ";base64," + text
    }

    /// An iCalendar property carrying the bytes inline: `ENCODING=BASE64;VALUE=BINARY`, FMTTYPE when the bytes say it.
    static func iCalendarLine(_ name: String, base64 data: String) -> ContentLine {
        var parameters: [ContentLineParameter] = [.init("ENCODING", "BASE64"), .init("VALUE", "BINARY")]
        if let type = mediaType(ofBase64: data) { parameters.append(.init("FMTTYPE", type)) }
        return ContentLine(name, parameters: parameters, value: data)
    }

    /// Whether an iCalendar line carries its bytes (ENCODING=BASE64 or VALUE=BINARY), not a link to them.
    static func isICalendarInline(_ line: ContentLine) -> Bool {
        line.hasParameter("VALUE", value: "BINARY") || line.hasParameter("ENCODING", value: "BASE64")
    }

    /// A vCard property carrying the bytes inline: vCard 3's `ENCODING=b` (TYPE when the bytes say it), vCard 4's `data:` URI.
    static func vCardLine(_ name: String, base64 data: String, version: VCardVersion) -> ContentLine {
        switch version {
        case .three:
            var parameters: [ContentLineParameter] = [.init("ENCODING", "b")]
            if let type = vCard3Type(ofBase64: data) { parameters.append(.init("TYPE", type)) }
            return ContentLine(name, parameters: parameters, value: data)
        case .four:
            return ContentLine(name, value: dataURI(base64: data))
        }
    }

    /// The base64 bytes a vCard line carries: a `data:` URI (vCard 4, and some vCard 3 writers), or vCard 3's
    /// ENCODING=b (or BASE64); nil for a link to the bytes.
    static func vCardData(_ line: ContentLine) -> String? {
        if line.value.prefix(5).lowercased() == "data:" { return base64(fromDataURI: line.value) }
        return line.hasParameter("ENCODING", value: "b") || line.hasParameter("ENCODING", value: "BASE64") ? line.value : nil
    }

    /// The base64 data of a `data:…;base64,…` URI; nil for any other URI (a link to an image is not the image).
    static func base64(fromDataURI uri: String) -> String? {
        guard uri.utf8.count > 5, uri.prefix(5).lowercased() == "data:", let comma = uri.firstIndex(of: ",") else { return nil }
        let header = uri[uri.index(uri.startIndex, offsetBy: 5)..<comma]
        guard header.split(separator: ";").contains(where: { $0.lowercased() == "base64" }) else { return nil }
        return String(uri[uri.index(after: comma)...])
    }
}
