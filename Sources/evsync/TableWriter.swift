import Foundation

/// A table written as its rows arrive, for people: a header, then one line a
/// row, columns aligned by display width and fitted to the terminal.
///
/// Rows are streamed, so column widths are measured on the first `sample`
/// rows (a screenful is what a person sees first). On a terminal a later,
/// wider cell is shortened with `…` rather than holding every row back to
/// measure it; through a pipe nothing is cut: such a cell pushes the rest of
/// its line along.
struct TableWriter {
    /// Rows measured before the first line is written.
    static let sample = 100
    /// On a terminal no column grows wider than this (a long `details` would push the rest off the screen).
    static let widestCell = 40
    /// Fitting to the terminal shrinks no column below this (an ISO date's width).
    static let narrowestCell = 10

    let header: [String]
    private var pending: [[String]] = []
    private var widths: [Int]?
    private let columns: Int?
    private let write: (String) -> Void

    /// - Parameters:
    ///   - columns: the terminal's width (`Terminal.columns`), or nil to fit nothing.
    ///   - write: where each line goes (without its newline).
    init(header: [String], columns: Int?, write: @escaping (String) -> Void) {
        self.header = header
        self.columns = columns
        self.write = write
    }

    mutating func add(_ row: [String]) {
        if let widths {
            write(line(row, widths))
        } else {
            pending.append(row)
            if pending.count >= Self.sample { flush() }
        }
    }

    /// Writes what is held back (the header, at least); call once after the last row.
    mutating func finish() { if widths == nil { flush() } }

    /// The columns left out to fit the terminal, by header, once the first line is written.
    private(set) var hidden: [String] = []

    private mutating func flush() {
        var natural = header.map(DisplayWidth.of)
        var empty = header.map { _ in true }
        for row in pending {
            for (column, cell) in row.enumerated() {
                let width = DisplayWidth.of(cell)
                natural[column] = max(natural[column], columns == nil ? width : min(width, Self.widestCell))
                if !cell.isEmpty { empty[column] = false }
            }
        }
        let widths = Self.fit(natural, empty: empty, into: columns)
        self.widths = widths
        hidden = header.indices.filter { widths[$0] == 0 }.map { header[$0] }
        write(line(header, widths))
        for row in pending { write(line(row, widths)) }
        pending = []
    }

    private func line(_ cells: [String], _ widths: [Int]) -> String {
        var parts: [String] = []
        for (column, width) in widths.enumerated() where width > 0 {
            let cell = columns == nil ? cells[column] : DisplayWidth.truncated(cells[column], to: width)
            parts.append(DisplayWidth.padded(cell, to: width))
        }
        // No trailing spaces: at the terminal's edge they would wrap the line.
        var line = parts.joined(separator: "  ")
        while line.hasSuffix(" ") { line.removeLast() }
        return line
    }

    /// Column widths (0: left out) that fit `columns`. The first column (the id,
    /// which people copy into `show`) keeps its whole width, up to the screen's; the others
    /// keep at least `narrowestCell` (a date's ten) or their natural width if
    /// less. When even that is too wide, columns are left out from the right,
    /// empty ones first; then the widest columns give way until the rest fit.
    static func fit(_ natural: [Int], empty: [Bool], into columns: Int?) -> [Int] {
        func total(_ widths: [Int]) -> Int {
            let shown = widths.filter { $0 > 0 }
            return shown.reduce(0, +) + 2 * max(0, shown.count - 1)
        }
        guard let columns, total(natural) > columns else { return natural }
        let floors = natural.indices.map { $0 == 0 ? natural[0] : min(natural[$0], narrowestCell) }
        var widths = natural
        while total(widths) > columns, let last = widths.indices.dropFirst().last(where: { widths[$0] > 0 && empty[$0] }) {
            widths[last] = 0
        }
        while total(widths.indices.map { widths[$0] > 0 ? floors[$0] : 0 }) > columns,
              let last = widths.indices.dropFirst().last(where: { widths[$0] > 0 }) {
            widths[last] = 0
        }
        while total(widths) > columns {
            let shrinkable = widths.indices.filter { widths[$0] > max(floors[$0], 1) }
            guard let widest = shrinkable.max(by: { widths[$0] < widths[$1] }) else {
                widths[0] = min(widths[0], max(1, columns))
                break
            }
            widths[widest] -= 1
        }
        return widths
    }
}

/// What the output is connected to.
enum Terminal {
    /// The width to fit: `COLUMNS` when set (as `ls` and `git` honour it), else the
    /// terminal's when standard output is one, else nil (a pipe or a file: nothing is cut).
    static var columns: Int? {
        if let text = ProcessInfo.processInfo.environment["COLUMNS"], let columns = Int(text), columns > 0 { return columns }
        guard isatty(STDOUT_FILENO) == 1 else { return nil }
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return nil }
        return Int(size.ws_col)
    }
}
