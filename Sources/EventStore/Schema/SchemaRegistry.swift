import Foundation

/// The entities evsync knows: the built-in Holiday and Birthday, plus every
/// `*.schema.json` in a schema directory (which may also replace a built-in).
public struct SchemaRegistry: Sendable {
    private var byLowercasedName: [String: EntitySchema] = [:]
    /// The same schemas under their names as spelled: the lookup of every record read or written, without lower-casing.
    private var byName: [String: EntitySchema] = [:]

    /// The built-in schemas only.
    public init() {
        for file in BuiltinSchemas.files {
            // The built-ins are tested to parse; a failure here would be a build defect, so skip rather than crash.
            if let schema = try? EntitySchema(json: file.text, source: file.name) {
                register(schema)
            }
        }
    }

    /// The built-ins plus the entity schemas found in `directory`.
    /// `event.schema.json`, the log's own envelope, is not an entity.
    ///
    /// - Parameters:
    ///   - directory: the folder of `*.schema.json` files.
    ///   - remoteProtocols: the protocol words of the `x-evsync-<protocol>` keywords the caller's
    ///     remotes read (`dav`); a schema with another is refused, naming its file, so that a typo such as
    ///     `x-evsync-colection` is not kept unread. nil keeps any (the store itself reads none of them).
    public init(directory: String, remoteProtocols: Set<String>? = nil) throws(SchemaError) {
        self.init()
        let files: [String]
        do {
            files = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw SchemaError("cannot read the schema directory \(directory)")
        }
        for file in files.sorted() where file.hasSuffix(".schema.json") && file != "event.schema.json" {
            let path = (directory as NSString).appendingPathComponent(file)
            guard let data = FileManager.default.contents(atPath: path) else { throw SchemaError("cannot read \(path)") }
            let schema = try EntitySchema(json: String(decoding: data, as: UTF8.self), source: path)
            if let remoteProtocols, let unread = schema.remoteOptions.keys.sorted().first(where: { !remoteProtocols.contains($0) }) {
                let known = remoteProtocols.sorted().map { "x-evsync-\($0)" }.joined(separator: ", ")
                throw SchemaError("\(path): keyword 'x-evsync-\(unread)' is read by no remote (evsync's: \(known.isEmpty ? "none" : known), and x-evsync-collection)")
            }
            register(schema)
        }
    }

    private mutating func register(_ schema: EntitySchema) {
        let lowercased = schema.name.lowercased()
        if let replaced = byLowercasedName[lowercased] { byName[replaced.name] = nil }
        byLowercasedName[lowercased] = schema
        byName[schema.name] = schema
    }

    /// The entity called `name`, ignoring case.
    public func schema(named name: String) throws(SchemaError) -> EntitySchema {
        guard let schema = byName[name] ?? byLowercasedName[name.lowercased()] else {
            throw SchemaError("unknown entity '\(name)'\(Suggestion.didYouMean(name, among: entityNames)) (known: \(entityNames.joined(separator: ", ")))")
        }
        return schema
    }

    public var entities: [EntitySchema] {
        byLowercasedName.values.sorted { $0.name < $1.name }
    }

    public var entityNames: [String] { entities.map(\.name) }
}
