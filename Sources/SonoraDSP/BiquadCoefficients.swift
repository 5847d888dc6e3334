#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The coefficients of a second-order IIR section, normalized so that a0 = 1:
///
///     H(z) = (b0 + b1·z⁻¹ + b2·z⁻²) / (1 + a1·z⁻¹ + a2·z⁻²)
///
/// The designs follow Robert Bristow-Johnson's Audio EQ Cookbook. They are Double because
/// low-frequency filters at high sample rates have poles so close to z = 1 that Float
/// coefficients would move them audibly.
///
/// Every design clamps its inputs so that no argument, NaN and infinity included, yields
/// NaN coefficients: the frequency into (0, 0.499·sampleRate) (as a fraction of the
/// sample rate, so a bad sample rate is harmless too), q into 0.01…1000 and gains into
/// ±120 dB.
public struct BiquadCoefficients: Equatable, Sendable {
    public var b0: Double
    public var b1: Double
    public var b2: Double
    public var a1: Double
    public var a2: Double

    @inlinable
    public init(b0: Double, b1: Double, b2: Double, a1: Double, a2: Double) {
        self.b0 = b0
        self.b1 = b1
        self.b2 = b2
        self.a1 = a1
        self.a2 = a2
    }

    /// Passes the signal through unchanged.
    public static let identity = BiquadCoefficients(b0: 1, b1: 0, b2: 0, a1: 0, a2: 0)

    // MARK: Designs

    /// A bell: `gainDB` at `frequency`, 0 dB far from it.
    public static func peaking(frequency: Double, q: Double, gainDB: Double, sampleRate: Double) -> Self {
        let w = CookbookTerms(frequency: frequency, q: q, sampleRate: sampleRate)
        let a = amplitude(gainDB)
        return normalized(
            b0: 1 + w.alpha * a, b1: -2 * w.cosine, b2: 1 - w.alpha * a,
            a0: 1 + w.alpha / a, a1: -2 * w.cosine, a2: 1 - w.alpha / a)
    }

    /// `gainDB` below `frequency`, 0 dB above; the gain at `frequency` is half of `gainDB`.
    /// `q` is the cookbook's Q form (0.7071 gives the steepest slope without overshoot).
    public static func lowShelf(frequency: Double, q: Double, gainDB: Double, sampleRate: Double) -> Self {
        let w = CookbookTerms(frequency: frequency, q: q, sampleRate: sampleRate)
        let a = amplitude(gainDB)
        let twoRootAAlpha = 2 * a.squareRoot() * w.alpha
        return normalized(
            b0: a * ((a + 1) - (a - 1) * w.cosine + twoRootAAlpha),
            b1: 2 * a * ((a - 1) - (a + 1) * w.cosine),
            b2: a * ((a + 1) - (a - 1) * w.cosine - twoRootAAlpha),
            a0: (a + 1) + (a - 1) * w.cosine + twoRootAAlpha,
            a1: -2 * ((a - 1) + (a + 1) * w.cosine),
            a2: (a + 1) + (a - 1) * w.cosine - twoRootAAlpha)
    }

    /// `gainDB` above `frequency`, 0 dB below; the mirror image of `lowShelf`.
    public static func highShelf(frequency: Double, q: Double, gainDB: Double, sampleRate: Double) -> Self {
        let w = CookbookTerms(frequency: frequency, q: q, sampleRate: sampleRate)
        let a = amplitude(gainDB)
        let twoRootAAlpha = 2 * a.squareRoot() * w.alpha
        return normalized(
            b0: a * ((a + 1) + (a - 1) * w.cosine + twoRootAAlpha),
            b1: -2 * a * ((a - 1) + (a + 1) * w.cosine),
            b2: a * ((a + 1) + (a - 1) * w.cosine - twoRootAAlpha),
            a0: (a + 1) - (a - 1) * w.cosine + twoRootAAlpha,
            a1: 2 * ((a - 1) - (a + 1) * w.cosine),
            a2: (a + 1) - (a - 1) * w.cosine - twoRootAAlpha)
    }

    /// 12 dB/octave low-pass; 0 dB at DC, −3 dB at `frequency` when q = 0.7071.
    public static func lowPass(frequency: Double, q: Double, sampleRate: Double) -> Self {
        let w = CookbookTerms(frequency: frequency, q: q, sampleRate: sampleRate)
        let b = w.oneMinusCosine / 2
        return normalized(
            b0: b, b1: w.oneMinusCosine, b2: b,
            a0: 1 + w.alpha, a1: -2 * w.cosine, a2: 1 - w.alpha)
    }

