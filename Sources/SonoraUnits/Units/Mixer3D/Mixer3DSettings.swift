#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Mixer3DUnit {
    /// How an input is placed (`kAudioUnitProperty_SpatializationAlgorithm`), Core Audio's values.
    public enum SpatializationAlgorithm: UInt32, Sendable, CaseIterable, BitwiseCopyable, CustomStringConvertible {
        /// Equal-power panning by the source's lateral angle (stereo); vector-based panning on 4.0 and 5.1.
        case equalPowerPanning = 0
        /// A spherical head: interaural delay (Woodworth) and head shadow (Brown–Duda), stereo out.
        case sphericalHead = 1
        /// Measured head-related responses from a SOFA file (binaural, stereo out).
        case hrtf = 2
        /// Vector-based amplitude panning between the two speakers around the source.
        case vectorBasedPanning = 4
        /// No placement: a stereo input goes to left and right as it is (a mono one to both, −3 dB).
        case stereoPassThrough = 5

        public var description: String {
            switch self {
            case .equalPowerPanning: "equal-power panning"
            case .sphericalHead: "spherical head"
            case .hrtf: "HRTF"
            case .vectorBasedPanning: "vector-based panning"
            case .stereoPassThrough: "stereo pass-through"
            }
        }
    }

    /// What an input's rendering includes (`kAudioUnitProperty_3DMixerRenderingFlags`), Core Audio's bits.
    public struct RenderingFlags: OptionSet, Hashable, Sendable, BitwiseCopyable {
        public var rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        /// The spherical head's interaural time difference.
        public static let interAuralDelay = RenderingFlags(rawValue: 1 << 0)
        /// Pitch follows the rate at which the distance changes (speed of sound 343 m/s).
        public static let dopplerShift = RenderingFlags(rawValue: 1 << 1)
        /// Gain falls with distance along the input's attenuation curve.
        public static let distanceAttenuation = RenderingFlags(rawValue: 1 << 2)
        /// Highs fall with distance (air absorption).
        public static let distanceFilter = RenderingFlags(rawValue: 1 << 3)
        /// Accepted for compatibility; no effect.
        public static let distanceDiffusion = RenderingFlags(rawValue: 1 << 4)
        /// The linear curve instead of the input's attenuation curve.
        public static let linearDistanceAttenuation = RenderingFlags(rawValue: 1 << 5)

        /// Core Audio's default for a new input.
        public static let defaults: RenderingFlags = [.interAuralDelay, .distanceAttenuation]
        static let known: UInt32 = 0b11_1111
    }

    /// How gain falls with distance (`kAudioUnitProperty_3DMixerAttenuationCurve`), Core Audio's values.
    /// With r the reference distance, m the maximum distance and d clamped into r…m:
    /// power: power ∝ r/d (amplitude √(r/d), −3 dB per doubling); exponential: (d/r)^−1;
    /// inverse: r / (r + (d − r)); linear: 1 − (d − r)/(m − r). (The exponential, inverse and
    /// linear forms are AVAudioEnvironment's with rolloff 1, which the 3D mixer has no parameter for.)
    public enum AttenuationCurve: UInt32, Sendable, CaseIterable, BitwiseCopyable {
        case power = 0
        case exponential = 1
        case inverse = 2
        case linear = 3

        /// Linear amplitude gain at `distance` (metres), before the maximum-attenuation floor.
        public func gain(atDistance distance: Float, _ parameters: DistanceParameters) -> Float {
            let reference = max(parameters.referenceDistance, 1e-6)
            let maximum = max(parameters.maximumDistance, reference)
            let d = distance.isNaN ? reference : min(max(distance, reference), maximum)
            switch self {
            case .power: return (reference / d).squareRoot()
            case .exponential: return powf(d / reference, -1)
            case .inverse: return reference / (reference + (d - reference))
            case .linear:
                guard maximum > reference else { return 1 }
                return max(0, 1 - (d - reference) / (maximum - reference))
            }
        }

        /// `gain(atDistance:_:)` in dB, never below −maximumAttenuation.
        public func attenuationDB(atDistance distance: Float, _ parameters: DistanceParameters) -> Float {
            let gain = gain(atDistance: distance, parameters)
            let floor = -max(0, parameters.maximumAttenuation)
            guard gain > 0 else { return floor }
            return max(20 * log10f(gain), floor)
        }
    }

    /// Distance model of an input (`MixerDistanceParams`): below `referenceDistance` nothing is
    /// attenuated, beyond `maximumDistance` nothing more, and never more than `maximumAttenuation` dB.
    public struct DistanceParameters: Hashable, Sendable, BitwiseCopyable {
        public var referenceDistance: Float
        public var maximumDistance: Float
        public var maximumAttenuation: Float

        public init(referenceDistance: Float = 1, maximumDistance: Float = 10_000, maximumAttenuation: Float = 120) {
            self.referenceDistance = referenceDistance
            self.maximumDistance = maximumDistance
            self.maximumAttenuation = maximumAttenuation
        }

        /// Why these parameters cannot be used, or nil.
        var problem: String? {
            guard referenceDistance.isFinite, referenceDistance > 0 else {
                return "reference distance \(referenceDistance) is not a positive number of metres"
            }
            guard maximumDistance.isFinite, maximumDistance >= referenceDistance else {
                return "maximum distance \(maximumDistance) is below the reference distance \(referenceDistance)"
            }
            guard maximumAttenuation.isFinite, maximumAttenuation >= 0 else {
                return "maximum attenuation \(maximumAttenuation) dB is not 0 dB or more"
            }
            return nil
        }
    }
}

/// One input's settings as the render side reads them (a block of these is handed over whole).
struct Mixer3DInputSettings: BitwiseCopyable {
    var algorithm: Mixer3DUnit.SpatializationAlgorithm = .equalPowerPanning
    var flags: Mixer3DUnit.RenderingFlags = .defaults
    var distance = Mixer3DUnit.DistanceParameters()
    var curve: Mixer3DUnit.AttenuationCurve = .inverse
}

/// Every input's settings in one allocation, owned by the control side, replaced whole on a
/// change and retired once the render side has taken the replacement.
final class Mixer3DSettingsBlock {
    let settings: UnsafeMutablePointer<Mixer3DInputSettings>
    let count: Int

    init(_ values: [Mixer3DInputSettings]) {
        count = values.count
        settings = .allocate(capacity: max(1, values.count))
        settings.initialize(from: values, count: values.count)
    }

    deinit { settings.deallocate() }
}
