import CLMDB

/// LMDB's flag constants as `Int32`, so code outside this folder needs no C types.
enum MDBFlags {
    static let create = Int32(MDB_CREATE)
    static let dupSort = Int32(MDB_DUPSORT)
    static let dupFixed = Int32(MDB_DUPFIXED)
}

/// LMDB's return codes that code outside this folder names: `notFound` is an answer rather than a failure.
enum MDBErrors {
    static let notFound = MDB_NOTFOUND
    static let corrupted = MDB_CORRUPTED
}
