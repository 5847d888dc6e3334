import CSoxr
import SonoraCore
#if canImport(Glibc)
import Glibc
#endif

/// Streaming sample-rate conversion of non-interleaved Float32 channels
/// (libsoxr, split-channel I/O). `process` is realtime-safe once the resampler
/// has run (libsoxr allocates while it warms up, so `init` runs it on silence).
public final class Resampler: @unchecked Sendable {
    /// libsoxr's quality recipes, quick to very high.
    public enum Quality: Int, CaseIterable, Sendable {
        case quick = 0, low, medium, high, veryHigh

        public var name: String { ["Quick", "Low", "Medium", "High", "Very High"][rawValue] }

        var recipe: UInt { self == .veryHigh ? UInt(SOXR_VHQ) : UInt(rawValue) }
    }

    public let inputRate: Double
    public let outputRate: Double
    public let channels: Int
    /// Output frames of delay through the filter, measured once when created.
    public private(set) var delay: Double = 0
    private let soxr: soxr_t
    private let inputPointers: UnsafeMutablePointer<UnsafeRawPointer?>
    private let outputPointers: UnsafeMutablePointer<UnsafeMutableRawPointer?>

    public init(from inputRate: Double, to outputRate: Double, channels: Int, quality: Quality = .high) throws(AudioError) {
        guard inputRate > 0, outputRate > 0, channels > 0, outputRate / inputRate <= 256, inputRate / outputRate <= 256 else {
            throw AudioError(.failedInitialization, "cannot resample \(channels) channels from \(inputRate) Hz to \(outputRate) Hz")
        }
        var ioSpec = soxr_io_spec(SOXR_FLOAT32_S, SOXR_FLOAT32_S)
        var qualitySpec = soxr_quality_spec(quality.recipe, 0)
        var error: soxr_error_t?
        guard let soxr = soxr_create(inputRate, outputRate, UInt32(channels), &error, &ioSpec, &qualitySpec, nil), error == nil else {
            throw AudioError(.failedInitialization, "libsoxr: \(error.map { String(cString: $0) } ?? "cannot create a resampler")")
        }
        self.soxr = soxr
        self.inputRate = inputRate
        self.outputRate = outputRate
        self.channels = channels
        inputPointers = .allocate(capacity: channels)
        outputPointers = .allocate(capacity: channels)
        delay = warmUp()
    }

    deinit {
        soxr_delete(soxr)
        inputPointers.deallocate()
        outputPointers.deallocate()
    }

    /// Resamples from `input` (its `frameCount` frames) into `output` (up to its
    /// `frameCount` frames); returns the frames consumed and produced. Input not
    /// consumed must be offered again. Realtime-safe.
    public func process(_ input: AudioBufferList, into output: AudioBufferList) -> (consumed: Int, produced: Int) {
        for channel in 0..<channels {
            inputPointers[channel] = UnsafeRawPointer(input.samples(channel))
            outputPointers[channel] = UnsafeMutableRawPointer(output.samples(channel))
        }
        var consumed = 0
        var produced = 0
        _ = soxr_process(
            soxr, UnsafeRawPointer(inputPointers), input.frameCount, &consumed, UnsafeMutableRawPointer(outputPointers),
            output.frameCount, &produced)
        return (consumed, produced)
    }

    /// Drains what the filter still holds at the end of a stream; returns frames produced (0 when empty).
    public func flush(into output: AudioBufferList) -> Int {
        for channel in 0..<channels { outputPointers[channel] = UnsafeMutableRawPointer(output.samples(channel)) }
        var produced = 0
        _ = soxr_process(soxr, nil, 0, nil, UnsafeMutableRawPointer(outputPointers), output.frameCount, &produced)
        return produced
    }

    /// Forgets the stream so far.
    public func reset() { soxr_clear(soxr) }

    /// Runs a block of silence through (libsoxr allocates on its first calls and
    /// reports its delay only once running), then clears.
    private func warmUp() -> Double {
        let frames = 4096
        let silence = UnsafeMutablePointer<Float>.allocate(capacity: frames * channels)
        silence.initialize(repeating: 0, count: frames * channels)
        let room = 4 * frames
        let sink = UnsafeMutablePointer<Float>.allocate(capacity: room * channels)
        defer {
            silence.deallocate()
            sink.deallocate()
        }
        for channel in 0..<channels {
            inputPointers[channel] = UnsafeRawPointer(silence + channel * frames)
            outputPointers[channel] = UnsafeMutableRawPointer(sink + channel * room)
        }
        var consumed = 0
        var produced = 0
        _ = soxr_process(soxr, UnsafeRawPointer(inputPointers), frames, &consumed, UnsafeMutableRawPointer(outputPointers), room, &produced)
        let measured = soxr_delay(soxr)
        soxr_clear(soxr)
        return measured
    }
}
