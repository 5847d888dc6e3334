#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Conversions between linear gain or power and decibels.
///
/// Silence has no finite decibel value, so the conversions to decibels clamp at a floor
/// (−120 dB by default, below any 24-bit signal) instead of returning −infinity, which
/// would poison averages and displays. NaN also maps to the floor.
public enum Decibels {
    /// 10^(dB/20): the amplitude gain of `decibels`.
    @inlinable
    public static func toLinear(_ decibels: Float) -> Float {
        powf(10, decibels / 20)
    }

    /// 10^(dB/20): the amplitude gain of `decibels`.
    @inlinable @_disfavoredOverload
    public static func toLinear(_ decibels: Double) -> Double {
        pow(10, decibels / 20)
    }

    /// 20·log10|gain|, never below `floor`.
    @inlinable
    public static func fromLinear(_ gain: Float, floor: Float = -120) -> Float {
        let magnitude = abs(gain)
        // Also catches NaN, for which every comparison is false.
        guard magnitude > 0 else { return floor }
        let decibels = 20 * log10f(magnitude)
        return decibels > floor ? decibels : floor
    }

    /// 20·log10|gain|, never below `floor`.
    @inlinable @_disfavoredOverload
    public static func fromLinear(_ gain: Double, floor: Double = -120) -> Double {
        let magnitude = abs(gain)
        guard magnitude > 0 else { return floor }
        let decibels = 20 * log10(magnitude)
        return decibels > floor ? decibels : floor
    }

    /// 10·log10(power), never below `floor` (zero, negative and NaN power give `floor`).
    @inlinable
    public static func fromPower(_ power: Float, floor: Float = -120) -> Float {
        guard power > 0 else { return floor }
        let decibels = 10 * log10f(power)
        return decibels > floor ? decibels : floor
    }

    /// 10·log10(power), never below `floor` (zero, negative and NaN power give `floor`).
    @inlinable @_disfavoredOverload
    public static func fromPower(_ power: Double, floor: Double = -120) -> Double {
        guard power > 0 else { return floor }
        let decibels = 10 * log10(power)
        return decibels > floor ? decibels : floor
    }
}
