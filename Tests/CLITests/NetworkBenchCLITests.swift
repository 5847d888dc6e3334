import Foundation
import Testing

/// `sonora-bench network`: help, a short run's rows, bad options. CPU figures are never
/// asserted (only that both contenders were measured); the round trip is exact.
@Suite("sonora-bench network", .serialized, .enabled(if: sonoraBenchBinary != nil, "sonora-bench is not built"))
struct NetworkBenchCLITests {
    typealias Row = BenchmarkJSONRow

    func bench(_ arguments: String...) throws -> Outcome { try runProcess(sonoraBenchBinary!, arguments) }

    @Test("--help explains both measurements with an example")
    func help() throws {
        let help = try bench("network", "--help")
        #expect(help.status == 0)
        #expect(help.stdout.contains("Examples:") && help.stdout.contains("sonora-bench network --periods 256 --seconds 20 --trials 5 --json"))
        #expect(help.stdout.contains("--trials"))
    }

    @Test("a short run: the round trip is latency + 1 cycles, both slaves' CPU measured in each of two trials")
    func shortRun() throws {
        let outcome = try bench("network", "--periods", "256", "--seconds", "1", "--trials", "2", "--json")
        if outcome.status != 0 && outcome.stderr.contains("cannot make network namespaces") {
            print("skipped: network namespaces cannot be made here")
            return
        }
        #expect(outcome.status == 0, "\(outcome.stderr)")
        guard outcome.status == 0 else { return }
        let rows = try JSONDecoder().decode([Row].self, from: Data(outcome.stdout.utf8))
        let roundTrip = try #require(rows.first { $0.metric.hasPrefix("round trip through netjack2 @256") })
        #expect(roundTrip.unit == "cycles" && roundTrip.anchor_value == 3 && roundTrip.better == "lower")
        let cpu = try #require(rows.first { $0.metric.hasPrefix("slave CPU per second") })
        #expect(cpu.unit == "ms/s" && cpu.anchor == "jack_net_slave" && cpu.better == "lower")
        #expect(cpu.sonora.isFinite && cpu.sonora > 0 && cpu.anchor_value.isFinite && cpu.anchor_value > 0)
        // Two alternating trials, each contender on a fresh master: four measurements in the log.
        #expect(outcome.stderr.components(separatedBy: "jack_net_slave ").count - 1 >= 2, "\(outcome.stderr)")
        #expect(outcome.stderr.contains("trial 2: Sonora's slave"), "\(outcome.stderr)")
    }

    @Test("bad options: non-zero with the reason")
    func badOptions() throws {
        let seconds = try bench("network", "--seconds", "0")
        #expect(seconds.status != 0 && seconds.stderr.contains("--seconds must be in 1…600"))
        let trials = try bench("network", "--trials", "0")
        #expect(trials.status != 0 && trials.stderr.contains("--trials must be in 1…50"))
        let periods = try bench("network", "--periods", "100")
        #expect(periods.status != 0 && periods.stderr.contains("--periods"))
    }
}
