import Foundation

/// One result of a benchmark, in the row format scripts check goals by:
/// `anchorValue` is the goal line (the anchor's own value, or a margin of it).
struct BenchmarkRow: Codable, Sendable {
    enum Better: String, Codable, Sendable {
        case higher, lower
    }

    var metric: String
    var unit: String
    var sonora: Double
    var anchor: String
    var anchorValue: Double
    var better: Better

    enum CodingKeys: String, CodingKey {
        case metric, unit, sonora, anchor, better
        case anchorValue = "anchor_value"
    }

    var goalMet: Bool {
        better == .higher ? sonora >= anchorValue : sonora <= anchorValue
    }

    /// Sonora's value over the goal line, oriented so that ≥ 1 means the goal is met.
    var ratio: Double {
        if sonora == anchorValue { return 1 }  // includes 0 xruns against a goal of 0
        return better == .higher ? sonora / anchorValue : anchorValue / sonora
    }
}

enum BenchmarkReport {
    /// Prints rows as JSON (one array) or as an aligned table with the goal verdicts.
    static func print(_ rows: [BenchmarkRow], json: Bool, notes: [String] = []) {
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            let rounded = rows.map { row -> BenchmarkRow in
                var row = row
                row.sonora = significant(row.sonora)
                row.anchorValue = significant(row.anchorValue)
                return row
            }
            let data = (try? encoder.encode(rounded)) ?? Data("[]".utf8)
            Swift.print(String(decoding: data, as: UTF8.self))
            return
        }
        let header = ["metric", "unit", "sonora", "goal (anchor)", "goal line", "ratio", "met"]
        let cells = rows.map { row in
            [
                row.metric, row.unit, cell(row.sonora), row.anchor,
                cell(row.anchorValue), String(format: "%.2f×", row.ratio),
                row.goalMet ? "yes" : "NO",
            ]
        }
        let widths = header.indices.map { column in
            ([header] + cells).map { $0[column].count }.max() ?? 0
        }
        func line(_ values: [String]) -> String {
            zip(values, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }
                .joined(separator: "  ")
        }
        Swift.print(line(header))
        Swift.print(line(widths.map { String(repeating: "-", count: $0) }))
        for row in cells { Swift.print(line(row)) }
        for note in notes { Swift.print(note) }
    }

    /// `value` to six significant digits. Fixed decimals would flatten the small rows (CPU
    /// seconds per second of audio are thousandths: 0.0034 printed as 0.003, or 0.0004 as 0).
    static func significant(_ value: Double) -> Double {
        guard value.isFinite, value != 0 else { return value }
        let scale = pow(10, Double(5 - Int(floor(log10(abs(value))))))
        return (value * scale).rounded() / scale
    }

    /// A table cell: three decimals, or three significant digits below 0.1.
    static func cell(_ value: Double) -> String {
        guard value.isFinite, value != 0, abs(value) < 0.1 else { return String(format: "%.3f", value) }
        return String(format: "%.3g", value)
    }
}
