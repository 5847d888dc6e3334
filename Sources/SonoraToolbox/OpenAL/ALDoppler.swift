/// The doppler shift of OpenAL 1.1 §3.5.2 (AL_DOPPLER_FACTOR, AL_SPEED_OF_SOUND).
public struct ALDoppler: Sendable, Hashable {
    public var factor: Float = 1
    public var speedOfSound: Float = 343.3

    public init(factor: Float = 1, speedOfSound: Float = 343.3) {
        self.factor = factor
        self.speedOfSound = speedOfSound
    }

    /// The pitch multiplier for a source heard by a listener:
    ///
    ///     u   = (listener − source) / |listener − source|
    ///     vls = DF · (u · listenerVelocity),  vss = DF · (u · sourceVelocity)
    ///     f'  = f · (SS − vls) / (SS − vss)
    ///
    /// (§3.5.2's formula with the source-to-listener axis, as OpenAL Soft applies it: a
    /// source coming closer, or a listener moving towards it, raises the pitch.) A listener
    /// receding at the speed of sound or faster hears nothing (0); a source approaching that
    /// fast gives infinity (the caller clamps the pitch). 1 when the factor is 0 or the
    /// source is at the listener.
    public func pitchScale(sourcePosition: SIMD3<Float>, sourceVelocity: SIMD3<Float>,
                           listenerPosition: SIMD3<Float>, listenerVelocity: SIMD3<Float>) -> Float {
        guard factor > 0, speedOfSound > 0 else { return 1 }
        let toListener = listenerPosition - sourcePosition
        let distance = (toListener * toListener).sum().squareRoot()
        guard distance > 0 else { return 1 }
        let axis = toListener / distance
        let listenerSpeed = factor * (axis * listenerVelocity).sum()
        let sourceSpeed = factor * (axis * sourceVelocity).sum()
        if !(listenerSpeed < speedOfSound) { return 0 }
        if !(sourceSpeed < speedOfSound) { return .infinity }
        return (speedOfSound - listenerSpeed) / (speedOfSound - sourceSpeed)
    }
}
