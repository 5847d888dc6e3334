import Foundation

/// EFX on a context: effect slots, and what each source sends them.
extension ALContext {
    /// A new auxiliary effect slot (alGenAuxiliaryEffectSlots), with no effect yet.
    /// `outOfMemory` past `ALAuxiliaryEffectSlot.maximumPerContext` live slots.
    public func makeAuxiliaryEffectSlot() throws(ALError) -> ALAuxiliaryEffectSlot {
        try device.locked { () throws(ALError) -> ALAuxiliaryEffectSlot in
            try checkLiveLocked("makeAuxiliaryEffectSlot")
            let used = Set(effectSlots.map(\.bus))
            guard let bus = (0..<ALAuxiliaryEffectSlot.maximumPerContext).first(where: { !used.contains($0) }) else {
                throw recordLocked(.outOfMemory, "makeAuxiliaryEffectSlot: the context's \(ALAuxiliaryEffectSlot.maximumPerContext) slots are all made")
            }
            let slot = ALAuxiliaryEffectSlot(context: self, bus: bus)
            effectSlots.append(slot)
            return slot
        }
    }

    func releaseEffectSlotLocked(_ slot: ALAuxiliaryEffectSlot) {
        effectSlots.removeAll { $0 === slot }
    }

    /// What the mixer is given for `source`'s direct filter and auxiliary sends, by OpenAL
    /// Soft's rules: a send's gain is the source's gain with distance attenuation by the room
    /// rolloff factor (the source's, plus the reverb's when the slot's sends are automatic),
    /// the cone (when the send is automatic), the min/max clamp, the listener's gain and the
    /// send filter's gain; an automatic send to a reverb also decays with distance at the
    /// reverb's decay rate (0.001 over decay time × 343.3 m). Sends to one slot add up (the
    /// first one's filter shapes them).
    func effectsMixLocked(_ source: ALSource, spatial: ALSpatialization) -> ALEffectsMix {
        let properties = source.properties
        var mix = ALEffectsMix()
        mix.directGain = properties.directFilter.broadbandGain
        mix.directHighDB = properties.directFilter.highShelfDecibels
        mix.directLowDB = properties.directFilter.lowShelfDecibels
        // A send feeds only a live slot of this context, and every live slot is in
        // `effectSlots`: without one, every send is off (the defaults above), and the loop
        // below (a retain of the sends and of each slot, per changed source and update) is skipped.
        guard !effectSlots.isEmpty else { return mix }
        var levels = ALEffectsMix.PerBus(repeating: 0)
        var filtered = ALEffectsMix.PerBus(repeating: 0)
        for send in source.sends {
            guard let slot = send.slot, slot.isActiveLocked else { continue }
            let automatic = slot.sendsAuto(locked: ())
            let roomRolloff = properties.roomRolloffFactor + (automatic ? slot.effectValue.roomRolloffFactor : 0)
            var wet = globals.distanceModel.gain(
                distance: spatial.distance, referenceDistance: properties.referenceDistance, maxDistance: properties.maxDistance,
                rolloffFactor: roomRolloff)
            if properties.auxiliarySendFilterGainAuto { wet *= spatial.coneGain }
            if automatic, properties.auxiliarySendFilterGainAuto, let decay = slot.effectValue.decayTime, decay > 0 {
                wet *= Self.reverbDistanceDecay(source: properties, distance: spatial.distance, decayTime: decay)
            }
            wet = min(max(wet * properties.gain, properties.minGain), properties.maxGain)
            wet *= listener.properties.gain * send.filter.broadbandGain
            levels[slot.bus] += wet
            if filtered[slot.bus] == 0 {
                filtered[slot.bus] = 1
                mix.sendHighDB[slot.bus] = send.filter.highShelfDecibels
                mix.sendLowDB[slot.bus] = send.filter.lowShelfDecibels
            }
        }
        for bus in 0..<ALAuxiliaryEffectSlot.maximumPerContext {
            mix.sendLevelDB[bus] = levels[bus] > 0 ? max(20 * log10f(levels[bus]), -120) : -120
        }
        return mix
    }

    /// OpenAL Soft's wet-path decay: the reverb's decay over the metres the source is beyond
    /// its reference distance (scaled by its rolloff), 0.001 per decay time × speed of sound.
    static func reverbDistanceDecay(source: ALSourceProperties, distance: Float, decayTime: Float) -> Float {
        let clamped = min(distance, source.maxDistance)
        guard clamped > source.referenceDistance, source.rolloffFactor > 0 else { return 1 }
        let metres = (clamped - source.referenceDistance) * source.rolloffFactor
        return powf(0.001, metres / (decayTime * 343.3))
    }
}

/// A source's EFX levels for the mixer: the direct filter (broadband gain, shelves in dB)
/// and each auxiliary bus's send level and shelves (dB).
/// Fixed-size values, not arrays: it is made for every changed source at every update.
struct ALEffectsMix {
    /// One value per auxiliary bus (the 3D mixer has 4).
    typealias PerBus = SIMD4<Float>
    var directGain: Float = 1
    var directHighDB: Float = 0
    var directLowDB: Float = 0
    var sendLevelDB = PerBus(repeating: -120)
    var sendHighDB = PerBus(repeating: 0)
    var sendLowDB = PerBus(repeating: 0)
}

/// One auxiliary send of a source: the slot it feeds (nil: none) and its filter.
struct ALAuxiliarySend {
    var slot: ALAuxiliaryEffectSlot?
    var filter = ALFilter.null
}
