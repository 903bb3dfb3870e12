/// `1 record`, `2 records`: every count a person reads.
enum Plural {
    /// `plural` for the nouns that do not just take an s (`batch`, `batches`).
    static func count(_ count: some BinaryInteger, _ noun: String, plural: String? = nil) -> String {
        "\(count) \(count == 1 ? noun : plural ?? noun + "s")"
    }
}
