import Foundation
import Testing

/// The README and docs/ link to each other instead of saying a rule twice, so a
/// moved section or a renamed heading must not leave a link going nowhere.
@Suite("Documentation links")
struct DocumentationLinkTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// README.md and every Markdown file in docs/, as paths relative to the repository.
    static func documents() throws -> [String] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: repository.appendingPathComponent("docs").path)
        return ["README.md"] + docs.filter { $0.hasSuffix(".md") }.sorted().map { "docs/\($0)" }
    }

    /// The text outside fenced code blocks, with inline code spans removed: brackets in a usage line are no link.
    static func prose(_ text: String) -> String {
        var inFence = false
        var lines: [String] = []
        for line in text.components(separatedBy: "\n") {
            if line.hasPrefix("```") { inFence.toggle(); continue }
            if !inFence { lines.append(line.replacingOccurrences(of: "`[^`]*`", with: "", options: .regularExpression)) }
        }
        return lines.joined(separator: "\n")
    }

    /// The anchors GitHub gives a file's headings: lower-cased, punctuation dropped, spaces as `-`, `-1` on a repeat.
    static func anchors(_ text: String) -> Set<String> {
        var seen: [String: Int] = [:]
        var anchors = Set<String>()
        var inFence = false
        for line in text.components(separatedBy: "\n") {
            if line.hasPrefix("```") { inFence.toggle(); continue }
            guard !inFence, line.hasPrefix("#") else { continue }
            let title = line.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces).lowercased()
            let slug = String(title.unicodeScalars.compactMap { scalar -> Character? in
                if scalar == " " { return "-" }
                let kept = CharacterSet.alphanumerics.contains(scalar) || scalar == "-" || scalar == "_"
                return kept ? Character(scalar) : nil
            })
            let count = seen[slug, default: 0]
            seen[slug] = count + 1
            anchors.insert(count == 0 ? slug : "\(slug)-\(count)")
        }
        return anchors
    }

    /// The targets of the Markdown links in `text` that point into the repository (not `http:`, `https:`, `mailto:`).
    static func relativeLinks(_ text: String) throws -> [String] {
        let pattern = try NSRegularExpression(pattern: #"\]\(([^)\s]+)\)"#)
        let prose = Self.prose(text)
        let range = NSRange(prose.startIndex..., in: prose)
        return pattern.matches(in: prose, range: range).compactMap { match in
            Range(match.range(at: 1), in: prose).map { String(prose[$0]) }
        }.filter { !$0.hasPrefix("http:") && !$0.hasPrefix("https:") && !$0.hasPrefix("mailto:") }
    }

    @Test("every relative link in the README and docs/ leads to a file, and to a heading of it")
    func linksResolve() throws {
        var checked = 0
        for document in try Self.documents() {
            let url = Self.repository.appendingPathComponent(document)
            let text = try String(contentsOf: url, encoding: .utf8)
            for link in try Self.relativeLinks(text) {
                checked += 1
                let parts = link.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                let target = parts[0].isEmpty ? url : url.deletingLastPathComponent().appendingPathComponent(parts[0])
                guard FileManager.default.fileExists(atPath: target.standardizedFileURL.path) else {
                    Issue.record("\(document): \(link): no file \(target.standardizedFileURL.path)")
                    continue
                }
                guard parts.count == 2 else { continue }
                let anchors = Self.anchors(try String(contentsOf: target, encoding: .utf8))
                #expect(anchors.contains(parts[1]), "\(document): \(link): no such heading in \(target.lastPathComponent)")
            }
        }
        #expect(checked > 50, "only \(checked) links found: is the pattern still right?")
    }

    @Test("a heading's anchor is GitHub's", arguments: [
        ("## What `sync` prints", "what-sync-prints"),
        ("## Many devices on one server (issue 13)", "many-devices-on-one-server-issue-13"),
        ("### Is the server still what we think it is?", "is-the-server-still-what-we-think-it-is"),
    ])
    func anchor(heading: String, anchor: String) {
        #expect(Self.anchors(heading) == [anchor])
    }

    @Test("the README stays a user's page: at most 20,000 bytes (the rest is in docs/)")
    func readmeSize() throws {
        let size = try Data(contentsOf: Self.repository.appendingPathComponent("README.md")).count
        #expect(size <= 20_000, "README.md is \(size) bytes")
    }
}
