import ArgumentParser

/// The benchmarks, a program of their own so that `sonora` links only what it uses:
/// the anchors (JACK's ring, SpeexDSP, KissFFT, the C loops over libsndfile/libsoxr,
/// an LV2 plugin's run(), OpenAL Soft) are linked here and nowhere else.
@main
struct SonoraBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sonora-bench",
        abstract: "Sonora's benchmarks, each against the anchor it is measured by, in the same run.",
        discussion: """
            Each benchmark prints a table, or with --json an array of rows
            {"metric", "unit", "sonora", "anchor", "anchor_value", "better"} where
            anchor_value is the goal line. The process exits 0 whether or not goals
            are met; read the rows to check them.

            Examples:
              sonora-bench ring
              sonora-bench graph
              sonora-bench files
              sonora-bench io
              sonora-bench lv2
              sonora-bench voice
              sonora-bench queue
              sonora-bench sounds
              sonora-bench server
              sonora-bench positional
              sonora-bench refcounts
              sonora-bench soak --minutes 30
              sonora-bench ring --json --megabytes 64
            """,
        version: "0.1.0",
        subcommands: [RingBenchCommand.self, GraphBenchCommand.self, FileBenchCommand.self, IOBenchCommand.self, LV2BenchCommand.self, VoiceBenchCommand.self, QueueBenchCommand.self, SoundsBenchCommand.self, ServerBenchCommand.self, PositionalBenchCommand.self, JackClientsCommand.self, JackWakesCommand.self, StreamClientsCommand.self, SoakBenchCommand.self, NetworkBenchCommand.self, ScaleBenchCommand.self, RefcountBenchCommand.self]
    )
}
