import Foundation

/// What a disk may hold after a power cut, replayed from a crash trace (docs/crash-states.md).
///
/// Per file: its durable content (as of the last flush that covered its writes) and the writes since, in 4 KiB
/// blocks; a cut leaves the durable content plus any of those blocks (a block written twice: either version, or
/// neither), and the size of the latest write or truncation it keeps. Names (creating, renaming, removing a file
/// or a directory) are durable once every directory they change was flushed after them; before that a cut keeps
/// the first k of those still pending, in order, for any k: file systems journal names in order.
struct DiskModel {
    static let blockSize = 4096

    /// A file's content: its size and its blocks, absent ones zeros.
    struct Image: Hashable {
        var size = 0
        var blocks: [Int: [UInt8]] = [:]

        /// Writes `bytes` at `offset`, and returns the blocks it touched.
        mutating func write(_ bytes: [UInt8], at offset: Int) -> [Int] {
            var touched: [Int] = []
            var done = 0
            while done < bytes.count {
                let position = offset + done
                let index = position / blockSize, within = position % blockSize
                let count = min(blockSize - within, bytes.count - done)
                var block = blocks[index] ?? [UInt8](repeating: 0, count: blockSize)
                block.replaceSubrange(within..<within + count, with: bytes[done..<done + count])
                blocks[index] = block
                touched.append(index)
                done += count
            }
            size = max(size, offset + bytes.count)
            return touched
        }

        mutating func truncate(to newSize: Int) {
            size = newSize
            cut()
        }

        /// Drops what lies past the size.
        mutating func cut() {
            let kept = (size + blockSize - 1) / blockSize
            blocks = blocks.filter { $0.key < kept }
            if size % blockSize != 0, var last = blocks[size / blockSize] {
                last.replaceSubrange(size % blockSize..<blockSize, with: [UInt8](repeating: 0, count: blockSize - size % blockSize))
                blocks[size / blockSize] = last
            }
        }
    }

    /// A write or truncation not yet flushed: the block as it was just after (nil for a truncation), and the size.
    struct Pending {
        let at: Int
        let block: Int?
        let image: [UInt8]?
        let sizeAfter: Int
    }

    struct File {
        /// The inode it had in the traced run: a crash state puts its content back into that inode when it still exists.
        let inode: UInt64
        var durable = Image()
        var current = Image()
        var pending: [Pending] = []
    }

    enum Node: Hashable {
        case file(Int)
        case directory
    }

    enum NameChange {
        case bind(String, Node)
        case remove(String)
        case move(String, String)
    }

    struct PendingName {
        let at: Int
        let change: NameChange
        /// The directories whose flush it waits for.
        var waiting: Set<String>
    }

    let root: String
    private(set) var files: [File] = []
    private(set) var durableNames: [String: Node] = [:]
    private(set) var currentNames: [String: Node] = [:]
    private(set) var pendingNames: [PendingName] = []
    /// What the processes printed, in order, each with the index of its event.
    private(set) var outputs: [(event: Int, pid: Int32, text: String)] = []

