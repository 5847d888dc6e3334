import Foundation
import Testing

/// `sonora-bench sounds`: help, the row format, a short run, bad options. Timings are never
/// asserted; only that each row is there and well formed, and the latencies in frames.
@Suite("sonora-bench sounds", .serialized, .enabled(if: sonoraBenchBinary != nil, "sonora-bench is not built"))
struct SoundsBenchCLITests {
    func bench(_ arguments: String...) throws -> Outcome { try runProcess(sonoraBenchBinary!, arguments) }

    @Test("--help explains the measurements with an example")
    func help() throws {
        let help = try bench("sounds", "--help")
        #expect(help.status == 0 && help.stdout.contains("sonora-bench sounds --players 64 --seconds 5 --json"))
    }

    @Test("a short run prints every row as JSON; the latencies are within the device's buffer plus a period")
    func shortRun() throws {
        let outcome = try bench("sounds", "--seconds", "1", "--players", "4", "--json")
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let rows = try JSONDecoder().decode([QueueBenchCLITests.Row].self, from: Data(outcome.stdout.utf8))
        // The goal line against the anchor (a bare render callback per mixer input),
        // first; the stricter one-callback anchor beside it, both well formed.
        let ratios = rows.filter { $0.metric.hasPrefix("4 players mixed") && $0.unit == "ratio" }
        #expect(ratios.count == 2)
        let cpu = try #require(ratios.first)
        #expect(cpu.metric.hasSuffix("CPU ÷ 4 bare render callbacks") && cpu.anchor.contains("MultiChannelMixerUnit"))
        let single = try #require(rows.first { $0.metric.hasSuffix("CPU ÷ one callback summing 4 sources") && $0.unit == "ratio" })
        for row in [cpu, single] {
            #expect(row.sonora.isFinite && row.sonora > 0 && row.anchor_value == 1.10 && row.better == "lower", "\(row.metric)")
        }
        #expect(rows.contains { $0.metric.hasPrefix("4 players mixed") && $0.unit == "count" && $0.anchor_value == 0 })
        // Runs with an xrun are left out; a clean one gives frames within the goal line.
        for latency in rows where latency.unit == "frames" {
            #expect(latency.sonora >= 0 && latency.sonora <= latency.anchor_value, "\(latency.metric): \(latency.sonora)")
        }
    }

    @Test("bad options: non-zero with the reason")
    func badOptions() throws {
        let outcome = try bench("sounds", "--players", "1000")
        #expect(outcome.status != 0 && outcome.stderr.contains("--players"))
    }
}
