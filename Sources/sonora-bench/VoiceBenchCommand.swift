import ArgumentParser

struct VoiceBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "voice",
        abstract: "Echo cancellation: Sonora's canceller beside SpeexDSP's on one generated scenario.",
        discussion: """
            20 s at 16 kHz: a speech-like far end in a room of RT60 250 ms behind a 60 ms
            delay, −65 dBFS noise, a near-end talker from 10 s (as loud as the echo).
            Both cancellers get the same 10 ms frames: Sonora's defaults, and SpeexDSP's
            MDF (2048 taps) with its residual echo suppressor. Rows: far-end single-talk
            ERLE after 4 s, double-talk near-end gain and SDR (goal lines: SpeexDSP's
            values), CPU seconds per second of audio (goal 0.02), and the canceller's real
            FFT at its two sizes (256 at 16 kHz, 512 at 48 kHz) against KissFFT's real
            transform (a forward and an inverse per pair, best of 5). The full picture —
            seven scenarios against four anchors — is aec-eval's, in BENCHMARKS.md.

            Examples:
              sonora-bench voice
              sonora-bench voice --json
            """
    )

    @Flag(help: "Print the rows as a JSON array.")
    var json = false

    func run() throws {
        let scenario = VoiceBenchmark.scenario()
        let sonora = try VoiceBenchmark.measure(scenario) { try VoiceBenchmark.runSonora($0) }
        let speex = VoiceBenchmark.measure(scenario) { VoiceBenchmark.runSpeex($0) }
        let rows = [
            BenchmarkRow(metric: "far-end single-talk ERLE", unit: "dB", sonora: sonora.erle, anchor: "SpeexDSP MDF+RES", anchorValue: speex.erle, better: .higher),
            BenchmarkRow(metric: "double-talk near-end gain", unit: "dB", sonora: sonora.nearGain, anchor: "SpeexDSP MDF+RES", anchorValue: speex.nearGain, better: .higher),
            BenchmarkRow(metric: "double-talk near-end SDR", unit: "dB", sonora: sonora.nearSDR, anchor: "SpeexDSP MDF+RES", anchorValue: speex.nearSDR, better: .higher),
            BenchmarkRow(metric: "CPU per second of audio", unit: "s/s", sonora: sonora.cpuPerSecond, anchor: "issue 8 goal", anchorValue: 0.02, better: .lower),
        ] + [256, 512].map { size in
            let fft = FFTBenchmark.measure(size: size)
            return BenchmarkRow(metric: "real FFT \(size) forward+inverse", unit: "ns", sonora: fft.sonora, anchor: "KissFFT", anchorValue: fft.kiss, better: .lower)
        }
        BenchmarkReport.print(rows, json: json, notes: json ? [] : [String(format: "SpeexDSP MDF+RES CPU: %.4f s/s", speex.cpuPerSecond)])
    }
}
