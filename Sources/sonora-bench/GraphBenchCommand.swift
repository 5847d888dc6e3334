import ArgumentParser

extension GraphBenchmark.Case: ExpressibleByArgument {}

struct GraphBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "graph",
        abstract: "What the audio-unit graph costs on top of the DSP it runs.",
        discussion: """
            Renders a chain of 64 gain units and a mixer with 64 stereo inputs in
            128-frame cycles through an AudioGraph (its flat render plan), and the same
            work as hand-written loops over the same kernels, in one run; then a chain
            of 1,024 gain units the same way, and the time an update() of one node of
            that graph takes to be live on a thread rendering it. Goals (issue 22):
            chain ≤ 1.10 × loop, mixer ≤ 1.05 × loop in every trial, ≤ 10 ns of graph
            work per node, per-node cost at 1,024 nodes as at 64, update ≤ 1 ms.

            Examples:
              sonora-bench graph
              sonora-bench graph --json --cycles 5000
            """
    )

    @Flag(help: "Print the rows as a JSON array.")
    var json = false

    @Option(help: "Cycles per trial.")
    var cycles = 20000

    @Option(help: "Trials; the median is reported.")
    var trials = 7

    @Flag(help: "Render every plan step by the full step, never the lean one (the reference the lean step is measured against).")
    var fullSteps = false

    @Option(help: ArgumentHelp(
        "Render one case only, for a profiler (perf stat / perf record): chain-graph, chain-loop, mixer-graph or mixer-loop; prints its time per cycle.",
        valueName: "case"))
    var only: GraphBenchmark.Case?

    @Option(help: "Gain units of the chain for --only (default 64).")
    var units = 64

    @Option(help: ArgumentHelp(
        "Mixer trials in this many alternating graph/loop blocks; a trial's ratio is the median of its block pairs' (1: graph then loop back to back, whole). Default 80, at most --cycles.",
        valueName: "n"))
    var blocks: Int?

    func validate() throws {
        guard units > 0, units <= 100_000 else { throw ValidationError("--units must be in 1…100000") }
        guard cycles > 0, cycles <= 10_000_000 else { throw ValidationError("--cycles must be in 1…10000000") }
        guard trials > 0, trials <= 100 else { throw ValidationError("--trials must be in 1…100") }
        if let blocks, !(1...cycles).contains(blocks) { throw ValidationError("--blocks must be in 1…cycles") }
    }

    func run() throws {
        if let only {
            let perCycle = try GraphBenchmark(cycles: cycles, trials: 1, fullSteps: fullSteps).run(only, units: units)
            if json {
                // One case has no anchor of its own: a plain result object, not a goal row.
                print("{\"case\": \"\(only.rawValue)\", \"units\": \(units), \"cycles\": \(cycles), \"microseconds_per_cycle\": \(perCycle)}")
            } else {
                print("\(only.rawValue): \((perCycle * 1000).rounded() / 1000) µs per cycle (\(cycles) cycles)")
            }
            return
        }
        let (rows, notes) = try GraphBenchmark(cycles: cycles, trials: trials, fullSteps: fullSteps, mixerBlocks: blocks ?? min(80, cycles)).run()
        BenchmarkReport.print(rows, json: json, notes: notes)
    }
}
