import SonoraUnits

/// An EFX auxiliary effect slot (alGenAuxiliaryEffectSlots): an effect that sources send to
/// through their auxiliary sends, mixed into the context's output at the slot's gain. The
/// effect is an `ALEffect` (EFX's reverb as Sonora's `ReverbUnit`, dedicated dialogue) or
/// any Sonora unit (`setEffect(unit:)`: a built-in one, an LV2 plugin's).
///
/// Each slot is one auxiliary bus of the context's 3D mixer (at most
/// `ALAuxiliaryEffectSlot.maximumPerContext` per context). A new effect is prepared on the
/// calling thread and handed to the render side through the context's lock-free queue; the
/// one it replaces is freed once the render side has let go of it.
public final class ALAuxiliaryEffectSlot: @unchecked Sendable {
    public static let maximumPerContext = Mixer3DUnit.maximumAuxiliaryBuses

    unowned let context: ALContext
    /// The mixer's auxiliary bus (and the render side's slot index).
    let bus: Int
    // Under the device's lock.
    private(set) var effectValue = ALEffect.null
    private var instance: ALEffectInstance?
    private var gainValue: Float = 1
    private var sendsAutoValue = true
    private(set) var isDeleted = false

    init(context: ALContext, bus: Int) {
        self.context = context
        self.bus = bus
    }

    private var device: ALDevice { context.device }

    /// Whether sources' sends to this slot are heard (an effect is loaded).
    var isActiveLocked: Bool { !isDeleted && instance != nil }
    /// `sendsAuto` for code already under the device's lock.
    func sendsAuto(locked: Void) -> Bool { sendsAutoValue }

    /// AL_EFFECTSLOT_EFFECT: the effect, copied into the slot (`.null`: none). A change of a
    /// reverb's parameters keeps the running reverb (its tail) and sets them on it.
    public var effect: ALEffect {
        get { device.locked { effectValue } }
        set { try? setEffect(newValue) }
    }

    public func setEffect(_ effect: ALEffect) throws(ALError) {
        try device.locked { () throws(ALError) in
            try checkLocked("effect")
            do throws(ALError) { try effect.validate() } catch {
                throw context.recordLocked(error, "ALAuxiliaryEffectSlot.effect: a parameter is outside EFX's range")
            }
            if case .reverb(let properties) = effect, case .reverb = effectValue, let unit = instance?.unit as? ReverbUnit {
                for (id, value) in properties.unitParameters { _ = try? unit.setParameter(id, to: value) }
                effectValue = effect
                context.globalsChangedLocked()
                return
            }
            let made: ALEffectInstance?
            switch effect {
            case .null: made = nil
            case .dedicatedDialogue(let gain): made = ALEffectInstance(dialogueGain: gain)
            case .reverb(let properties):
                let unit = ReverbUnit()
                for (id, value) in properties.unitParameters { _ = try? unit.setParameter(id, to: value) }
                made = try makeInstance(unit)
            }
            try install(made)
            effectValue = effect
        }
    }

    /// Loads any Sonora unit as the effect: it is given the context's rate, mono (else stereo)
    /// input from the slot's sends, stereo (else mono) output, and initialized; the slot owns
    /// it from then on (do not render it elsewhere). `invalidOperation` if it takes neither
    /// mono nor stereo or fails to initialize (the reason: `ALDevice.lastError`).
    public func setEffect(unit: AudioUnit) throws(ALError) {
        try device.locked { () throws(ALError) in
            try checkLocked("setEffect(unit:)")
            try install(try makeInstance(unit))
            effectValue = .null
        }
    }

    /// The unit running as the effect now (a `ReverbUnit` for `.reverb`), nil for none or dialogue.
    public var effectUnit: AudioUnit? { device.locked { instance?.unit } }

    /// AL_EFFECTSLOT_GAIN, 0…1 (default 1): the effect's output level.
    public var gain: Float {
        get { device.locked { gainValue } }
        set { try? setGain(newValue) }
    }

    public func setGain(_ gain: Float) throws(ALError) {
        try device.locked { () throws(ALError) in
            try checkLocked("gain")
            guard (0...1).contains(gain) else { throw context.recordLocked(.invalidValue, "ALAuxiliaryEffectSlot.gain \(gain): 0…1") }
            gainValue = gain
            try sendLocked()
        }
    }

    /// AL_EFFECTSLOT_AUXILIARY_SEND_AUTO (default true): sends to this slot follow the
    /// reverb's room rolloff and decay with distance.
    public var sendsAuto: Bool {
        get { device.locked { sendsAutoValue } }
        set {
            device.locked {
                guard !isDeleted else { return }
                sendsAutoValue = newValue
                context.globalsChangedLocked()
            }
        }
    }

    /// Deletes the slot (alDeleteAuxiliaryEffectSlots): `invalidOperation` while a source sends to it.
    public func delete() throws(ALError) {
        try device.locked { () throws(ALError) in
            try checkLocked("delete")
            if context.sources.contains(where: { source in source.sends.contains { $0.slot === self } }) {
                throw context.recordLocked(.invalidOperation, "ALAuxiliaryEffectSlot.delete: a source still sends to the slot")
            }
            try install(nil)
            isDeleted = true
            context.releaseEffectSlotLocked(self)
        }
    }

    // MARK: Internals (under the device's lock)

    private func checkLocked(_ call: String) throws(ALError) {
        try context.checkLiveLocked("ALAuxiliaryEffectSlot.\(call)")
        if isDeleted { throw context.recordLocked(.invalidName, "ALAuxiliaryEffectSlot.\(call): the slot is deleted") }
    }

    private func makeInstance(_ unit: AudioUnit) throws(ALError) -> ALEffectInstance {
        do throws(ALError) {
            return try ALEffectInstance(unit: unit, frequency: device.frequency, maximumFrames: ALDevice.maximumFrames)
        } catch {
            throw context.recordLocked(error, "ALAuxiliaryEffectSlot: \(unit.name) cannot run as an effect (\(ALDevice.lastError ?? "?"))")
        }
    }

    /// Hands `made` to the render side, retires the effect it replaces, and re-sends every
    /// source's levels (a slot without effect takes no sends).
    private func install(_ made: ALEffectInstance?) throws(ALError) {
        let replaced = instance
        instance = made
        try sendLocked()
        // Retired after the command that lets go of it, so it outlives the render side's use.
        if let replaced { context.renderer.bank.retire(replaced) }
        context.globalsChangedLocked()
    }

    private func sendLocked() throws(ALError) {
        guard context.renderer.bank.send(.effectSlot(slot: bus, effect: instance?.state, gain: gainValue)) else {
            throw context.recordLocked(.outOfMemory, "the context's command queue is full (is the device rendering?)")
        }
        context.pushLocked()
    }
}
