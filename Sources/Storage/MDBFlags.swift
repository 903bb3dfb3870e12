import CLMDB

/// LMDB's flag constants as `Int32`, so code outside this folder needs no C types.
package enum MDBFlags {
    package static let create = Int32(MDB_CREATE)
    package static let dupSort = Int32(MDB_DUPSORT)
    package static let dupFixed = Int32(MDB_DUPFIXED)
}

/// LMDB's return codes that code outside this folder names: `notFound` is an answer rather than a failure.
package enum MDBErrors {
    package static let notFound = MDB_NOTFOUND
    package static let corrupted = MDB_CORRUPTED
}
