import Foundation

/// Images carried inline in an item (iCalendar's binary ATTACH, vCard's PHOTO), as base64 text.
///
/// evsync's `image` fields are base64 bytes with no media type, so the type written beside them (FMTTYPE,
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

    /// The base64 data of a `data:…;base64,…` URI; nil for any other URI (a link to an image is not the image).
    static func base64(fromDataURI uri: String) -> String? {
        guard uri.utf8.count > 5, uri.prefix(5).lowercased() == "data:", let comma = uri.firstIndex(of: ",") else { return nil }
        let header = uri[uri.index(uri.startIndex, offsetBy: 5)..<comma]
        guard header.split(separator: ";").contains(where: { $0.lowercased() == "base64" }) else { return nil }
        return String(uri[uri.index(after: comma)...])
    }
}