    /// 12 dB/octave high-pass; 0 dB at Nyquist, −3 dB at `frequency` when q = 0.7071.
    public static func highPass(frequency: Double, q: Double, sampleRate: Double) -> Self {
        let w = CookbookTerms(frequency: frequency, q: q, sampleRate: sampleRate)
        let b = (1 + w.cosine) / 2
        return normalized(
            b0: b, b1: -(1 + w.cosine), b2: b,
            a0: 1 + w.alpha, a1: -2 * w.cosine, a2: 1 - w.alpha)
    }

    /// Band-pass with a constant 0 dB peak at `frequency`; bandwidth `frequency / q`.
    public static func bandPass(frequency: Double, q: Double, sampleRate: Double) -> Self {
        let w = CookbookTerms(frequency: frequency, q: q, sampleRate: sampleRate)
        return normalized(
            b0: w.alpha, b1: 0, b2: -w.alpha,
            a0: 1 + w.alpha, a1: -2 * w.cosine, a2: 1 - w.alpha)
    }

    /// Band-stop: zero gain at `frequency`, 0 dB far from it.
    public static func notch(frequency: Double, q: Double, sampleRate: Double) -> Self {
        let w = CookbookTerms(frequency: frequency, q: q, sampleRate: sampleRate)
        return normalized(
            b0: 1, b1: -2 * w.cosine, b2: 1,
            a0: 1 + w.alpha, a1: -2 * w.cosine, a2: 1 - w.alpha)
    }

    /// Unity gain at every frequency; the phase turns through −180° at `frequency`.
    public static func allPass(frequency: Double, q: Double, sampleRate: Double) -> Self {
        let w = CookbookTerms(frequency: frequency, q: q, sampleRate: sampleRate)
        return normalized(
            b0: 1 - w.alpha, b1: -2 * w.cosine, b2: 1 + w.alpha,
            a0: 1 + w.alpha, a1: -2 * w.cosine, a2: 1 - w.alpha)
    }

    // MARK: Response

    /// |H(e^jω)| at `frequency`, evaluated from the coefficients (not from the design).
    public func magnitude(atFrequency frequency: Double, sampleRate: Double) -> Double {
        let omega = 2 * Double.pi * frequency / sampleRate
        let cos1 = cos(omega), sin1 = sin(omega)
        let cos2 = cos(2 * omega), sin2 = sin(2 * omega)
        // z⁻ⁿ = e^(−jnω) = cos nω − j·sin nω.
        let numeratorReal = b0 + b1 * cos1 + b2 * cos2
        let numeratorImaginary = -(b1 * sin1 + b2 * sin2)
        let denominatorReal = 1 + a1 * cos1 + a2 * cos2
        let denominatorImaginary = -(a1 * sin1 + a2 * sin2)
        let numerator = numeratorReal * numeratorReal + numeratorImaginary * numeratorImaginary
        let denominator = denominatorReal * denominatorReal + denominatorImaginary * denominatorImaginary
        return (numerator / denominator).squareRoot()
    }

    /// 20·log10 of `magnitude(atFrequency:sampleRate:)`; −infinity where the response is
    /// exactly zero (a notch at its centre), so callers can tell a true zero from a floor.
    public func magnitudeDB(atFrequency frequency: Double, sampleRate: Double) -> Double {
        20 * log10(magnitude(atFrequency: frequency, sampleRate: sampleRate))
    }

    // MARK: Helpers

    /// The cookbook's intermediate values for one (frequency, q, sampleRate).
    struct CookbookTerms {
        let cosine: Double
        /// 1 − cos ω, computed as 2·sin²(ω/2) so that it keeps its precision at low frequencies.
        let oneMinusCosine: Double
        let alpha: Double

        init(frequency: Double, q: Double, sampleRate: Double) {
            // Clamp the normalized frequency, so NaN, zero, negative or huge frequencies and
            // sample rates still give a stable filter. `!(x > lower)` also catches NaN.
            var ratio = frequency / sampleRate
            if !(ratio > 1e-6) { ratio = 1e-6 }
            if ratio > 0.499 { ratio = 0.499 }
            var q = q
            if !(q > 0.01) { q = 0.01 }
            if q > 1000 { q = 1000 }
            let omega = 2 * Double.pi * ratio
            let halfSine = sin(omega / 2)
            cosine = cos(omega)
            oneMinusCosine = 2 * halfSine * halfSine
            alpha = sin(omega) / (2 * q)
        }
    }

    /// The cookbook's A = 10^(gain/40), with the gain clamped to ±120 dB (NaN → 0 dB).
    static func amplitude(_ gainDB: Double) -> Double {
        var gain = gainDB
        if gain.isNaN { gain = 0 }
        gain = min(max(gain, -120), 120)
        return pow(10, gain / 40)
    }

    static func normalized(b0: Double, b1: Double, b2: Double, a0: Double, a1: Double, a2: Double) -> Self {
        let scale = 1 / a0
        return BiquadCoefficients(b0: b0 * scale, b1: b1 * scale, b2: b2 * scale, a1: a1 * scale, a2: a2 * scale)
    }
}
