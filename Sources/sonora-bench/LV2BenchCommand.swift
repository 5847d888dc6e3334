import ArgumentParser

struct LV2BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lv2",
        abstract: "What Sonora's LV2 host costs on top of the plugins' own run().",
        discussion: """
            For seven installed plugins (mda Delay, swh gverb, zam ZamCompX2, dragonfly
            plate, lsp compressor_stereo, x42-eq, and eg-amp, the lightest), renders 60 s of stereo at 48 kHz in
            512-frame blocks through an LV2Unit, and the same through a bare C loop
            calling the same plugin's run() on the same buffers (copy in, run, copy
            out), in one run. Goals: host overhead under 3 %, and the host's own work
            (LV2Unit's time less the C loop's, per render) at most 30 ns (lower is
            better). lilv's
            lv2apply on the same audio (a WAV file, one frame per run(), file I/O
            included) is a second anchor, for the plugins it can host (those that need
            no feature).

            Each trial renders the audio as many times over as it takes for at least
            --min-trial-cpu seconds of thread CPU per side (host and C loop still take
            turns every 96 blocks), so light plugins' trials are long enough not to be
            decided by one interruption; both sides are timed in thread CPU time.

            Examples:
              sonora-bench lv2
              sonora-bench lv2 --json --seconds 10 --trials 3
              sonora-bench lv2 --plugin http://lv2plug.in/plugins/eg-amp --no-lv2apply
            """
    )

    @Flag(help: "Print the rows as a JSON array.")
    var json = false

    @Option(help: "Seconds of audio per render.")
    var seconds = 60

    @Option(help: "Trials; the median ratio is reported.")
    var trials = 5

    @Option(help: "Thread CPU seconds each side's trial takes at least (the audio is rendered again until it does; 0: once).")
    var minTrialCpu = 0.2

    @Flag(help: "Skip the lv2apply anchor (it runs one frame per run() and takes longest).")
    var noLv2apply = false

    @Option(name: .customLong("plugin"), help: "Benchmark this plugin URI instead of the seven (repeatable).")
    var plugins: [String] = []

    @Option(help: "What is timed against the C loop: host (the benchmark); host-copy-first (the host, the harness copying its input before render instead of in the pull); or a check of the harness with Sonora's host left out: loop (a second C loop, blocks placed like the host's buffers), loop-in-host-buffers (a second C loop in the host's buffers), swift-loop (the Swift harness's copies around a direct run()).")
    var versus: String = "host"

    @Option(help: "With --versus swift-loop: 8-byte stores the loop makes per block (a probe of what a host's own stores cost).")
    var probeStores = 0

    @Option(help: "With --probe-stores: where the stores go, out (after the copy out) or run (between the copy in and run()).")
    var probeAt = "out"

    @Flag(help: "With --versus swift-loop: read MXCSR before run() and write it back after, as the host does.")
    var probeMxcsr = false

    func validate() throws {
        guard probeAt == "out" || probeAt == "run" else { throw ValidationError("--probe-at must be out or run") }
        guard LV2Benchmark.Versus(rawValue: versus) != nil else {
            throw ValidationError("--versus must be one of \(LV2Benchmark.Versus.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard (0...512).contains(probeStores) else { throw ValidationError("--probe-stores must be in 0…512") }
        if (probeStores > 0 || probeMxcsr) && versus != LV2Benchmark.Versus.swiftLoop.rawValue {
            throw ValidationError("--probe-stores and --probe-mxcsr probe the Swift loop: give --versus swift-loop too")
        }
        guard (1...600).contains(seconds) else { throw ValidationError("--seconds must be in 1…600") }
        guard (1...50).contains(trials) else { throw ValidationError("--trials must be in 1…50") }
        guard minTrialCpu >= 0 && minTrialCpu <= 10 else { throw ValidationError("--min-trial-cpu must be in 0…10") }
    }

    func run() throws {
        var benchmark = LV2Benchmark(seconds: seconds, trials: trials, withLV2Apply: !noLv2apply, minimumTrialCPU: minTrialCpu)
        benchmark.versus = LV2Benchmark.Versus(rawValue: versus) ?? .host
        benchmark.probeStores = probeStores
        benchmark.probeAt = probeAt
        benchmark.probeMXCSR = probeMxcsr
        if !plugins.isEmpty { benchmark.plugins = plugins.map { (name: $0, uri: $0) } }
        let (rows, notes) = try benchmark.run()
        BenchmarkReport.print(rows, json: json, notes: notes)
    }
}
