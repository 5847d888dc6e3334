import SonoraDSP

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The closed-form placement laws of the 3D mixer. Directions in Core Audio's sense:
/// azimuth in degrees, 0 in front, +90 right, −90 left, ±180 behind; elevation +90 above.
public enum SpatialPanning {
    /// The angle (radians, −π/2…π/2, + right) between the source and the median plane:
    /// asin of the source direction's rightward component. Front and back give the same angle.
    @inlinable
    public static func lateralAngle(azimuth: Float, elevation: Float) -> Double {
        let az = Double(azimuth) * .pi / 180, el = Double(elevation) * .pi / 180
        let right = min(max(sin(az) * cos(el), -1), 1)
        return asin(right)
    }

    /// Equal-power gains for a stereo pair: pan p = lateral angle ÷ 90°, θ = (p + 1)·π/4,
    /// (left, right) = (cos θ, sin θ). Behind folds onto front (azimuth 120° pans as 60°).
    /// In Float (within 1e-6 of the Double closed form, a few ulp): five Double trigonometric
    /// calls per input and slice were a visible share of a 256-source mix.
    @inlinable
    public static func equalPowerGains(azimuth: Float, elevation: Float) -> (left: Float, right: Float) {
        // π/2 rounded to nearest, as asinf(1) gives it (Float.pi is rounded down), so ±90° pans to exactly ±1.
        let halfPi = Float(Double.pi / 2), degree = Float(Double.pi / 180)
        let right = min(max(sinf(azimuth * degree) * cosf(elevation * degree), -1), 1)
        let pan = min(max(asinf(right) / halfPi, -1), 1)
        let theta = (pan + 1) * (halfPi / 2)
        // sin(π/2 − θ) rather than cos θ, so a hard-panned side is exactly 0 and centre is symmetric.
        return (sinf(halfPi - theta), sinf(theta))
    }

    /// Head radius (m) and speed of sound (m/s) of the spherical-head model.
    public static let headRadius = 0.0875
    public static let speedOfSound = 343.0

    /// Woodworth's interaural time difference in seconds: (a/c)·(θ + sin θ), θ the lateral angle
    /// (its magnitude); the ear away from the source hears it this much later.
    @inlinable
    public static func interauralDelay(azimuth: Float, elevation: Float) -> Double {
        let theta = abs(lateralAngle(azimuth: azimuth, elevation: elevation))
        return headRadius / speedOfSound * (theta + sin(theta))
    }

    /// The angle (radians, 0…π) between the source direction and the axis of an ear (+1 right, −1 left).
    @inlinable
    public static func incidence(azimuth: Float, elevation: Float, ear side: Double) -> Double {
        let az = Double(azimuth) * .pi / 180, el = Double(elevation) * .pi / 180
        return acos(min(max(side * sin(az) * cos(el), -1), 1))
    }

    /// Brown & Duda's head-shadow zero: α(θ) = (1 + α_min/2) + (1 − α_min/2)·cos(θ/θ_min · π),
    /// α_min = 0.1, θ_min = 150°. α = 2 facing the ear (+6 dB highs), 0.1 at 150° (−20 dB).
    @inlinable
    public static func headShadowAlpha(incidence theta: Double) -> Double {
        let minimumAlpha = 0.1, minimumTheta = 150.0 * .pi / 180
        return (1 + minimumAlpha / 2) + (1 - minimumAlpha / 2) * cos(theta / minimumTheta * .pi)
    }

    /// The head-shadow filter H(s) = (1 + α·s/2ω₀) / (1 + s/2ω₀), ω₀ = c/a, by the bilinear
    /// transform (prewarped at ω₀): a one-pole, one-zero shelf, unity at DC, α at high frequencies.
    public static func headShadowCoefficients(alpha: Double, sampleRate: Double) -> BiquadCoefficients {
        let omega0 = speedOfSound / headRadius
        // s = k·(1 − z⁻¹)/(1 + z⁻¹), k chosen so the transform is exact at ω₀.
        let k = omega0 / tan(omega0 / (2 * sampleRate))
        let tau = 1 / (2 * omega0)
        let a0 = 1 + tau * k
        return BiquadCoefficients(
            b0: (1 + alpha * tau * k) / a0, b1: (1 - alpha * tau * k) / a0, b2: 0, a1: (1 - tau * k) / a0, a2: 0)
    }

