/// One second-order IIR section running in transposed direct form II.
///
/// The two state variables are Double: with Float state a low-frequency EQ (poles close to
/// z = 1) accumulates enough rounding error to shift its response and raise its noise floor.
/// Assigning new `coefficients` keeps the state, so a control change does not click.
public struct Biquad: Sendable {
    public var coefficients: BiquadCoefficients
    @usableFromInline var state1: Double = 0
    @usableFromInline var state2: Double = 0

    @inlinable
    public init(_ coefficients: BiquadCoefficients = .identity) {
        self.coefficients = coefficients
    }

    /// Filters `count` samples in place.
    @inlinable
    public mutating func process(_ samples: UnsafeMutablePointer<Float>, count: Int) {
        process(from: UnsafePointer(samples), to: samples, count: count)
    }

    /// Filters `count` samples from `source` into `destination`; they may be the same buffer
    /// (each sample is read before its output is written), but must not otherwise overlap.
    @inlinable
    public mutating func process(from source: UnsafePointer<Float>, to destination: UnsafeMutablePointer<Float>, count: Int) {
        // Locals, so the loop keeps everything in registers.
        let b0 = coefficients.b0, b1 = coefficients.b1, b2 = coefficients.b2
        let a1 = coefficients.a1, a2 = coefficients.a2
        var s1 = state1, s2 = state2
        var index = 0
        while index < count {
            let x = Double(source[index])
            let y = b0 * x + s1
            s1 = b1 * x - a1 * y + s2
            s2 = b2 * x - a2 * y
            destination[index] = Float(y)
            index &+= 1
        }
        // A decaying tail would otherwise reach subnormal numbers, which cost up to ~100× per
        // operation on x86. Once a block is enough: Double takes thousands of samples to get
        // from 1e-30 to the subnormal range.
        state1 = abs(s1) < 1e-30 ? 0 : s1
        state2 = abs(s2) < 1e-30 ? 0 : s2
    }

    /// Clears the filter's memory, as if it had only ever seen silence.
    @inlinable
    public mutating func reset() {
        state1 = 0
        state2 = 0
    }
}
