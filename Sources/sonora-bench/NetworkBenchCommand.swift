import ArgumentParser
import Foundation

struct NetworkBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "network",
        abstract: "netjack2: round trip per period size, and the slave driver's CPU against jack_net_slave.",
        discussion: """
            Builds a private network (two namespaces on a bridge, scripts/netjack-netns.sh; root),
            runs jackd (dummy backend) with its netmanager in one and Sonora as a netjack2 slave in
            the other. (a) An impulse sent through the master's loop comes back after how many
            cycles, at each period (goal: exactly latency + 1, no extra cycle). (b) At 256 frames,
            the CPU per second of Sonora's slave looping 2 channels, against JACK's own
            jack_net_slave doing the same in the same run (goal ≤ 1.0 of it): both measured as
            their threads' run time (schedstat) over the same window, alternating for --trials
            rounds, each slave on a freshly started master; the best trial of each is the row.
            Run from the repository root.

            Examples:
              sonora-bench network
              sonora-bench network --periods 256 --seconds 20 --trials 5 --json
            """
    )

    @Flag(help: "Print the rows as a JSON array.")
    var json = false

    @Option(help: "Seconds of audio per CPU measurement.")
    var seconds = 10.0

    @Option(help: "Alternating rounds of the CPU comparison (Sonora's slave, then jack_net_slave).")
    var trials = 3

    @Option(parsing: .upToNextOption, help: "Period sizes (frames) to measure.")
    var periods: [Int] = [128, 256, 512]

    func validate() throws {
        guard seconds >= 1 && seconds <= 600 else { throw ValidationError("--seconds must be in 1…600") }
        guard trials >= 1 && trials <= 50 else { throw ValidationError("--trials must be in 1…50") }
        guard !periods.isEmpty, periods.allSatisfy({ [64, 128, 256, 512, 1024].contains($0) }) else { throw ValidationError("--periods takes 64, 128, 256, 512 or 1024") }
    }

    func run() throws {
        let benchmark = NetworkBenchmark(seconds: seconds, periods: periods, trials: trials)
        do {
            let (rows, notes) = try benchmark.run { message in
                FileHandle.standardError.write(Data((message + "\n").utf8))
            }
            BenchmarkReport.print(rows, json: json, notes: notes)
        } catch let error as BenchError {
            throw ValidationError(error.description)
        }
    }
}
