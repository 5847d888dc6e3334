import ArgumentParser

struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a benchmark against the anchor it is measured by, in the same run.",
        discussion: """
            Each benchmark prints a table, or with --json an array of rows
            {"metric", "unit", "sonora", "anchor", "anchor_value", "better"} where
            anchor_value is the goal line. The process exits 0 whether or not goals
            are met; read the rows to check them.

            Examples:
              sonora bench ring
              sonora bench graph
              sonora bench files
              sonora bench io
              sonora bench lv2
              sonora bench voice
              sonora bench ring --json --megabytes 64
            """,
        subcommands: [RingBenchCommand.self, GraphBenchCommand.self, FileBenchCommand.self, IOBenchCommand.self, LV2BenchCommand.self, VoiceBenchCommand.self]
    )
}
