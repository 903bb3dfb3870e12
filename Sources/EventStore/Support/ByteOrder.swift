/// The order of a fixed-width integer's bytes. evsync's own formats are big-endian (an integer so written sorts
/// as its bytes do, which LMDB's keys need); little-endian is for the formats that already use it (the checksum of
/// an event of format 2) and is always asked for by name.
package enum ByteOrder: Sendable {
    case bigEndian, littleEndian
}
