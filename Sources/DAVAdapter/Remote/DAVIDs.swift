import EventStore
import Foundation

/// evsync's record ids for DAV items, and the href an id's item is written at.
///
/// A record's id is its item's UID when the UID is an id evsync can hold, else the UID escaped: `dav_` and the
/// UID with every byte other than a letter, digit or `-` written `_XX` (upper-case hex), so
/// `4f1c@example.com` is `dav_4f1c_40example_2Ecom`. The mapping is reversible both ways for every UID and every
/// id (docs/decisions/dav-ids-are-the-uid-escaped.md): an id made here that merely looks escaped (`dav_x`, which no UID escapes to, as
/// `x` needs no escaping) is its own UID.
///
/// A new item's href is the collection's and the UID percent-encoded, with `.ics` or `.vcf`: what most clients
/// (the `caldav` package, Apple's, Thunderbird's) write, so another client's item is usually found where its id
/// says. Where it is not, the href goes with the item's version (`DAVVersion`).
enum DAVIDs {
    static let prefix = "dav_"

    static func id(forUID uid: String) -> String {
        isPlain(uid) ? uid : prefix + escape(uid)
    }

    static func uid(forID id: String) -> String {
        decoded(id) ?? id
    }

    /// Whether a UID is its own id: an id evsync holds, which does not read as an escaped one.
    private static func isPlain(_ uid: String) -> Bool {
        RecordID.isValidServerID(uid) && decoded(uid) == nil
    }

    /// The UID an escaped id stands for; nil for an id that is its own UID.
    ///
    /// `dav_` + escape(u) stands for u only when u is not plain, and whether u is plain depends on whether it is
    /// itself escaped: the chain of unescapings is walked from its end, without recursion (a hostile id of 64 KiB
    /// could nest thousands deep).
    private static func decoded(_ id: String) -> String? {
        var chain = [id]
        while let next = unescapeOnce(chain[chain.count - 1]) { chain.append(next) }
        // plain(last) = valid(last), as it decodes to nothing.
        var decodedOfNext: String? = nil
        var nextIsPlain = RecordID.isValidServerID(chain[chain.count - 1])
        for index in stride(from: chain.count - 2, through: 0, by: -1) {
            let decodesTo = nextIsPlain ? nil : chain[index + 1]
            nextIsPlain = RecordID.isValidServerID(chain[index]) && decodesTo == nil
            decodedOfNext = decodesTo
        }
        return chain.count == 1 ? nil : decodedOfNext
    }

    private static func escape(_ uid: String) -> String {
        var out = ""
        for byte in uid.utf8 {
            if isKept(byte) { out.unicodeScalars.append(Unicode.Scalar(byte)) } else { out += "_" + hex(byte) }
        }
        return out
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 15)]], as: UTF8.self)
    }

    /// `dav_` + a canonical escape of some UTF-8 text: that text; else nil.
    private static func unescapeOnce(_ id: String) -> String? {
        guard id.hasPrefix(prefix) else { return nil }
        let bytes = Array(id.utf8.dropFirst(prefix.utf8.count))
        var out: [UInt8] = []
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if isKept(byte) {
                out.append(byte)
                index += 1
                continue
            }
            guard byte == UInt8(ascii: "_"), index + 2 < bytes.count,
                  let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) else { return nil }
            let decoded = high << 4 | low
            guard !isKept(decoded) else { return nil }  // not canonical: that byte is never escaped
            out.append(decoded)
            index += 3
        }
        return String(validating: out, as: UTF8.self)
    }

    private static func isKept(_ byte: UInt8) -> Bool {
        (byte | 0x20) &- UInt8(ascii: "a") < 26 || byte &- UInt8(ascii: "0") < 10 || byte == UInt8(ascii: "-")
    }

    /// Upper-case hex only: one spelling per byte.
    private static func hexValue(_ byte: UInt8) -> UInt8? {
        if byte &- UInt8(ascii: "0") < 10 { return byte - UInt8(ascii: "0") }
        if byte &- UInt8(ascii: "A") < 6 { return byte - UInt8(ascii: "A") + 10 }
        return nil
    }

    // MARK: Hrefs

    /// The last segment of a new item's path: the UID percent-encoded (RFC 3986's unreserved characters kept), and the extension.
    static func segment(forUID uid: String, extension: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        // `alphanumerics` holds non-ASCII letters; only ASCII ones may stay unencoded.
        let encoded = uid.unicodeScalars.map { scalar -> String in
            scalar.isASCII && allowed.contains(scalar) ? String(scalar) : String(scalar).utf8.map { "%" + hex($0) }.joined()
        }.joined()
        return encoded + "." + `extension`
    }

    /// An href as a key: its path, percent-decoded, so that two spellings of one resource compare equal.
    static func key(_ href: String) -> String {
        let path = URLComponents(string: href)?.percentEncodedPath ?? href
        return path.removingPercentEncoding ?? path
    }

    /// The UID a path's last segment names, extension dropped: where an item made as evsync makes them is found.
    static func uid(inHref href: String) -> String? {
        guard let last = key(href).split(separator: "/").last else { return nil }
        for suffix in [".ics", ".vcf"] where last.hasSuffix(suffix) { return String(last.dropLast(suffix.count)) }
        return String(last)
    }
}

/// A DAV item's version: its ETag, and its href when that is not the one its id gives (another client's item).
/// The engine keeps it with the record and hands it back with each update and delete, so a push knows where the
/// item is without any table of its own.
struct DAVVersion: Equatable {
    var etag: String
    var href: String?

    init(etag: String, href: String?) {
        (self.etag, self.href) = (etag, href)
    }

    /// `"etag"` or `"etag" /path/item.ics`: an ETag has no space (RFC 9110 §8.8.3), a percent-encoded href none either.
    init(_ version: RemoteVersion) {
        let token = version.token
        if let space = token.firstIndex(of: " ") {
            etag = String(token[..<space])
            href = String(token[token.index(after: space)...])
        } else {
            etag = token
            href = nil
        }
    }

    var remoteVersion: RemoteVersion {
        RemoteVersion(href.map { etag + " " + $0 } ?? etag)
    }
}
