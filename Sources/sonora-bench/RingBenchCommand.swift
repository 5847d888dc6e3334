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
            machine's changing load affects both sides of a ratio alike. A side that finds
            its ring full or empty waits --back-off CPU pauses (16) before it looks again,
            every ring alike; --show-trials also prints how often each side had to wait.

            Examples:
              sonora-bench ring
              sonora-bench ring --json --megabytes 64 --trials 3
              sonora-bench ring --chunks 32 --back-off 1 --show-trials
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

    @Option(help: "CPU pauses a waiting side makes between two looks at its ring, every ring alike (1 was the method before 2026-11-28 late).")
    var backOff: Int32 = 16

    @Option(help: "Chunk sizes in frames, comma-separated (default 32,256,4096).")
    var chunks: String = "32,256,4096"

    func validate() throws {
        guard ringFrames >= 8192, ringFrames <= 1 << 22, ringFrames & (ringFrames - 1) == 0 else {
            throw ValidationError("--ring-frames must be a power of two in 8192…4194304 (at least two 4096-frame chunks)")
        }
        guard megabytes > 0, megabytes <= 16384 else { throw ValidationError("--megabytes must be in 1…16384") }
        guard trials > 0, trials <= 100 else { throw ValidationError("--trials must be in 1…100") }
        guard backOff >= 0, backOff <= 4096 else { throw ValidationError("--back-off must be in 0…4096") }
        guard let sizes = chunkSizes, !sizes.isEmpty, sizes.allSatisfy({ $0 > 0 && $0 <= ringFrames / 2 }) else {
            throw ValidationError("--chunks must list frame counts in 1…ring-frames/2, e.g. 32,256,4096")
        }
    }

    func run() throws {
        var benchmark = RingBenchmark(
            bytesPerTrial: megabytes << 20, trials: trials, showTrials: showTrials && !json, ringFrames: ringFrames)
        benchmark.pauses = backOff
        benchmark.chunkFrames = chunkSizes ?? benchmark.chunkFrames
        let (rows, notes) = try benchmark.run()
        BenchmarkReport.print(rows, json: json, notes: notes)
    }

    private var chunkSizes: [Int]? {
        let sizes = chunks.split(separator: ",").map { Int(String($0)) }
        return sizes.contains(nil) ? nil : sizes.compactMap { $0 }
    }
}
