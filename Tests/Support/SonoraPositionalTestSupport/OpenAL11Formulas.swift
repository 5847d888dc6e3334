import Foundation

/// OpenAL 1.1's formulas (specification §3.4 distance models, §3.5.1 cones, §3.5.2 doppler),
/// written from the text, independent of both implementations: the reference the tests
/// hold OpenAL Soft's and Sonora's rendered levels and pitches to.
public enum OpenAL11Formulas {
    /// The distance attenuation of `model` at `distance` (before AL_MIN_GAIN/AL_MAX_GAIN).
    public static func distanceGain(
        _ model: SceneDistanceModel, distance: Float, reference: Float = 1, maximum: Float = .greatestFiniteMagnitude, rolloff: Float = 1
    ) -> Float {
        var d = distance
        switch model {
        case .inverseClamped, .linearClamped, .exponentClamped: d = max(reference, min(d, maximum))
        default: break
        }
        switch model {
        case .none: return 1
        case .inverse, .inverseClamped: return reference / (reference + rolloff * (d - reference))
        case .linear, .linearClamped: return max(0, 1 - rolloff * (d - reference) / (maximum - reference))
        case .exponent, .exponentClamped: return pow(d / reference, -rolloff)
        }
    }

    /// The cone attenuation for a listener `angle` degrees off the source's direction.
    public static func coneGain(angle: Float, inner: Float, outer: Float, outerGain: Float) -> Float {
        if angle <= inner / 2 { return 1 }
        if angle >= outer / 2 { return outerGain }
        return 1 + (outerGain - 1) * (angle - inner / 2) / ((outer - inner) / 2)
    }

    /// The pitch factor f'/f the doppler effect gives (velocities projected on the line
    /// from the source to the listener, clamped to the speed of sound over the factor).
    public static func dopplerRatio(
        sourcePosition: SIMD3<Float>, sourceVelocity: SIMD3<Float>, listenerPosition: SIMD3<Float> = .zero,
        listenerVelocity: SIMD3<Float> = .zero, dopplerFactor: Float = 1, speedOfSound: Float = 343.3
    ) -> Double {
        let sourceToListener = listenerPosition - sourcePosition
        let length = (sourceToListener * sourceToListener).sum().squareRoot()
        guard dopplerFactor > 0, length > 0 else { return 1 }
        let limit = speedOfSound / dopplerFactor
        let vls = min((sourceToListener * listenerVelocity).sum() / length, limit)
        let vss = min((sourceToListener * sourceVelocity).sum() / length, limit)
        return Double((speedOfSound - dopplerFactor * vls) / (speedOfSound - dopplerFactor * vss))
    }
}
