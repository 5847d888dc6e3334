import Foundation

/// A directional source's sound cone (AL_CONE_INNER_ANGLE, AL_CONE_OUTER_ANGLE,
/// AL_CONE_OUTER_GAIN; angles in degrees, whole cone, 0…360).
///
/// Inside the inner angle the gain is 1, outside the outer angle it is `outerGain`, and in
/// between it goes linearly from 1 to `outerGain` with the angle — OpenAL 1.1's cone, as
/// OpenAL Soft computes it.
public struct ALCone: Sendable, Hashable {
    public var innerAngle: Float = 360
    public var outerAngle: Float = 360
    public var outerGain: Float = 0

    public init(innerAngle: Float = 360, outerAngle: Float = 360, outerGain: Float = 0) {
        self.innerAngle = innerAngle
        self.outerAngle = outerAngle
        self.outerGain = outerGain
    }

    /// The cone's gain for a source pointing along `direction` (zero: not directional, gain 1)
    /// heard from `toListener` (the vector from the source to the listener).
    public func gain(direction: SIMD3<Float>, toListener: SIMD3<Float>) -> Float {
        let directionLength = (direction * direction).sum().squareRoot()
        let listenerLength = (toListener * toListener).sum().squareRoot()
        // A whole-sphere inner cone is no cone (OpenAL Soft skips it too): without this, a
        // listener straight behind measures 360.00002° and fell outside a 360° cone.
        guard innerAngle < 360, directionLength > 0, listenerLength > 0 else { return 1 }
        let cosine = Swift.min(Swift.max((direction * toListener).sum() / (directionLength * listenerLength), -1), 1)
        // The angle between the axis and the listener, doubled: cone angles are whole angles.
        let angle = Swift.min(acosf(cosine) * 2 * 180 / .pi, 360)
        if angle <= innerAngle { return 1 }
        if angle > outerAngle { return outerGain }
        let span = outerAngle - innerAngle
        let scale = span > 0 ? (angle - innerAngle) / span : 1
        return 1 + (outerGain - 1) * scale
    }
}
