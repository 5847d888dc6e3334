/// A source's properties that decide how it is heard, with OpenAL 1.1's defaults.
public struct ALSourceProperties: Sendable, Hashable {
    public var pitch: Float = 1
    public var gain: Float = 1
    public var minGain: Float = 0
    public var maxGain: Float = 1
    public var position: SIMD3<Float> = .zero
    public var velocity: SIMD3<Float> = .zero
    /// Zero: not directional.
    public var direction: SIMD3<Float> = .zero
    /// Position, velocity and direction are relative to the listener (AL_SOURCE_RELATIVE).
    public var isRelative = false
    public var cone = ALCone()
    public var referenceDistance: Float = 1
    public var maxDistance: Float = .greatestFiniteMagnitude
    public var rolloffFactor: Float = 1

    public init() {}
}

/// The listener's properties (OpenAL 1.1 defaults: at the origin, looking down −z, +y up).
public struct ALListenerProperties: Sendable, Hashable {
    public var position: SIMD3<Float> = .zero
    public var velocity: SIMD3<Float> = .zero
    public var at: SIMD3<Float> = [0, 0, -1]
    public var up: SIMD3<Float> = [0, 1, 0]
    public var gain: Float = 1

    public init() {}
}
