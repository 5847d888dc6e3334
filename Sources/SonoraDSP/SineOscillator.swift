#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A sine wave generator.
///
/// The phase is kept in cycles as a Double and wrapped into [0, 1) every sample, so it
/// neither loses precision nor drifts in frequency over hours of output.
public struct SineOscillator: Sendable {
    public let sampleRate: Double
    /// In hertz; may change between renders without a phase jump. Negative runs backwards.
    public var frequency: Double {
        didSet { increment = Self.increment(frequency: frequency, sampleRate: sampleRate) }
    }
    /// Phase of the next sample, in cycles, in [0, 1).
    @usableFromInline var phase: Double
    /// Cycles per sample, wrapped into [0, 1), so `phase + increment` < 2 needs one subtraction.
    @usableFromInline var increment: Double

    /// `phase` is the starting phase in radians (0 starts at a rising zero crossing).
    public init(frequency: Double, sampleRate: Double, phase: Double = 0) {
        self.sampleRate = sampleRate
        self.frequency = frequency
        let cycles = phase / (2 * Double.pi)
        self.phase = Self.wrap(cycles)
        self.increment = Self.increment(frequency: frequency, sampleRate: sampleRate)
    }

    /// Writes `count` samples of `amplitude · sin(phase)`, replacing what was there.
    @inlinable
    public mutating func render(into samples: UnsafeMutablePointer<Float>, count: Int, amplitude: Float) {
        var phase = self.phase
        let increment = self.increment
        let gain = Double(amplitude)
        var index = 0
        while index < count {
            samples[index] = Float(gain * sin(2 * Double.pi * phase))
            phase += increment
            if phase >= 1 { phase -= 1 }
            index &+= 1
        }
        self.phase = phase
    }

    /// Restarts at `phase` radians.
    public mutating func reset(phase: Double = 0) {
        self.phase = Self.wrap(phase / (2 * Double.pi))
    }

    static func increment(frequency: Double, sampleRate: Double) -> Double {
        wrap(frequency / sampleRate)
    }

    /// `cycles` modulo 1, in [0, 1); 0 for NaN or infinity, which would otherwise stick.
    static func wrap(_ cycles: Double) -> Double {
        guard cycles.isFinite else { return 0 }
        let wrapped = cycles - cycles.rounded(.down)
        return wrapped < 1 ? wrapped : 0
    }
}
