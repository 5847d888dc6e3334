/// Finds where a known signal occurs in a recording: the peak of their cross-correlation
/// (computed through the FFT), refined to a fraction of a sample by a parabola through
/// the peak and its neighbours, with its polarity and how clearly it stands out.
public struct DelayEstimate: Hashable, Sendable, Codable {
    /// Delay of the signal in the recording, in frames (fractional).
    public var frames: Double
    /// True when the recording holds the signal inverted.
    public var isInverted: Bool
    /// Peak over the largest correlation value away from the peak (≥ ~4: clear).
    public var clarity: Double
    /// Gain of the found signal relative to the one sent.
    public var gain: Double
}

public enum DelayEstimator {
    /// Looks for `signal` in `recording` at delays 0…`maximumDelay`. Returns nil when the
    /// recording holds no clear copy of the signal (silence, noise, or a delay out of range).
    public static func estimate(signal: [Float], in recording: [Float], maximumDelay: Int, minimumClarity: Double = 4) -> DelayEstimate? {
        guard !signal.isEmpty, maximumDelay >= 0 else { return nil }
        let span = min(recording.count, maximumDelay + signal.count)
        guard span >= signal.count else { return nil }
        var size = 2
        while size < span + signal.count { size *= 2 }
        let fft = FFT(size: size)
        var recordedReal = [Float](repeating: 0, count: size)
        var recordedImaginary = [Float](repeating: 0, count: size)
        for index in 0..<span { recordedReal[index] = recording[index] }
        var signalReal = [Float](repeating: 0, count: size)
        var signalImaginary = [Float](repeating: 0, count: size)
        for index in signal.indices { signalReal[index] = signal[index] }
        fft.forward(real: &recordedReal, imaginary: &recordedImaginary)
        fft.forward(real: &signalReal, imaginary: &signalImaginary)
        // Cross-correlation: R · conj(S).
        for index in 0..<size {
            let re = recordedReal[index] * signalReal[index] + recordedImaginary[index] * signalImaginary[index]
            let im = recordedImaginary[index] * signalReal[index] - recordedReal[index] * signalImaginary[index]
            recordedReal[index] = re
            recordedImaginary[index] = im
        }
        fft.inverse(real: &recordedReal, imaginary: &recordedImaginary)
        let lags = min(maximumDelay, span - 1)
        var peak = 0
        for lag in 0...lags where abs(recordedReal[lag]) > abs(recordedReal[peak]) { peak = lag }
        let peakValue = recordedReal[peak]
        guard peakValue != 0 else { return nil }
        var runnerUp: Float = 0
        for lag in 0...lags where abs(lag - peak) > 2 { runnerUp = max(runnerUp, abs(recordedReal[lag])) }
        let clarity = runnerUp > 0 ? Double(abs(peakValue) / runnerUp) : .infinity
        guard clarity >= minimumClarity else { return nil }
        var offset = 0.0
        if peak > 0 && peak < lags {
            let before = Double(recordedReal[peak - 1]), at = Double(peakValue), after = Double(recordedReal[peak + 1])
            let denominator = before - 2 * at + after
            if denominator != 0 { offset = 0.5 * (before - after) / denominator }
            if abs(offset) > 0.5 { offset = 0 }
        }
        let energy = signal.reduce(0.0) { $0 + Double($1 * $1) }
        return DelayEstimate(frames: Double(peak) + offset, isInverted: peakValue < 0, clarity: clarity, gain: Double(abs(peakValue)) / energy)
    }
}
