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
    // EFX (ALC_EXT_EFX).
    /// AL_DIRECT_FILTER: the direct sound's filter (copied when set, as OpenAL does).
    public var directFilter = ALFilter.null
    /// AL_ROOM_ROLLOFF_FACTOR (0…10; default 0): the distance rolloff of the auxiliary sends.
    public var roomRolloffFactor: Float = 0
    /// AL_AUXILIARY_SEND_FILTER_GAIN_AUTO (default true): sends follow the cone.
    public var auxiliarySendFilterGainAuto = true

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
