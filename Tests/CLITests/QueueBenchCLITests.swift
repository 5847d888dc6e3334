import Foundation
import Testing

/// `sonora-bench queue`: help, the row format, a short run, bad options. Timings are never
/// asserted; only that each row is there and well formed, and the start latency in frames.
@Suite("sonora-bench queue", .serialized, .enabled(if: sonoraBenchBinary != nil, "sonora-bench is not built"))
struct QueueBenchCLITests {
    typealias Row = BenchmarkJSONRow

    func bench(_ arguments: String...) throws -> Outcome { try runProcess(sonoraBenchBinary!, arguments) }

    @Test("--help explains the three measurements with an example")
    func help() throws {
        let help = try bench("queue", "--help")
        #expect(help.status == 0)
        #expect(help.stdout.contains("Examples:") && help.stdout.contains("sonora-bench queue --seconds 5 --rounds 2 --queues 32 --json"))
    }

    @Test("a short run prints every row as JSON; the start latency is the device's buffer")
    func shortRun() throws {
        let outcome = try bench("queue", "--seconds", "1", "--rounds", "1", "--queues", "2", "--json")
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let rows = try JSONDecoder().decode([Row].self, from: Data(outcome.stdout.utf8))
        let cpu = try #require(rows.first { $0.metric.hasPrefix("queue CPU") })
        #expect(cpu.unit == "ratio" && cpu.sonora.isFinite && cpu.sonora > 0 && cpu.anchor_value == 1.05 && cpu.better == "lower")
        #expect(rows.contains { $0.metric.hasPrefix("2 queues at once") && $0.unit == "count" && $0.anchor_value == 0 })
        #expect(rows.contains { $0.metric.hasPrefix("2 queues at once") && $0.unit == "ratio" })
        // Runs with an xrun are left out; when one was clean, the latency is 256 × 2 frames.
        if let latency = rows.first(where: { $0.metric.hasPrefix("start latency") }) {
            #expect(latency.unit == "frames" && latency.sonora == 512 && latency.anchor_value == 768)
        }
    }

    @Test("bad options: non-zero with the reason")
    func badOptions() throws {
        let outcome = try bench("queue", "--seconds", "0")
        #expect(outcome.status != 0 && outcome.stderr.contains("--seconds must be in 1…600"))
        let queues = try bench("queue", "--queues", "1000")
        #expect(queues.status != 0 && queues.stderr.contains("--queues"))
    }
}
