#if canImport(Glibc)
import Glibc
#endif

/// Reproducible randomness for tests: the same seed gives the same sequence on every run
/// and machine (unlike `SystemRandomNumberGenerator`), so a failing case can be replayed.
///
/// A PCG generator: a 64-bit linear congruential state (Knuth's MMIX constants) with
/// PCG's RXS-M-XS output permutation for `next()`. `nextUnit()` takes the state's top 53
/// bits directly (an LCG's best bits), the sequence the voice tests' signals were tuned on.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    public private(set) var state: UInt64

    public init(seed: UInt64) {
        state = seed &* 6_364_136_223_846_793_005 &+ 1
    }

    @inline(__always)
    mutating func step() {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
    }

    public mutating func next() -> UInt64 {
        step()
        let word = ((state >> ((state >> 59) &+ 5)) ^ state) &* 12_605_985_483_714_917_081
        return (word >> 43) ^ word
    }

    /// Uniform in [0, 1).
    public mutating func nextUnit() -> Double {
        step()
        return Double(state >> 11) / Double(1 << 53)
    }

    /// Standard normal (mean 0, deviation 1), by Box–Muller.
    public mutating func nextGaussian() -> Double {
        let u = max(nextUnit(), 1e-12), v = nextUnit()
        return (-2 * log(u)).squareRoot() * cos(2 * .pi * v)
    }
}
