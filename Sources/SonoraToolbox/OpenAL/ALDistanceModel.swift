import Foundation

/// The distance models of OpenAL 1.1 §3.4 (AL_DISTANCE_MODEL). The default is
/// `inverseClamped`.
public enum ALDistanceModel: Sendable, Hashable, CaseIterable {
    case none, inverse, inverseClamped, linear, linearClamped, exponent, exponentClamped

    /// AL_NONE 0, AL_INVERSE_DISTANCE 0xD001 … AL_EXPONENT_DISTANCE_CLAMPED 0xD006.
    public var alValue: Int32 {
        switch self {
        case .none: 0
        case .inverse: 0xD001
        case .inverseClamped: 0xD002
        case .linear: 0xD003
        case .linearClamped: 0xD004
        case .exponent: 0xD005
        case .exponentClamped: 0xD006
        }
    }

    public init?(alValue value: Int32) {
        guard let model = Self.allCases.first(where: { $0.alValue == value }) else { return nil }
        self = model
    }

    /// The distance attenuation (linear gain, before cone, source gain and the min/max
    /// clamps) of a source `distance` from the listener, by the §3.4 formulas:
    ///
    /// - inverse: `ref / (ref + rolloff · (d − ref))`
    /// - linear: `1 − rolloff · (min(d, max) − ref) / (max − ref)` (never below 0)
    /// - exponent: `(d / ref)^−rolloff`
    /// - clamped variants first clamp `d` to `ref…max`; `none` is 1.
    ///
    /// Where a formula would divide by zero (ref 0, max = ref) or a clamped model has
    /// max < ref, the gain is 1, as OpenAL Soft does.
    public func gain(distance: Float, referenceDistance ref: Float, maxDistance max: Float, rolloffFactor rolloff: Float) -> Float {
        var d = distance
        switch self {
        case .none:
            return 1
        case .inverseClamped, .linearClamped, .exponentClamped:
            if max < ref { return 1 }
            d = Swift.min(Swift.max(d, ref), max)
        case .inverse, .linear, .exponent:
            break
        }
        switch self {
        case .inverse, .inverseClamped:
            guard ref > 0 else { return 1 }
            let denominator = ref + rolloff * (d - ref)
            return denominator > 0 ? ref / denominator : 1
        case .linear, .linearClamped:
            guard max != ref else { return 1 }
            d = Swift.min(d, max)
            return Swift.max(1 - rolloff * (d - ref) / (max - ref), 0)
        case .exponent, .exponentClamped:
            guard d > 0, ref > 0 else { return 1 }
            return powf(d / ref, -rolloff)
        case .none:
            return 1
        }
    }
}
