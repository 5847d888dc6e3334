import ArgumentParser
import Foundation
import SonoraPositionalTestSupport

struct PositionalBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "positional",
        abstract: "Positional audio: Sonora's OpenAL-style API beside OpenAL Soft's loopback device, same scene.",
        discussion: """
            32, 128 and 256 sources circle the listener at 1–5 m, each looping noise with a
            tangential velocity (doppler on), positions and velocities updated every 800
            frames (60 Hz). Each engine renders the identical scene at 48 kHz stereo through
            its loopback device on this thread, with stereo panning and with HRTF. Rows: the
            process's CPU seconds per second of audio (median of --trials; the engines
            alternate); the goal line is OpenAL Soft's own time on the same scene in the same
            run (ratio ≤ 1.0 to meet it). A trial renders --seconds of audio, or more so that
            it takes at least --min-trial-cpu seconds of CPU (the same duration for both
            engines); best, median and worst of the trials follow the table (on stderr with
            --json).

            Examples:
              sonora-bench positional
              sonora-bench positional --sources 32 --modes hrtf --seconds 2 --json
            """
    )

    @Flag(help: "Print the rows as a JSON array.")
    var json = false

    @Option(help: "Seconds of audio each engine renders per trial (at least; see --min-trial-cpu).")
    var seconds = 4.0

    @Option(help: "Trials per engine, alternating (the median counts).")
    var trials = 3

    @Option(help: "CPU seconds a trial takes at least: small scenes render more audio (0: exactly --seconds).")
    var minTrialCpu = 0.2

    @Option(parsing: .upToNextOption, help: "Source counts to measure (each 1…1024).")
    var sources: [Int] = [32, 128, 256]

    @Option(parsing: .upToNextOption, help: "Spatialization modes: panning, hrtf.")
    var modes: [String] = ["panning", "hrtf"]

    func validate() throws {
        guard seconds >= 0.05 && seconds <= 600 else { throw ValidationError("--seconds must be in 0.05…600") }
        guard trials >= 1 && trials <= 100 else { throw ValidationError("--trials must be in 1…100") }
        guard minTrialCpu >= 0 && minTrialCpu <= 10 else { throw ValidationError("--min-trial-cpu must be in 0…10") }
        guard !sources.isEmpty, sources.allSatisfy({ (1...1024).contains($0) }) else {
            throw ValidationError("--sources must be counts in 1…1024")
        }
        guard !modes.isEmpty else { throw ValidationError("--modes takes panning and/or hrtf") }
        if let bad = modes.first(where: { PositionalBenchmark.Mode(rawValue: $0) == nil }) {
            throw ValidationError("--modes takes panning and/or hrtf; '\(bad)' is neither")
        }
    }

    func run() throws {
        let benchmark = PositionalBenchmark(seconds: seconds, trials: trials, minimumTrialCPU: minTrialCpu)
        var rows: [BenchmarkRow] = []
        var notes: [String] = []
        for mode in modes.compactMap(PositionalBenchmark.Mode.init(rawValue:)) {
            for count in sources {
                let measured: PositionalBenchmark.Measurement
                do {
                    measured = try benchmark.measure(sources: count, mode: mode) {
                        try SonoraALEngine(frequency: PositionalBenchmark.frequency, hrtf: mode == .hrtf)
                    }
                } catch {
                    FileHandle.standardError.write(Data("sonora-bench positional: \(count) sources, \(mode.rawValue): \(error)\n".utf8))
                    throw ExitCode.failure
                }
                notes.append(Self.trialNote(measured, sources: count, mode: mode))
                rows.append(BenchmarkRow(
                    metric: "CPU per second of audio, \(count) moving sources, \(mode.rawValue)", unit: "s/s",
                    sonora: measured.sonora, anchor: "OpenAL Soft 1.19 loopback", anchorValue: measured.openALSoft, better: .lower
                ))
            }
        }
        notes.append("OpenAL Soft: linear resampler (its 1.19 default), output limiter off; both at 48 kHz float32 stereo")
        if json {
            // The rows stay one JSON array on stdout; the trials go to stderr for the record.
            BenchmarkReport.print(rows, json: true)
            FileHandle.standardError.write(Data((notes.joined(separator: "\n") + "\n").utf8))
        } else {
            BenchmarkReport.print(rows, json: false, notes: notes)
        }
    }

    /// One line per row: the trial length, each engine's best / median / worst, and Sonora ÷
    /// OpenAL Soft per alternation (median and worst).
    static func trialNote(_ measured: PositionalBenchmark.Measurement, sources: Int, mode: PositionalBenchmark.Mode) -> String {
        func spread(_ values: [Double]) -> String {
            let sorted = values.sorted()
            return "\(format(sorted.first ?? .nan)) / \(format(PositionalBenchmark.Measurement.median(values))) / \(format(sorted.last ?? .nan))"
        }
        func format(_ value: Double) -> String { String(format: "%.5f", value) }
        let ratios = measured.pairedRatios
        return "\(sources) \(mode.rawValue): \(measured.sonoraTrials.count) trials of \(String(format: "%g", measured.trialSeconds)) s of audio; "
            + "s/s best / median / worst: Sonora \(spread(measured.sonoraTrials)), OpenAL Soft \(spread(measured.openALSoftTrials)); "
            + "Sonora ÷ OpenAL Soft per trial: median \(String(format: "%.2f", PositionalBenchmark.Measurement.median(ratios))), "
            + "worst \(String(format: "%.2f", ratios.max() ?? .nan))"
    }
}
