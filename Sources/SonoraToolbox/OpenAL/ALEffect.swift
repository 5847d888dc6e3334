import SonoraUnits

/// An EFX effect (alGenEffects' object, as a value: an effect slot copies it when it is
/// loaded, as OpenAL does). Any other Sonora unit goes into a slot through
/// `ALAuxiliaryEffectSlot.setEffect(unit:)`.
public enum ALEffect: Sendable, Hashable {
    /// AL_EFFECT_NULL: the slot plays nothing.
    case null
    /// AL_EFFECT_REVERB, through Sonora's `ReverbUnit`.
    case reverb(ALReverbProperties)
    /// AL_EFFECT_DEDICATED_DIALOGUE: the send, at `gain`, to the front centre (the centre
    /// channel of a 5.1 device, both front channels at −3 dB otherwise).
    case dedicatedDialogue(gain: Float)

    /// The room rolloff factor the slot adds to its sends when they are automatic.
    var roomRolloffFactor: Float {
        if case .reverb(let properties) = self { return properties.roomRolloffFactor }
        return 0
    }

    /// The reverb's decay time (a send's automatic distance decay), or nil.
    var decayTime: Float? {
        if case .reverb(let properties) = self { return properties.decayTime }
        return nil
    }

    func validate() throws(ALError) {
        switch self {
        case .null: return
        case .reverb(let properties): try properties.validate()
        case .dedicatedDialogue(let gain): guard gain >= 0, gain.isFinite else { throw .invalidValue }
        }
    }
}

/// EFX's standard reverb parameters (AL_REVERB_…), EFX's defaults and ranges.
public struct ALReverbProperties: Sendable, Hashable {
    public var density: Float = 1
    public var diffusion: Float = 1
    public var gain: Float = 0.32
    public var gainHF: Float = 0.89
    public var decayTime: Float = 1.49
    public var decayHFRatio: Float = 0.83
    public var reflectionsGain: Float = 0.05
    public var reflectionsDelay: Float = 0.007
    public var lateReverbGain: Float = 1.26
    public var lateReverbDelay: Float = 0.011
    public var airAbsorptionGainHF: Float = 0.994
    public var roomRolloffFactor: Float = 0
    public var decayHFLimit = true

    public init() {}

    /// The parameters in `ReverbUnit`'s IDs (which are OpenAL's).
    var unitParameters: [(AudioUnitParameterID, Float)] {
        typealias P = ReverbUnit.Parameter
        return [
            (P.density, density), (P.diffusion, diffusion), (P.gain, gain), (P.gainHF, gainHF), (P.decayTime, decayTime),
            (P.decayHFRatio, decayHFRatio), (P.reflectionsGain, reflectionsGain), (P.reflectionsDelay, reflectionsDelay),
            (P.lateReverbGain, lateReverbGain), (P.lateReverbDelay, lateReverbDelay), (P.airAbsorptionGainHF, airAbsorptionGainHF),
            (P.roomRolloffFactor, roomRolloffFactor), (P.decayHFLimit, decayHFLimit ? 1 : 0),
        ]
    }

    /// `invalidValue` for a parameter outside EFX's range.
    func validate() throws(ALError) {
        for (id, value) in unitParameters {
            guard let range = ReverbUnit.range(of: id), range.contains(value) else { throw .invalidValue }
        }
    }
}
