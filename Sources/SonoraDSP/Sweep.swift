#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An exponential (logarithmic) sine sweep, as used to measure impulse responses: the
/// frequency rises (or falls) by the same ratio every sample, from the start frequency at
/// frame 0 to the end frequency at frame `duration`, and holds the end frequency after.
///
/// Frequencies are clamped into 0.001 Hz…sampleRate/2; `sampleRate` must be positive.
public struct LogSweep: Sendable {
    public let startFrequency: Double
    public let endFrequency: Double
    public let duration: Int
    public let sampleRate: Double
    /// Phase of the next sample, in cycles, in [0, 1).
    @usableFromInline var phase: Double = 0
    /// Cycles per sample at the next sample.
    @usableFromInline var increment: Double
    /// Factor by which `increment` grows per sample during the sweep.
    @usableFromInline let ratio: Double
    @usableFromInline let endIncrement: Double
    /// Frames rendered so far.
    @usableFromInline var frame: Int = 0

    public init(from startFrequency: Double, to endFrequency: Double, duration frames: Int, sampleRate: Double) {
        let nyquist = sampleRate / 2
        func clamp(_ frequency: Double) -> Double {
            frequency > 0.001 ? min(frequency, nyquist) : 0.001
        }
        self.startFrequency = clamp(startFrequency)
        self.endFrequency = clamp(endFrequency)
        self.duration = max(frames, 0)
        self.sampleRate = sampleRate
        endIncrement = self.endFrequency / sampleRate
        if duration > 0 {
            ratio = exp(log(self.endFrequency / self.startFrequency) / Double(duration))
            increment = self.startFrequency / sampleRate
        } else {
            ratio = 1
            increment = endIncrement
        }
    }

    /// The instantaneous frequency of the next sample, in hertz.
    public var frequency: Double { increment * sampleRate }

    /// Whether the sweep has reached the end frequency.
    public var isFinished: Bool { frame >= duration }

    /// Writes the next `count` samples of `amplitude · sin(phase)`, replacing what was there.
    @inlinable
    public mutating func render(into samples: UnsafeMutablePointer<Float>, count: Int, amplitude: Float) {
        let gain = Double(amplitude)
        var phase = self.phase
        var increment = self.increment
        var frame = self.frame
        var index = 0
        while index < count {
            samples[index] = Float(gain * sin(2 * Double.pi * phase))
            phase += increment
            if phase >= 1 { phase -= 1 }
            frame &+= 1
            // Growing by a ratio keeps the sweep exponential; the final value is assigned,
            // not multiplied, so the held frequency is exact.
            increment = frame < duration ? increment * ratio : endIncrement
            index &+= 1
        }
        self.phase = phase
        self.increment = increment
        self.frame = frame
    }

    /// Starts the sweep again from its start frequency.
    public mutating func reset() {
        phase = 0
        frame = 0
        increment = duration > 0 ? startFrequency / sampleRate : endIncrement
    }
}
