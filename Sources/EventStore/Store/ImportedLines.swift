/// Turns the lines of `evsync import` into creation events, appended to a chunk.
///
/// There are two ways, which give the same events. A plain line (an object
/// whose keys are ASCII without escapes, certainly valid) goes straight from
/// its bytes to its stored event: its fields are re-encoded in canonical form
/// as they are read (`JSONParser.writeCanonicalObject`), checked against the
/// schema on those bytes (`CanonicalRecordCheck`), and written with no
/// dictionary, `Event` or string built for them. That halves what an import
/// spends a line on. Every other line, every bad one among them, goes the
/// general way (`Store.importedCreation`), which decides and words the error.
/// The fuzz target `import` checks that the two agree.
package struct ImportedLines {
    let schema: EntitySchema
    let at: Int64
    let author: String
    private let check: CanonicalRecordCheck
    // Kept from one line to the next.
    private var fields = JSONWriter(capacity: 1024)
    private var scratch = JSONParser.CanonicalScratch()
    private var id: [UInt8] = []

    package init(schema: EntitySchema, at: Int64, author: String) {
        self.schema = schema
        self.at = at
        self.author = author
        self.check = CanonicalRecordCheck(schema)
    }

    /// Appends the creation `line` (input line `number`) asks for, as event
    /// `seq`; throws the error that names the line if it asks for none.
    mutating func append(_ line: UnsafeRawBufferPointer, number: Int, seq: UInt64,
                         to chunk: inout EncodedCreations) throws(StoreError) {
        if appendPlain(line, number: number, seq: seq, to: &chunk) { return }
        var event = try Store.importedCreation(line, number: number, schema: schema, at: at, author: author)
        event.seq = seq
        chunk.append(event, line: number)
    }

    /// Appends the creation a plain, certainly valid `line` asks for; returns
    /// false, having appended nothing, for any other line.
    mutating func appendPlain(_ line: UnsafeRawBufferPointer, number: Int, seq: UInt64,
                              to chunk: inout EncodedCreations) -> Bool {
        fields.removeAll()
        // The buffer, swapped out for the line: the closures below cannot write to `self`.
        var id: [UInt8] = []
        swap(&id, &self.id)
        id.removeAll(keepingCapacity: true)
        defer { swap(&id, &self.id) }
        var given: Bool?  // whether the line gives an id, and whether as a string
        var walk = check.walk()
        do {
            let written = try JSONParser.writeCanonicalObject(line, to: &fields, scratch: &scratch, taking: { key, parser in
                guard key.equals("id") else { return false }
                given = try parser.string(appendingTo: &id)
                return true
            }, checking: { key, value in walk.accepts(key, value) })
            guard written, walk.passes else { return false }
        } catch {
            return false
        }
        switch given {
        case nil:
            var generated = RecordID.generate()
            generated.withUTF8 { id.append(contentsOf: $0) }
        case true?: break
        case false?: return false
        }
        // No fields at all: the general way stores an event without a `set`.
        guard fields.bytes.count > 2, id.withUnsafeBytes({ RecordID.isValid($0) }) else { return false }
        id.withUnsafeBytes { id in
            fields.bytes.withUnsafeBytes { set in
                chunk.appendLocalCreation(seq: seq, at: at, entity: schema.name, recordID: id, author: author, set: set,
                                          line: number)
            }
        }
        return true
    }
}

extension ImportedLines {
    /// The event the plain way makes of `line`, with its stored `set` bytes,
    /// or nil if it leaves the line to the general way: to check one way
    /// against the other (the fuzz target `import`, the tests).
    package mutating func plainCreation(_ line: UnsafeRawBufferPointer) -> (event: Event, set: [UInt8])? {
        var chunk = EncodedCreations()
        guard appendPlain(line, number: 1, seq: 1, to: &chunk), let entry = chunk.entries.first else { return nil }
        var set: [UInt8]?
        let event = chunk.bytes.withUnsafeBytes { bytes in
            try? EventCoding.decode(UnsafeRawBufferPointer(rebasing: bytes[entry.event]), encodedSet: &set)
        }
        return event.map { ($0, set ?? []) }
    }
}

extension Store {
    /// The creation event that one input line asks for: the general way (see `ImportedLines`).
    package static func importedCreation(_ line: UnsafeRawBufferPointer, number: Int, schema: EntitySchema,
                                         at: Int64, author: String) throws(StoreError) -> Event {
        do {
            guard case .object(var fields) = try JSONParser.parse(line) else {
                throw StoreError(.invalidData, "expected a JSON object")
            }
            let id: String
            switch fields.removeValue(forKey: "id") {
            case nil: id = RecordID.generate()
            case .string(let given)?: id = given
            case let other?: throw StoreError(.invalidData, "'id' must be a string, not \(other.typeName)")
            }
            try checkID(id)
            try schema.validate(fields)
            return Event(eventID: RecordID.generate(), at: at, entity: schema.name, recordID: id, kind: .created,
                         origin: .local, author: author, set: fields)
        } catch {
            let wrapped = StoreError.wrap(error)
            throw StoreError(wrapped.code == .failure ? .failure : .invalidData, "line \(number): \(wrapped.message)")
        }
    }
}
