import ArgumentParser
import Foundation

struct IOBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "io",
        abstract: "The I/O thread at small periods: xruns, wake-up jitter and load, beside JACK2.",
        discussion: """
            For each period (48 kHz, 2 periods), runs a duplex stream on Sonora's loopback
            ALSA plugin with the other core kept busy, and JACK2's dummy server at the same
            period and load (SCHED_FIFO at the same priority, in a private /dev/shm),
            counting the xruns it logs — alternating in slices of at most 10 s, so both
            see the same background. Goals: no more xruns than JACK at every period,
            none at 256 frames (anchor_value is the goal; lower is better). Needs root for
            SCHED_FIFO and for JACK's private mount; without jackd the JACK column is
            missing and the goal is zero.

            Examples:
              sonora-bench io
              sonora-bench io --seconds 10 --periods 128,256 --json
            """
    )

    @Flag(help: "Print the rows as a JSON array.")
    var json = false

    @Option(help: "Seconds per period size (and per JACK run).")
    var seconds = 60.0

    @Option(help: "Period sizes, comma-separated.")
    var periods = "64,128,256"

    @Option(help: "Periods in the buffer.")
    var bufferPeriods = 2

    @Option(help: "SCHED_FIFO priority of the I/O thread and of jackd.")
    var priority: Int32 = 70

    func validate() throws {
        guard seconds >= 1 && seconds <= 3600 else { throw ValidationError("--seconds must be in 1…3600") }
        guard parsedPeriods.count > 0 && parsedPeriods.allSatisfy({ $0 >= 16 && $0 <= 8192 }) else {
            throw ValidationError("--periods must list sizes in 16…8192, e.g. 64,128,256")
        }
    }

    var parsedPeriods: [Int] { periods.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) } }

    func run() throws {
        let benchmark = IOBenchmark(periods: parsedPeriods, seconds: seconds, bufferPeriods: bufferPeriods, priority: priority)
        let (rows, notes, measurements) = try benchmark.run { message in
            FileHandle.standardError.write(Data((message + "\n").utf8))
        }
        var allNotes = notes
        for m in measurements {
            allNotes.append(String(
                format: "period %d: %d cycles, xruns %d (JACK %@), jitter mean %.0f µs p99 %.0f µs max %.0f µs, load mean %.1f %% max %.1f %%",
                m.period, m.cycles, m.xruns, m.jackXruns.map { "\($0)" } ?? "n/a", m.jitterMean / 1000, m.jitterP99 / 1000, m.jitterMax / 1000,
                m.loadMean * 100, m.loadMax * 100))
        }
        BenchmarkReport.print(rows, json: json, notes: allNotes)
    }
}