    // MARK: Vector-based amplitude panning

    /// Speaker azimuths (degrees) of the multichannel outputs, by output channel; nil for LFE.
    public static let quadSpeakers: [Float?] = [-45, 45, -135, 135]          // L R Ls Rs
    public static let surround51Speakers: [Float?] = [-30, 30, 0, nil, -110, 110]  // L R C LFE Ls Rs

    /// The speaker azimuths of an output with `channels` channels (4 or 6), else nil.
    public static func speakers(channels: Int) -> [Float?]? {
        switch channels {
        case 4: quadSpeakers
        case 6: surround51Speakers
        default: nil
        }
    }

    /// Pairwise 2-D VBAP (Pulkki): the two speakers either side of the source's azimuth share it,
    /// gains g = L⁻¹·p normalized to unit power; a source on a speaker plays from it alone.
    /// Elevation blends towards all speakers equally (power cos²·g² + sin²/N), so the total
    /// power stays 1. Writes one gain per output channel (0 for LFE). Realtime-safe.
    public static func vectorBasedGains(
        azimuth: Float, elevation: Float, speakers: UnsafePointer<Float>, count: Int, into gains: UnsafeMutablePointer<Float>
    ) {
        for channel in 0..<count { gains[channel] = 0 }
        let source = Double(azimuth) * .pi / 180
        let px = sin(source), py = cos(source)
        // The adjacent pair (in azimuth order) whose arc holds the source.
        var bestFirst = -1, bestSecond = -1
        var bestGains = (0.0, 0.0)
        for first in 0..<count where !speakers[first].isNaN {
            // The next speaker clockwise from `first`.
            var second = -1
            var smallest = Double.infinity
            let a1 = Double(speakers[first])
            for other in 0..<count where other != first && !speakers[other].isNaN {
                var gap = Double(speakers[other]) - a1
                while gap <= 0 { gap += 360 }
                if gap < smallest {
                    smallest = gap
                    second = other
                }
            }
            guard second >= 0 else { continue }
            let r1 = a1 * .pi / 180, r2 = Double(speakers[second]) * .pi / 180
            let l11 = sin(r1), l12 = cos(r1), l21 = sin(r2), l22 = cos(r2)
            let determinant = l11 * l22 - l21 * l12
            guard abs(determinant) > 1e-9 else { continue }
            // p = g1·l1 + g2·l2  ⇒  g = p·L⁻¹.
            let g1 = (px * l22 - py * l21) / determinant
            let g2 = (py * l11 - px * l12) / determinant
            if g1 >= -1e-9 && g2 >= -1e-9 {
                bestFirst = first
                bestSecond = second
                bestGains = (max(0, g1), max(0, g2))
                break
            }
        }
        let elevationRadians = Double(elevation) * .pi / 180
        let horizontal = cos(elevationRadians) * cos(elevationRadians)
        var speakerCount = 0
        for channel in 0..<count where !speakers[channel].isNaN { speakerCount += 1 }
        let spread = speakerCount > 0 ? (1 - horizontal) / Double(speakerCount) : 0
        let norm = (bestGains.0 * bestGains.0 + bestGains.1 * bestGains.1).squareRoot()
        for channel in 0..<count where !speakers[channel].isNaN {
            var g = 0.0
            if norm > 0 {
                if channel == bestFirst { g = bestGains.0 / norm }
                if channel == bestSecond { g = bestGains.1 / norm }
            }
            gains[channel] = Float((horizontal * g * g + spread).squareRoot())
        }
    }
}
