import ArgumentParser

struct FileBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "files",
        abstract: "File decode/encode and sample-rate conversion through Sonora, against libsndfile and libsoxr from C.",
        discussion: """
            Decodes and encodes WAV 16-bit, FLAC and IMA4 through AudioFile, and resamples
            44.1 → 48 kHz through Resampler, beside the same work done by calling libsndfile
            and libsoxr directly from C, in one run. Goal: Sonora's layer within 5 % of the
            bare library (ratio ≤ 1.05, lower is better).

            Examples:
              sonora-bench files
              sonora-bench files --json --seconds 5
            """
    )

    @Flag(help: "Print the rows as a JSON array.")
    var json = false

    @Option(help: "Seconds of stereo 48 kHz audio per trial.")
    var seconds = 10.0

    @Option(help: "Trials; the median ratio is reported.")
    var trials = 5

    func validate() throws {
        guard seconds > 0, seconds <= 600 else { throw ValidationError("--seconds must be in (0, 600]") }
        guard trials > 0, trials <= 100 else { throw ValidationError("--trials must be in 1…100") }
    }

    func run() throws {
        let (rows, notes) = try FileBenchmark(seconds: seconds, trials: trials).run()
        BenchmarkReport.print(rows, json: json, notes: notes)
    }
}
