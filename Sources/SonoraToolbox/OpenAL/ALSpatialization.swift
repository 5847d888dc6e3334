import Foundation

/// What the 3D mixer unit is given for one source: everything OpenAL 1.1 §3 computes in the
/// API, so the unit's own distance attenuation stays off.
public struct ALSpatialization: Sendable, Hashable {
    /// Final gain, linear: clamp(distance × cone × source gain, min, max) × listener gain.
    public var gain: Float
    /// Degrees in the listener's frame, Core Audio's sense: 0 ahead, +90 right, ±180 behind.
    public var azimuth: Float
    /// Degrees, +90 above.
    public var elevation: Float
    /// Metres from the listener.
    public var distance: Float
    /// Pitch × doppler shift (not clamped).
    public var rate: Float

    /// Parts of `gain`, for tests and comparisons.
    public var distanceGain: Float
    public var coneGain: Float
    public var dopplerScale: Float

    /// Gain in dB for the unit (−120 for silence).
    public var gainDecibels: Float {
        gain > 0 ? max(20 * log10f(gain), -120) : -120
    }

    /// Computes a source's mix parameters from the source, the listener and the context's
    /// distance model and doppler settings.
    public init(source: ALSourceProperties, listener: ALListenerProperties, distanceModel: ALDistanceModel, doppler: ALDoppler) {
        // The source in the listener's frame: relative sources already are (+x right, +y up, −z ahead).
        let offset = source.isRelative ? source.position : source.position - listener.position
        let forward = Self.normalized(listener.at, fallback: [0, 0, -1])
        var up = listener.up - forward * (listener.up * forward).sum()
        up = Self.normalized(up, fallback: [0, 1, 0])
        let right = SIMD3(forward.y * up.z - forward.z * up.y, forward.z * up.x - forward.x * up.z, forward.x * up.y - forward.y * up.x)
        let x, y, ahead: Float
        if source.isRelative {
            (x, y, ahead) = (offset.x, offset.y, -offset.z)
        } else {
            (x, y, ahead) = ((offset * right).sum(), (offset * up).sum(), (offset * forward).sum())
        }
        distance = (offset * offset).sum().squareRoot()
        if distance > 0 {
            azimuth = atan2f(x, ahead) * 180 / .pi
            elevation = atan2f(y, (x * x + ahead * ahead).squareRoot()) * 180 / .pi
        } else {
            azimuth = 0
            elevation = 0
        }
        distanceGain = distanceModel.gain(
            distance: distance, referenceDistance: source.referenceDistance, maxDistance: source.maxDistance,
            rolloffFactor: source.rolloffFactor)
        let listenerPosition: SIMD3<Float> = source.isRelative ? .zero : listener.position
        coneGain = source.cone.gain(direction: source.direction, toListener: listenerPosition - source.position)
        let clamped = min(max(distanceGain * coneGain * source.gain, source.minGain), source.maxGain)
        gain = clamped * listener.gain
        dopplerScale = doppler.pitchScale(
            sourcePosition: source.position, sourceVelocity: source.velocity, listenerPosition: listenerPosition,
            listenerVelocity: source.isRelative ? .zero : listener.velocity)
        rate = source.pitch * dopplerScale
    }

    static func normalized(_ vector: SIMD3<Float>, fallback: SIMD3<Float>) -> SIMD3<Float> {
        let length = (vector * vector).sum().squareRoot()
        return length > 0 && length.isFinite ? vector / length : fallback
    }
}
