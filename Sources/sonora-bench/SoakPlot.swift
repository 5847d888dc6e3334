/// A text plot of a soak's samples against time, for terminals and BENCHMARKS.md: RSS (MB)
/// as a column chart scaled between its minimum and maximum, and xruns (cumulative) under it.
enum SoakPlot {
    static func text(_ samples: [SoakBenchmark.Sample], width: Int = 60, height: Int = 8) -> String {
        guard samples.count >= 2 else { return "  (too few samples to plot)" }
        // At most `width` columns: each column the last sample of its slice of time.
        let columns = (0..<min(width, samples.count)).map { column in
            samples[min(samples.count - 1, (column + 1) * samples.count / min(width, samples.count) - 1)]
        }
        let rss = columns.map { Double($0.rssKilobytes) / 1024 }
        let low = rss.min()!, high = rss.max()!
        let span = max(high - low, 0.01)
        var lines = ["  RSS (MB) against time"]
        for level in stride(from: height, to: 0, by: -1) {
            let threshold = low + span * (Double(level) - 0.5) / Double(height)
            let label = level == height ? String(format: "%8.2f", high) : level == 1 ? String(format: "%8.2f", low) : String(repeating: " ", count: 8)
            lines.append("  \(label) |" + String(rss.map { $0 >= threshold ? "█" : " " }))
        }
        let xrunRow = columns.map { sample -> Character in
            sample.xruns == 0 ? "." : sample.xruns < 10 ? Character(String(sample.xruns)) : "+"
        }
        lines.append("  \(String(repeating: " ", count: 8)) +" + String(repeating: "-", count: columns.count))
        lines.append("    xruns  |" + String(xrunRow) + "   (cumulative; + is 10 or more)")
        lines.append("            0 s" + String(repeating: " ", count: max(1, columns.count - 8)) + "\(Int(columns.last!.seconds)) s")
        return lines.joined(separator: "\n")
    }
}