    /// A model of `root` as it is now, taken as durable (the caller flushed it).
    init(root: String) throws {
        self.root = root
        let manager = FileManager.default
        for relative in (manager.subpaths(atPath: root) ?? []).sorted() {
            let path = root + "/" + relative
            var status = stat()
            guard lstat(path, &status) == 0 else { continue }
            if status.st_mode & S_IFMT == S_IFDIR {
                durableNames[relative] = .directory
            } else if status.st_mode & S_IFMT == S_IFREG {
                var image = Image()
                _ = image.write([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))), at: 0)
                files.append(File(inode: UInt64(status.st_ino), durable: image, current: image))
                durableNames[relative] = .file(files.count - 1)
            }
        }
        currentNames = durableNames
    }

    /// The current name of the file with this inode.
    func name(of inode: UInt64) -> String? {
        currentNames.first { if case .file(let file) = $0.value { files[file].inode == inode } else { false } }?.key
    }

    private func relative(_ path: String) -> String? {
        if path == root { return "" }
        guard path.hasPrefix(root + "/") else { return nil }
        return String(path.dropFirst(root.count + 1))
    }

    private static func parent(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return String(path[..<slash])
    }

    private static func apply(_ change: NameChange, to names: inout [String: Node]) {
        switch change {
        case .bind(let path, let node):
            names[path] = node
        case .remove(let path):
            names[path] = nil
        case .move(let from, let to):
            // A directory moves with everything under it; whatever had the new name is replaced.
            for key in names.keys where key == to || key.hasPrefix(to + "/") { names[key] = nil }
            for (key, node) in names where key == from || key.hasPrefix(from + "/") {
                names[key] = nil
                names[to + key.dropFirst(from.count)] = node
            }
        }
    }

    private mutating func changeName(_ change: NameChange, at: Int, directories: Set<String>) {
        Self.apply(change, to: &currentNames)
        pendingNames.append(PendingName(at: at, change: change, waiting: directories))
    }

    private mutating func change(file: Int, at: Int, _ body: (inout Image) -> [Int?]) {
        let touched = body(&files[file].current)
        for block in touched {
            files[file].pending.append(Pending(at: at, block: block, image: block.map { files[file].current.blocks[$0] ?? [UInt8](repeating: 0, count: Self.blockSize) },
                                               sizeAfter: files[file].current.size))
        }
    }

    /// Makes durable the changes to `file` recorded before `covers` (in `blocks` only, for an O_DSYNC write).
    private mutating func flush(file: Int, covering covers: Int, blocks: ClosedRange<Int>? = nil) {
        func flushed(_ change: Pending) -> Bool {
            guard change.at < covers else { return false }
            guard let blocks else { return true }
            return change.block.map { blocks.contains($0) } ?? false
        }
        let (done, left) = (files[file].pending.filter(flushed), files[file].pending.filter { !flushed($0) })
        for change in done {
            if let block = change.block, let image = change.image { files[file].durable.blocks[block] = image }
            files[file].durable.size = change.sizeAfter
            files[file].durable.cut()
        }
        files[file].pending = left
    }

    private mutating func flush(directory: String?, covering covers: Int) {
        for index in pendingNames.indices where pendingNames[index].at < covers {
            if let directory { pendingNames[index].waiting.remove(directory) } else { pendingNames[index].waiting = [] }
        }
        for change in pendingNames where change.waiting.isEmpty { Self.apply(change.change, to: &durableNames) }
        pendingNames.removeAll { $0.waiting.isEmpty }
    }

    /// Plays one record of the trace.
    mutating func play(_ event: TraceEvent, index: Int) {
        let path = relative(event.path)
        // LMDB's lock file exists or not, and its content never matters after a cut (see CrashStateExplorer).
        if let path, path == "lock.mdb" || path.hasSuffix("/lock.mdb"), [.write, .truncate].contains(event.kind) { return }
        switch event.kind {
        case .start:
            break
        case .output:
            outputs.append((index, event.pid, String(decoding: event.data, as: UTF8.self)))
        case .open:
            guard let path else { return }
            if case .file(let file)? = currentNames[path], files[file].inode == UInt64(event.a) {
                if event.flags & TraceEvent.openTruncate != 0 { change(file: file, at: event.at) { $0.truncate(to: 0); return [nil] } }
            } else {
                // Created (or another process's file came under this name: a new inode either way).
                files.append(File(inode: UInt64(event.a)))
                changeName(.bind(path, .file(files.count - 1)), at: event.at, directories: [Self.parent(path)])
            }
        case .write:
            // A write to a file no longer named (unlinked, whose name change is durable or not) is not followed.
            guard let path, case .file(let file)? = currentNames[path] else { return }
            change(file: file, at: event.at) { $0.write(event.data, at: Int(event.a)) }
        case .truncate:
            guard let path, case .file(let file)? = currentNames[path] else { return }
            change(file: file, at: event.at) { $0.truncate(to: Int(event.a)); return [nil] }
        case .flush:
            guard let path else { return }
            if event.flags & TraceEvent.flushDirectory != 0 {
                flush(directory: path, covering: Int(event.a))
            } else if case .file(let file)? = currentNames[path] {
                var blocks: ClosedRange<Int>?
                if event.flags & TraceEvent.flushRange != 0, event.data.count == 8 {
                    let length = Int(event.data.reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
                    let start = Int(event.b)
                    blocks = start / Self.blockSize ... max(start, start + length - 1) / Self.blockSize
                }
                flush(file: file, covering: Int(event.a), blocks: blocks)
            }
        case .flushAll:
            for file in files.indices { flush(file: file, covering: Int(event.a)) }
            flush(directory: nil, covering: Int(event.a))
        case .mkdir:
            guard let path else { return }
            changeName(.bind(path, .directory), at: event.at, directories: [Self.parent(path)])
        case .unlink, .rmdir:
            guard let path else { return }
            changeName(.remove(path), at: event.at, directories: [Self.parent(path)])
        case .rename:
            // evsync renames within its directories only; a name moved in from outside would bring content unknown here.
            guard let from = path, let to = relative(event.path2) else { return }
            changeName(.move(from, to), at: event.at, directories: [Self.parent(from), Self.parent(to)])
        case .link:
            // A second name for a file (a new store's data.mdb, made aside): durable once its directory is flushed.
            guard let from = path, let to = relative(event.path2), let node = currentNames[from] else { return }
            changeName(.bind(to, node), at: event.at, directories: [Self.parent(to)])
        }
    }

    // MARK: - Crash states

    /// One way a cut may leave the disk: for each choice point, which option.
    struct Choices {
        /// Per file with pending changes, per block (and truncation), the option taken: 0 none, i the i-th version.
        var blocks: [Int: [Key: Int]] = [:]
        /// How many of the pending name changes are kept.
        var names = 0

        enum Key: Hashable { case block(Int), truncation(Int) }
    }

    /// The choice points of this moment: per file, per block its versions; and the pending name changes.
    private var points: [(file: Int, key: Choices.Key, versions: [Int])] {
        var points: [(file: Int, key: Choices.Key, versions: [Int])] = []
        for file in files.indices where !files[file].pending.isEmpty {
            var byKey: [Choices.Key: [Int]] = [:], order: [Choices.Key] = []
            for (index, change) in files[file].pending.enumerated() {
                let key: Choices.Key = change.block.map { .block($0) } ?? .truncation(index)
                if byKey[key] == nil { order.append(key) }
                byKey[key, default: []].append(index)
            }
            for key in order { points.append((file, key, byKey[key] ?? [])) }
        }
        return points
    }

    /// How many states this moment has (capped).
    var stateCount: Int {
        var count = pendingNames.count + 1
        for point in points {
            count = count.multipliedReportingOverflow(by: point.versions.count + 1).partialValue
            if count > 1 << 20 || count <= 0 { return 1 << 20 }
        }
        return count
    }

    /// The states of this moment to check: all of them when there are at most `enumerateUpTo`; else, within
    /// `budget`, none kept and all kept, then for each choice point in a random order the states where it alone is
    /// lost and where it alone is kept (the usual shape of an ordering bug: one write without another), then random ones.
    func choices(budget: Int, enumerateUpTo: Int, using random: inout some RandomNumberGenerator) -> [Choices] {
        let points = self.points
        let radices = points.map { $0.versions.count + 1 } + [pendingNames.count + 1]
        func make(_ digits: [Int]) -> Choices {
            var choices = Choices()
            for (index, point) in points.enumerated() { choices.blocks[point.file, default: [:]][point.key] = digits[index] }
            choices.names = digits[points.count]
            return choices
        }
        if stateCount <= max(budget, enumerateUpTo) {
            return (0..<stateCount).map { number in
                var rest = number
                return make(radices.map { radix in defer { rest /= radix }; return rest % radix })
            }
        }
        let none = radices.map { _ in 0 }, all = radices.map { $0 - 1 }
        var result = [make(none), make(all)]
        for point in radices.indices.shuffled(using: &random) where radices[point] > 1 {
            var allBut = all, only = none
            allBut[point] = 0
            only[point] = radices[point] - 1
            result += [make(allBut), make(only)]
            if result.count >= budget { return Array(result.prefix(budget)) }
        }
        while result.count < budget {
            // Often each block kept whole or not at all: a flush half done is the common case.
            let keepBias = Int.random(in: 0...2, using: &random)
            result.append(make(radices.map { radix in
                switch keepBias {
                case 0: Int.random(in: 0..<radix, using: &random)
                case 1: Bool.random(using: &random) ? radix - 1 : 0
                default: Int.random(in: 0..<radix, using: &random) == 0 ? 0 : radix - 1
                }
            }))
        }
        return result
    }

    /// The disk `choices` describes: every name and the content of every file.
    func state(_ choices: Choices) -> (names: [String: Node], images: [Int: Image]) {
        var names = durableNames
        for change in pendingNames.prefix(choices.names) { Self.apply(change.change, to: &names) }
        var images: [Int: Image] = [:]
        for case .file(let file) in Set(names.values) {
            var image = files[file].durable
            var latest: Int?
            let taken = choices.blocks[file] ?? [:]
            var seen: [Choices.Key: Int] = [:]
            for (index, change) in files[file].pending.enumerated() {
                let key: Choices.Key = change.block.map { .block($0) } ?? .truncation(index)
                seen[key, default: 0] += 1
                // Option i of a block is its i-th version; 0 is none.
                guard taken[key] == seen[key] else { continue }
                if let block = change.block, let bytes = change.image { image.blocks[block] = bytes }
                latest = index
            }
            if let latest { image.size = files[file].pending[latest].sizeAfter }
            image.cut()
            images[file] = image
        }
        return (names, images)
    }

    /// What `choices` leaves out of what was written, for a report.
    func describe(_ choices: Choices) -> String {
        var lines: [String] = []
        for file in files.indices where !files[file].pending.isEmpty {
            let name = currentNames.first { $0.value == .file(file) }?.key ?? "(unnamed inode \(files[file].inode))"
            let taken = choices.blocks[file] ?? [:]
            var kept: [String] = [], lost: [String] = []
            var seen: [Choices.Key: Int] = [:]
            for (index, change) in files[file].pending.enumerated() {
                let key: Choices.Key = change.block.map { .block($0) } ?? .truncation(index)
                seen[key, default: 0] += 1
                let label = change.block.map { "block \($0) (byte \($0 * Self.blockSize))" } ?? "truncation to \(change.sizeAfter)"
                (taken[key] == seen[key] ? { kept.append(label) } : { lost.append(label) })()
            }
            lines.append("  \(name): kept \(kept.isEmpty ? "nothing" : kept.joined(separator: ", ")); lost \(lost.isEmpty ? "nothing" : lost.joined(separator: ", "))")
        }
        lines.append("  names: \(choices.names) of \(pendingNames.count) pending changes kept")
        return lines.joined(separator: "\n")
    }
}
