#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// How a mono signal's pan position (−1 = left, 0 = centre, 1 = right) becomes two gains.
public enum PanLaw: Sendable {
    /// (cos θ, sin θ) with θ = (pan + 1)·π/4: constant total power, −3 dB (0.7071) each at centre.
    case equalPower
    /// ((1 − pan)/2, (1 + pan)/2): constant sum of gains, −6 dB each at centre.
    case linear
    /// Unity in both at centre; panning attenuates only the opposite side, linearly.
    case constantGain

    /// The left and right gains for `pan`, which is clamped to −1…1 (NaN counts as centre).
    @inlinable
    public func gains(pan: Float) -> (left: Float, right: Float) {
        let position: Float = pan.isNaN ? 0 : min(max(pan, -1), 1)
        switch self {
        case .equalPower:
            // cos θ written as sin(π/2 − θ), both from the pan fraction, so the hard-panned
            // side is exactly 0 and centre is exactly symmetric (Float π/2 is not exact).
            let fraction = (Double(position) + 1) / 2
            return (Float(sin((1 - fraction) * Double.pi / 2)), Float(sin(fraction * Double.pi / 2)))
        case .linear:
            return ((1 - position) / 2, (1 + position) / 2)
        case .constantGain:
            return (min(1, 1 - position), min(1, 1 + position))
        }
    }
}
