import ArgumentParser
import Foundation
import SonoraCore
import SonoraVoice

struct VoiceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "voice",
        abstract: "Voice processing: echo cancellation and suppression for two-way voice.",
        discussion: """
            Examples:
              sonora voice process --rate 16000 mic.raw ref.raw out.raw
              sonora voice process --rate 48000 --json mic.wav ref.wav out.wav
            """,
        subcommands: [VoiceProcessCommand.self]
    )
}

struct VoiceProcessCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "process",
        abstract: "Cancel the loudspeaker's echo in a microphone recording.",
        discussion: """
            MIC and REF are mono signals of the same rate: headerless little-endian
            float32 in [-1, 1] (--format f32, the default) or int16 (--format s16), or WAV
            files (by the .wav extension). REF[n] is what the loudspeaker played when
            MIC[n] was captured; the canceller finds the echo's delay itself (up to
            --max-delay). OUT gets MIC's length, time-aligned with MIC (the canceller's
            fixed latency is compensated): a REF shorter than MIC is padded with silence,
            a longer one is cut to MIC's length. A WAV OUT has MIC's sample format when MIC
            is a WAV (16-bit in, 16-bit out), else --format's. Processing is causal, in
            10 ms frames, exactly as on a live device. OUT is never one of the inputs, and
            an existing OUT is replaced only with --overwrite.

            Examples:
              sonora voice process --rate 16000 mic.raw ref.raw out.raw
              sonora voice process --rate 16000 --format s16 mic.s16 ref.s16 out.s16
              sonora voice process --rate 48000 --json mic.wav ref.wav out.wav
              sonora voice process --rate 16000 --no-noise-suppression --strength 0.3 mic.raw ref.raw out.raw
            """
    )

    @Option(help: "Sample rate of all three files, Hz (8000…96000).")
    var rate: Double

    @Option(help: "Raw sample format: f32 (float32 LE, the default) or s16 (int16 LE); a WAV OUT uses it when MIC is not a WAV, or when given.")
    var format: String?

    @Flag(help: "Replace OUT if it exists (never when it is MIC or REF).")
    var overwrite = false

    @Option(help: "Residual echo suppression strength, 0 (linear filter only) … 1.")
    var strength: Float = 0.5

    @Flag(inversion: .prefixedNo, help: "Stationary noise suppression.")
    var noiseSuppression = true

    @Flag(help: "Automatic gain control of the near-end talker.")
    var agc = false

    @Flag(help: "Fill suppressed bins with comfort noise.")
    var comfortNoise = false

    @Flag(inversion: .prefixedNo, help: "Clock drift compensation.")
    var driftCompensation = true

    @Option(help: "Echo tail the linear filter models, seconds.")
    var filterLength: Double = 0.32

    @Option(help: "Largest bulk delay searched, seconds.")
    var maxDelay: Double = 0.6

    @Flag(help: "Pass the microphone through untouched (latency kept).")
    var bypass = false

    @Flag(help: "Print the canceller's metrics as JSON.")
    var json = false

    @Argument(help: "Microphone signal.")
    var mic: String

    @Argument(help: "Reference (loudspeaker) signal.")
    var ref: String

    @Argument(help: "Output file.")
    var out: String

    struct Result: Codable {
        var frames: Int
        var sampleRate: Double
        var latencyFrames: Int
        var blockFrames: Int
        var metrics: EchoCancellerMetrics
        var meanERLE: Double?
        var cpuSeconds: Double
    }

    func run() throws {
        guard let sampleFormat = VoiceSignalFile.SampleFormat(rawValue: format ?? "f32") else {
            throw CLIError("--format \(format ?? ""): use f32 or s16")
        }
        var configuration = EchoCancellerConfiguration(sampleRate: rate)
        configuration.suppressionStrength = strength
        configuration.noiseSuppression = noiseSuppression
        configuration.automaticGainControl = agc
        configuration.comfortNoise = comfortNoise
        configuration.driftCompensation = driftCompensation
        configuration.filterLength = filterLength
        configuration.maximumDelay = maxDelay
        let canceller: EchoCanceller
        do {
            canceller = try EchoCanceller(configuration: configuration)
        } catch {
            throw CLIError("\(error)")
        }
        canceller.isBypassed = bypass
        let (micSamples, micSample) = try VoiceSignalFile.readWithSampleType(mic, format: sampleFormat, rate: rate)
        var refSamples = try VoiceSignalFile.read(ref, format: sampleFormat, rate: rate)
        guard !micSamples.isEmpty else { throw CLIError("\(mic): no samples") }
        try OutputFile.check(out, inputs: [mic, ref], overwrite: overwrite)
        // MIC sets the length: REF padded with silence or cut (recordings of one session
        // differ by a few samples).
        if refSamples.count < micSamples.count {
            refSamples += [Float](repeating: 0, count: micSamples.count - refSamples.count)
        } else if refSamples.count > micSamples.count {
            refSamples.removeLast(refSamples.count - micSamples.count)
        }
        let wavSample: PCMSample = format == nil ? (micSample ?? .float32) : (sampleFormat == .f32 ? .float32 : .int16)
        let start = clock()
        let output = Self.cancel(micSamples, refSamples, with: canceller)
        let cpu = Double(clock() - start) / Double(CLOCKS_PER_SEC)
        try VoiceSignalFile.write(output, to: out, format: sampleFormat, wavSample: wavSample, rate: rate)
        if json {
            try printJSON(Result(
                frames: micSamples.count, sampleRate: rate, latencyFrames: canceller.latencyFrames,
                blockFrames: canceller.blockFrames, metrics: canceller.metrics, meanERLE: nil, cpuSeconds: cpu))
        }
    }

    /// Runs the canceller over whole signals in 10 ms frames, compensating its latency so
    /// the output lines up with the microphone.
    static func cancel(_ mic: [Float], _ ref: [Float], with canceller: EchoCanceller) -> [Float] {
        let latency = canceller.latencyFrames
        let frame = max(1, Int(canceller.configuration.sampleRate / 100))
        let total = mic.count + latency
        var output = [Float](repeating: 0, count: total)
        var silence = [Float](repeating: 0, count: frame)
        mic.withUnsafeBufferPointer { micBuffer in
            ref.withUnsafeBufferPointer { refBuffer in
                output.withUnsafeMutableBufferPointer { outBuffer in
                    silence.withUnsafeMutableBufferPointer { zeros in
                        var position = 0
                        while position < total {
                            let count = min(frame, total - position)
                            let available = max(0, min(count, mic.count - position))
                            if available == count {
                                canceller.process(microphone: micBuffer.baseAddress! + position, reference: refBuffer.baseAddress! + position,
                                                  output: outBuffer.baseAddress! + position, frames: count)
                            } else {
                                // The tail: feed silence to flush the latency.
                                var micTail = [Float](repeating: 0, count: count), refTail = [Float](repeating: 0, count: count)
                                for index in 0..<available {
                                    micTail[index] = micBuffer[position + index]
                                    refTail[index] = refBuffer[position + index]
                                }
                                _ = zeros
                                canceller.process(microphone: micTail, reference: refTail, output: outBuffer.baseAddress! + position, frames: count)
                            }
                            position += count
                        }
                    }
                }
            }
        }
        return Array(output[latency..<total])
    }
}
