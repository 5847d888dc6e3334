import ArgumentParser

struct RingBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ring",
        abstract: "Ring-buffer throughput across two threads, against JACK's ring and memcpy.",
        discussion: """
            Moves stereo Float32 audio between two threads in 32-, 256- and 4096-frame
            chunks through Sonora's SampleRing (non-interleaved, one span per channel),
            through Sonora's ByteRing and JACK's jack_ringbuffer_t (both carrying the
            interleaved frames), and copies the same bytes with memcpy on one thread.
            Goals: Sonora's rings at or above JACK's at every chunk size; at 4096 frames
            the sample ring at least half of memcpy. A last row tells whether the
            mirrored (double-mapped) byte ring pays; rows "one thread write + read" give
            the per-call cost of the sample ring beside JACK's ring without the hand-over
            between cores (fastest trial). Every contender runs in each trial,
            back to back, and rows report the median of the per-trial ratios, so the
            machine's changing load affects both sides of a ratio alike.

            Examples:
              sonora-bench ring
              sonora-bench ring --json --megabytes 64 --trials 3
            """
    )

    @Flag(help: "Print the rows as a JSON array.")
    var json = false

    @Option(help: "Megabytes (MiB) moved per trial.")
    var megabytes = 32

    @Option(help: "Trials; goals are judged on the median of per-trial ratios.")
    var trials = 21

    @Option(help: "Ring capacity in stereo frames (a power of two; 16384 frames = 128 KiB).")
    var ringFrames = 16384

    @Flag(help: "Also print each trial's throughput (to see the machine's noise).")
    var showTrials = false

    func validate() throws {
        guard ringFrames >= 8192, ringFrames <= 1 << 22, ringFrames & (ringFrames - 1) == 0 else {
            throw ValidationError("--ring-frames must be a power of two in 8192…4194304 (at least two 4096-frame chunks)")
        }
        guard megabytes > 0, megabytes <= 16384 else { throw ValidationError("--megabytes must be in 1…16384") }
        guard trials > 0, trials <= 100 else { throw ValidationError("--trials must be in 1…100") }
    }

    func run() throws {
        let benchmark = RingBenchmark(
            bytesPerTrial: megabytes << 20, trials: trials, showTrials: showTrials && !json, ringFrames: ringFrames)
        let (rows, notes) = try benchmark.run()
        BenchmarkReport.print(rows, json: json, notes: notes)
    }
}
