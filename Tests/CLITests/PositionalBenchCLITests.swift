import Foundation
import Testing

/// `sonora-bench positional`: help, the row format of a short run, bad options. Timings are
/// never asserted; only that each row is there, positive and names OpenAL Soft as its anchor.
@Suite("sonora-bench positional", .serialized, .enabled(if: sonoraBenchBinary != nil, "sonora-bench is not built"))
struct PositionalBenchCLITests {
    func bench(_ arguments: String...) throws -> Outcome { try runProcess(sonoraBenchBinary!, arguments) }

    @Test("--help explains the scene with an example")
    func help() throws {
        let help = try bench("positional", "--help")
        #expect(help.status == 0 && help.stdout.contains("sonora-bench positional --sources 32 --modes hrtf --seconds 2 --json"))
    }

    @Test("a short run prints a row per count and mode, Sonora beside OpenAL Soft")
    func shortRun() throws {
        // A small --min-trial-cpu: the lengthening is exercised, but the debug build's trials stay short.
        let outcome = try bench("positional", "--seconds", "0.1", "--trials", "1", "--sources", "4", "8", "--min-trial-cpu", "0.02", "--json")
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let rows = try JSONDecoder().decode([QueueBenchCLITests.Row].self, from: Data(outcome.stdout.utf8))
        #expect(rows.count == 4)
        for mode in ["panning", "hrtf"] {
            for count in [4, 8] {
                let row = try #require(rows.first { $0.metric == "CPU per second of audio, \(count) moving sources, \(mode)" })
                #expect(row.unit == "s/s" && row.better == "lower" && row.anchor.hasPrefix("OpenAL Soft"))
                #expect(row.sonora > 0 && row.anchor_value > 0 && row.sonora.isFinite && row.anchor_value.isFinite)
            }
        }
    }

    @Test("bad options: non-zero with the reason")
    func badOptions() throws {
        let modes = try bench("positional", "--modes", "ambisonic")
        #expect(modes.status != 0 && modes.stderr.contains("'ambisonic' is neither"))
        let sources = try bench("positional", "--sources", "0")
        #expect(sources.status != 0 && sources.stderr.contains("--sources"))
    }
}
