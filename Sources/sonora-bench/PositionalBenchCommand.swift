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
            process's CPU seconds per second of audio (best of --trials); the goal line is
            OpenAL Soft's own time on the same scene in the same run (ratio ≤ 1.0 to meet it).

            Examples:
              sonora-bench positional
              sonora-bench positional --sources 32 --modes hrtf --seconds 2 --json
            """
    )

    @Flag(help: "Print the rows as a JSON array.")
    var json = false

    @Option(help: "Seconds of audio each engine renders per trial.")
    var seconds = 4.0

    @Option(help: "Trials per engine (the best counts).")
    var trials = 3

    @Option(parsing: .upToNextOption, help: "Source counts to measure (each 1…1024).")
    var sources: [Int] = [32, 128, 256]

    @Option(parsing: .upToNextOption, help: "Spatialization modes: panning, hrtf.")
    var modes: [String] = ["panning", "hrtf"]

    func validate() throws {
        guard seconds >= 0.05 && seconds <= 600 else { throw ValidationError("--seconds must be in 0.05…600") }
        guard trials >= 1 && trials <= 100 else { throw ValidationError("--trials must be in 1…100") }
        guard !sources.isEmpty, sources.allSatisfy({ (1...1024).contains($0) }) else {
            throw ValidationError("--sources must be counts in 1…1024")
        }
        guard !modes.isEmpty else { throw ValidationError("--modes takes panning and/or hrtf") }
        if let bad = modes.first(where: { PositionalBenchmark.Mode(rawValue: $0) == nil }) {
            throw ValidationError("--modes takes panning and/or hrtf; '\(bad)' is neither")
        }
    }

    func run() throws {
        let benchmark = PositionalBenchmark(seconds: seconds, trials: trials)
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
                rows.append(BenchmarkRow(
                    metric: "CPU per second of audio, \(count) moving sources, \(mode.rawValue)", unit: "s/s",
                    sonora: measured.sonora, anchor: "OpenAL Soft 1.19 loopback", anchorValue: measured.openALSoft, better: .lower
                ))
            }
        }
        if !json { notes.append("OpenAL Soft: linear resampler (its 1.19 default), output limiter off; both at 48 kHz float32 stereo") }
        BenchmarkReport.print(rows, json: json, notes: notes)
    }
}
