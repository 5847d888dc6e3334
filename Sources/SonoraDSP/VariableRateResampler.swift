import CSoxr
import SonoraCore

/// Streaming varispeed of interleaved Float32 frames (libsoxr's variable-rate mode): the
/// ratio of input to output frames may change between calls, and the signal stays
/// continuous across a change (pitch follows the ratio, as with tape).
///
/// Not for a realtime thread: libsoxr allocates while it warms up and on `reset`.
/// Measured here (libsoxr 0.1.3, HQ): after `drain`, the output of N input frames at a
/// constant ratio r is N / r frames (±1); the output lags the input by a constant of
/// about 1.6–1.9 input frames (the variable-rate filter's interpolation, not compensated).
/// libsoxr computes output only when it is taken, so a new ratio applies at the output
/// cursor (measured: it takes hold about one output before it, a fixed offset, not a drift).
public final class VariableRateResampler: @unchecked Sendable {
    public let channels: Int
    /// The largest input-per-output ratio `setRatio` accepts (its smallest is the inverse).
    public let maximumRatio: Double
    public private(set) var ratio: Double = 1
    private let soxr: soxr_t

    /// A resampler for `channels` interleaved channels, ratios 1/`maximumRatio` … `maximumRatio`.
    public init(channels: Int, maximumRatio: Double = 2) throws(AudioError) {
        guard channels > 0, maximumRatio >= 1, maximumRatio <= 64 else {
            throw AudioError(.failedInitialization, "cannot vary the rate of \(channels) channels up to \(maximumRatio)×")
        }
        var ioSpec = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I)
        var qualitySpec = soxr_quality_spec(UInt(SOXR_HQ), UInt(SOXR_VR))
        var error: soxr_error_t?
        // Variable-rate: the "rates" given here are the largest input-per-output ratio.
        guard let soxr = soxr_create(maximumRatio, 1, UInt32(channels), &error, &ioSpec, &qualitySpec, nil), error == nil else {
            throw AudioError(.failedInitialization, "libsoxr (variable rate): \(error.map { String(cString: $0) } ?? "cannot create a resampler")")
        }
        self.soxr = soxr
        self.channels = channels
        self.maximumRatio = maximumRatio
        _ = soxr_set_io_ratio(soxr, 1, 0)
    }

    deinit { soxr_delete(soxr) }

    /// Input frames per output frame from the next output taken on (2: twice as fast, an
    /// octave up). The change is immediate (no slew).
    public func setRatio(_ newRatio: Double) throws(AudioError) {
        guard newRatio >= 1 / maximumRatio - 1e-9, newRatio <= maximumRatio + 1e-9 else {
            throw AudioError(.invalidParameter, "ratio \(newRatio) is outside \(1 / maximumRatio)…\(maximumRatio)")
        }
        guard newRatio != ratio else { return }
        if let error = soxr_set_io_ratio(soxr, newRatio, 0) {
            throw AudioError(.invalidParameter, "libsoxr: \(String(cString: error))")
        }
        ratio = newRatio
    }

    /// Resamples up to `frames` frames of `input` into `output` (room for `capacity` frames);
    /// returns the frames consumed and produced. Input not consumed must be offered again.
    public func process(
        _ input: UnsafePointer<Float>, frames: Int, into output: UnsafeMutablePointer<Float>, capacity: Int
    ) -> (consumed: Int, produced: Int) {
        var consumed = 0
        var produced = 0
        _ = soxr_process(soxr, UnsafeRawPointer(input), frames, &consumed, UnsafeMutableRawPointer(output), capacity, &produced)
        return (consumed, produced)
    }

    /// Drains what the filter holds at the end of the input; returns frames produced (0 when empty).
    public func drain(into output: UnsafeMutablePointer<Float>, capacity: Int) -> Int {
        var produced = 0
        _ = soxr_process(soxr, nil, 0, nil, UnsafeMutableRawPointer(output), capacity, &produced)
        return produced
    }

    /// Forgets the stream so far (a fresh signal, ratio 1).
    public func reset() {
        soxr_clear(soxr)
        _ = soxr_set_io_ratio(soxr, 1, 0)
        ratio = 1
    }
}
