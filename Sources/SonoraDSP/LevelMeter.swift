#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Average and peak level of a signal, as Core Audio's meters report them.
///
/// Per measured block of n samples:
///
///     meanSquare += (blockMeanSquare − meanSquare) · (1 − e^(−n / (averagingTime · sampleRate)))
///     peak = max(blockPeak, peak · e^(−n / (peakDecayTime · sampleRate)))
///
/// so both are independent of how the signal is split into blocks only up to that one-pole
/// approximation. An averaging or decay time of 0 reports the last block alone.
public struct LevelMeter: Sendable {
    public var sampleRate: Double
    /// Seconds over which the mean square is smoothed (the one-pole's time constant).
    public var averagingTime: Double
    /// Seconds for the held peak to fall by a factor of e.
    public var peakDecayTime: Double
    @usableFromInline var smoothedMeanSquare: Double = 0
    @usableFromInline var heldPeak: Double = 0
    // The smoothing factors for the last block length: blocks are usually all one size,
    // and two exp() per block per meter add up in a 64-input mixer.
    @usableFromInline var cachedCount = -1
    @usableFromInline var cachedAveragingWeight: Double = 0
    @usableFromInline var cachedDecay: Double = 0

    public init(sampleRate: Double, averagingTime: Double = 0.3, peakDecayTime: Double = 1.5) {
        self.sampleRate = sampleRate
        self.averagingTime = averagingTime
        self.peakDecayTime = peakDecayTime
    }

    /// The smoothed mean square (linear power).
    @inlinable
    public var meanSquare: Double { smoothedMeanSquare }

    /// The held peak absolute sample value (linear).
    @inlinable
    public var peak: Double { heldPeak }

    /// 10·log10(mean square), floored at −120 dB. 0 dB is a full-scale square wave; a
    /// full-scale sine reads −3.01 dB.
    @inlinable
    public var averagePowerDB: Float { Float(Decibels.fromPower(meanSquare)) }

    /// 20·log10(peak), floored at −120 dB.
    @inlinable
    public var peakPowerDB: Float { Float(Decibels.fromLinear(peak)) }

    /// Adds a block of `count` samples to the measurement.
    @inlinable
    public mutating func measure(_ samples: UnsafePointer<Float>, count: Int) {
        guard count > 0 else { return }
        // Eight running sums and maxima, combined at the end, so the loop vectorizes.
        let raw = UnsafeRawPointer(samples)
        var squares = SIMD8<Float>()
        var maxima = SIMD8<Float>()
        var index = 0
        while index &+ 8 <= count {
            let x = raw.loadUnaligned(fromByteOffset: index &* 4, as: SIMD8<Float>.self)
            squares += x * x
            let magnitude = x.replacing(with: -x, where: x .< 0)
            maxima.replace(with: magnitude, where: magnitude .> maxima)
            index &+= 8
        }
        var sum = Double(squares.sum())
        // By halves rather than `maxima.max()`, which was not inlined: a call per measure,
        // 3.8 % of a metering 64-input mixer's time.
        // (`pointwiseMax` was not inlined either; masked replaces, as in the loop above, are.)
        let quarters = maxima.lowHalf.replacing(with: maxima.highHalf, where: maxima.highHalf .> maxima.lowHalf)
        let halves = quarters.lowHalf.replacing(with: quarters.highHalf, where: quarters.highHalf .> quarters.lowHalf)
        var blockPeak = Swift.max(halves[0], halves[1])
        while index < count {
            let x = samples[index]
            sum += Double(x * x)
            blockPeak = max(blockPeak, abs(x))
            index &+= 1
        }
        let blockMeanSquare = sum / Double(count)
        if count != cachedCount {
            let frames = Double(count)
            let averagingFrames = averagingTime * sampleRate
            let decayFrames = peakDecayTime * sampleRate
            cachedAveragingWeight = averagingFrames > 0 ? 1 - exp(-frames / averagingFrames) : 1
            cachedDecay = decayFrames > 0 ? exp(-frames / decayFrames) : 0
            cachedCount = count
        }

        // A zero averaging time gives the block itself; assigned directly because
        // ms + (block − ms)·1 need not round to exactly `block`.
        if cachedAveragingWeight < 1 {
            smoothedMeanSquare += (blockMeanSquare - smoothedMeanSquare) * cachedAveragingWeight
        } else {
            smoothedMeanSquare = blockMeanSquare
        }
        heldPeak = max(Double(blockPeak), heldPeak * cachedDecay)
    }

    /// Forgets everything measured: both levels read −120 dB.
    @inlinable
    public mutating func reset() {
        smoothedMeanSquare = 0
        heldPeak = 0
        cachedCount = -1
    }
}
