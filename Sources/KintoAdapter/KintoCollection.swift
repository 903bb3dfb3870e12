/// One collection of a Kinto server, in its bucket: where an entity's records live (`KintoRemote.place(of:)`).
struct KintoCollection: Hashable, CustomStringConvertible {
    let bucket: String
    let name: String
    /// The entity whose records it holds.
    let entity: String

    /// The path segments of its records, or of one record.
    func recordSegments(_ id: String? = nil) -> [String] {
        ["buckets", bucket, "collections", name, "records"] + (id.map { [$0] } ?? [])
    }

    var description: String { name }
}
