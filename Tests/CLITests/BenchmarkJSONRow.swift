/// One row of `sonora-bench NAME --json`, as the bench CLI suites decode it.
struct BenchmarkJSONRow: Decodable {
    var metric: String
    var unit: String
    var sonora: Double
    var anchor: String
    var anchor_value: Double
    var better: String
}
