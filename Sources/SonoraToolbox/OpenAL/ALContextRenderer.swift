import Foundation
import SonoraCore
import SonoraDSP
import SonoraUnits
import Synchronization

/// A context's render side: one 3D mixer unit (`aumx/3dem/appl`) whose input elements are
/// the sources' voices — the first `monoCount` mono, the rest stereo (OpenAL plays stereo
/// buffers unspatialized). The API feeds each input the final gain (dB), azimuth, elevation,
/// distance and playback rate it computed; the unit's own distance attenuation is off.
final class ALContextRenderer: @unchecked Sendable {
    typealias Parameter = Mixer3DUnit.Parameter
    /// The highest pitch × doppler a source plays at (OpenAL Soft's limit).
    static let maximumRate: Float = 255
    /// Taps of the HRTF responses (OpenAL Soft 1.19's default set has 32 per ear).
    static let hrtfTaps = 32

    let mixer: Mixer3DUnit
    let bank: ALVoiceBank
    let monoCount: Int
    let stereoCount: Int
    private let output: OwnedAudioBufferList
    /// The output's buffers, held as a value so the render side touches no reference.
    private let outputList: AudioBufferList
    private let mixerReference: Unmanaged<AudioUnit>
    private let mixer3DReference: Unmanaged<Mixer3DUnit>
    private let bankReference: Unmanaged<ALVoiceBank>
    /// Suspended contexts are not rendered: their sources stay where they are.
    let suspended = Atomic<Bool>(false)
    @exclusivity(unchecked) private var sampleTime: Double = 0

    // Control side.
    private var freeElements: [Int]

    /// `channels` 1 mixes stereo and folds it down (the unit's outputs are 2, 4 or 6 channels).
    init(frequency: Int, channels: Int, monoSources: Int, stereoSources: Int, hrtf: Bool, maximumFrames: Int) throws(ALError) {
        monoCount = monoSources
        stereoCount = stereoSources
        let inputs = monoSources + stereoSources
        do {
            let mixed = channels == 1 ? 2 : channels
            mixer = Mixer3DUnit(inputs: inputs)
            bank = try ALVoiceBank(count: inputs)
            output = try OwnedAudioBufferList(channelCount: mixed, frameCapacity: maximumFrames)
            let rate = Double(frequency)
            try mixer.setStreamFormat(.canonical(sampleRate: rate, channels: mixed), scope: .output, element: 0)
            for element in 0..<inputs {
                try mixer.setStreamFormat(.canonical(sampleRate: rate, channels: element < monoSources ? 1 : 2), scope: .input, element: element)
                try mixer.setRenderCallback(
                    RenderCallback(function: ALVoice.callback, context: UnsafeMutableRawPointer(bank.voices + element)), input: element)
                if element < monoSources {
                    // A mono voice at the buffer's rate lends the buffer itself (no copy per render).
                    try mixer.setInputLender(
                        Mixer3DInputLender(function: ALVoice.lender, context: UnsafeMutableRawPointer(bank.voices + element)), element: element)
                }
            }
            try mixer.setMaximumFramesPerSlice(maximumFrames)
            try mixer.setProperty(.auxiliaryBusCount, scope: .global, element: 0, to: .elementCount(ALVoiceBank.slotCount))
            try Self.configureInputs(mixer, count: inputs, stereoFrom: monoSources, hrtf: hrtf)
            // As OpenAL Soft's sets: minimum-phase responses of 32 taps after their onset delay.
            if hrtf { try mixer.setCompactHRTF(taps: Self.hrtfTaps) }
            try mixer.initialize()
            for element in 0..<inputs {
                _ = try mixer.setParameter(Parameter.enable, scope: .input, element: element, to: 0)
            }
        } catch {
            ALDevice.noteOpenFailure("ALContext: the 3D mixer for \(inputs) sources: \(error.message)")
            throw .outOfMemory
        }
        outputList = output.list
        mixerReference = Unmanaged.passUnretained(mixer)
        mixer3DReference = Unmanaged.passUnretained(mixer)
        bankReference = Unmanaged.passUnretained(bank)
        do {
            let unit: Mixer3DUnit = mixer
            var parameters: [Mixer3DUnit.ResolvedInputParameter] = []
            for id in Self.slots { parameters.append(try unit.resolveInputParameter(id)) }
            resolved = parameters
        } catch {
            ALDevice.noteOpenFailure("ALContext: the 3D mixer's input parameters: \(error.message)")
            throw .outOfMemory
        }
        freeElements = Array((0..<inputs).reversed())
        var initial = [Float](repeating: .nan, count: Self.stride)
        initial[5] = 0
        // EFX values start at the unit's defaults: shelves flat, sends off.
        for slot in 6..<Self.slots.count { initial[slot] = 0 }
        for bus in 0..<ALVoiceBank.slotCount { initial[8 + 3 * bus] = -120 }
        let values = max(1, inputs) * Self.stride
        sent = .allocate(capacity: values)
        wanted = .allocate(capacity: values)
        for element in 0..<inputs {
            (sent + element * Self.stride).initialize(from: initial, count: Self.stride)
            (wanted + element * Self.stride).initialize(from: initial, count: Self.stride)
        }
        isPending = Array(repeating: false, count: inputs)
        gainMemo = .allocate(capacity: 2 * max(1, inputs))
        gainMemo.initialize(repeating: .nan, count: 2 * max(1, inputs))
    }

    deinit {
        mixer.uninitialize()
        sent.deallocate()
        wanted.deallocate()
        gainMemo.deallocate()
        changes.deallocate()
    }

    /// The unit's distance attenuation and doppler off (the API computes both, by OpenAL's
    /// rules); mono inputs panned (or HRTF when asked), stereo inputs passed through.
    private static func configureInputs(_ mixer: Mixer3DUnit, count: Int, stereoFrom: Int, hrtf: Bool) throws(AudioError) {
        for element in 0..<count {
            let stereo = element >= stereoFrom
            try mixer.setProperty(.renderingFlags, scope: .input, element: element, to: .renderingFlags(stereo ? [] : [.interAuralDelay]))
            let algorithm: Mixer3DUnit.SpatializationAlgorithm = stereo ? .stereoPassThrough : hrtf ? .hrtf : .equalPowerPanning
            try mixer.setProperty(.spatializationAlgorithm, scope: .input, element: element, to: .spatializationAlgorithm(algorithm))
        }
    }

    // MARK: Elements

    /// A free input of the kind (mono/stereo), or nil.
    func takeElement(stereo: Bool) -> Int? {
        guard let index = freeElements.lastIndex(where: { ($0 >= monoCount) == stereo }) else { return nil }
        return freeElements.remove(at: index)
    }

    func returnElement(_ element: Int) {
        setEnabled(false, element: element)
        freeElements.append(element)
    }

    func isStereo(_ element: Int) -> Bool { element >= monoCount }

    // MARK: Parameters (control side)
    //
    // What each input should have is kept here and sent only where it differs from what the
    // unit has, a bounded number at a time: the unit's command queue holds 1024 commands per
    // render cycle, and 256 moving sources change 1280 values.

    /// The unit takes at most this many parameter changes between two renders of ours.
    static let unitCommandBudget = 700
    private static let slots: [AudioUnitParameterID] = [
        Parameter.azimuth, Parameter.elevation, Parameter.distance, Parameter.gain, Parameter.playbackRate, Parameter.enable,
        Parameter.directHighFrequencyGain, Parameter.directLowFrequencyGain,
    ] + (0..<ALVoiceBank.slotCount).flatMap { bus in
        [Parameter.auxiliarySendLevel(bus), Parameter.auxiliarySendHighFrequencyGain(bus), Parameter.auxiliarySendLowFrequencyGain(bus)]
    }
    /// `slots` resolved in the unit once (no dictionary lookup per value sent).
    private let resolved: [Mixer3DUnit.ResolvedInputParameter]
    /// Values kept per input in `wanted` and `sent` (`slots.count` used).
    private static let stride = 32
    // Control side only, under the device's lock: no dynamic exclusivity checks (they were a
    // visible share of a 256-source update).
    /// Per input, `stride` apart: [azimuth, elevation, distance, gain dB, playback rate, enable,
    /// direct HF dB, direct LF dB, then per auxiliary bus: level dB, HF dB, LF dB] wanted, and
    /// last sent. Raw memory: an array of SIMD32 read by a variable index went through a copy
    /// of the vector per read.
    private let wanted: UnsafeMutablePointer<Float>
    private let sent: UnsafeMutablePointer<Float>
    /// Per input [linear gain, its dB as sent] of the last `apply` (NaN: none yet).
    private let gainMemo: UnsafeMutablePointer<Float>
    @exclusivity(unchecked) private var pending: [Int] = []
    @exclusivity(unchecked) private var isPending: [Bool]
    /// Changes sent since the unit last took its commands.
    @exclusivity(unchecked) private var unsent = 0
    /// The changes one `sendPending` collects (at most the budget) for `flushChanges`.
    private let changes = UnsafeMutablePointer<Mixer3DUnit.InputParameterChange>.allocate(capacity: ALContextRenderer.unitCommandBudget)
    @exclusivity(unchecked) private var changeCount = 0
    /// Counts renders that began (so the control side can tell the unit took what it sent).
    private let rendersBegun = Atomic<Int>(0)

    private func markPending(_ element: Int) {
        guard !isPending[element] else { return }
        isPending[element] = true
        pending.append(element)
    }

    func setEnabled(_ on: Bool, element: Int) {
        wanted[element * Self.stride + 5] = on ? 1 : 0
        markPending(element)
    }

    /// Records the source's mix parameters for its input; returns the rate the voice plays
    /// its buffers at (pitch × doppler, beyond the buffer's own frequency).
    ///
    /// The voice resamples by linear interpolation as it reads the buffer, as OpenAL Soft
    /// 1.19's default resampler does, and the unit's input stays at rate 1: its libsoxr rate
    /// stage (for the unit's own playback-rate parameter) would cost a second pass per source,
    /// several times the rest of a panned source's mix, whenever a source moves (doppler).
    func apply(_ spatial: ALSpatialization, effects: ALEffectsMix, element: Int) -> Double {
        let total = min(max(spatial.rate.isNaN ? 1 : spatial.rate, 0), Self.maximumRate)
        let stereo = isStereo(element)
        let values = wanted + element * Self.stride
        values[0] = stereo ? 0 : spatial.azimuth
        values[1] = stereo ? 0 : spatial.elevation
        values[2] = min(spatial.distance, 10000)
        let gain = spatial.gain * effects.directGain
        // A source whose gain did not change (distance, cone and gains as before: most, from
        // one update to the next) reuses its dB rather than call `log10f` again.
        let memo = gainMemo + 2 * element
        if memo[0] != gain {
            memo[0] = gain
            memo[1] = min(gain > 0 ? max(20 * log10f(gain), -120) : -120, 20)
        }
        values[3] = memo[1]
        values[4] = 1
        values[6] = effects.directHighDB
        values[7] = effects.directLowDB
        for bus in 0..<ALVoiceBank.slotCount {
            values[8 + 3 * bus] = min(effects.sendLevelDB[bus], 20)
            values[9 + 3 * bus] = effects.sendHighDB[bus]
            values[10 + 3 * bus] = effects.sendLowDB[bus]
        }
        markPending(element)
        return Double(total)
    }

    /// Sends pending changes, at most `budget` less what the unit has not taken yet. True
    /// when nothing is left to send.
    func sendPending() -> Bool {
        let count = resolved.count
        while let element = pending.last {
            // Each slot compared once (into a bit mask).
            let wantedValues = wanted + element * Self.stride
            let sentValues = sent + element * Self.stride
            var moved: UInt32 = 0
            // Four slots at a time: most are exactly what was sent (the EFX slots, the enable,
            // and within a slot's tolerance whatever a moving source keeps), so only a group with
            // a slot unequal (`!=`, as `differs` first asks; NaN included) is looked at slot by
            // slot. `stride` leaves room for the last group's load.
            for group in Swift.stride(from: 0, to: count, by: 4) {
                let sentGroup = UnsafeRawPointer(sentValues + group).loadUnaligned(as: SIMD4<Float>.self)
                let wantedGroup = UnsafeRawPointer(wantedValues + group).loadUnaligned(as: SIMD4<Float>.self)
                guard any(sentGroup .!= wantedGroup) else { continue }
                for slot in group..<min(group + 4, count) where Self.differs(sentValues[slot], wantedValues[slot], slot: slot) {
                    moved |= 1 << UInt32(slot)
                }
            }
            let changed = moved.nonzeroBitCount
            if unsent + changed > Self.unitCommandBudget {
                flushChanges()
                return false
            }
            resolved.withUnsafeBufferPointer { parameters in
                while moved != 0 {
                    let slot = moved.trailingZeroBitCount
                    moved &= moved - 1
                    sentValues[slot] = wantedValues[slot]
                    (changes + changeCount).initialize(to: .init(parameters[slot], element: element, value: wantedValues[slot]))
                    changeCount += 1
                }
            }
            unsent += changed
            pending.removeLast()
            isPending[element] = false
        }
        flushChanges()
        return true
    }

    /// Hands the changes collected by `sendPending` to the unit in one call (it reaches its
    /// tables and publishes its commands once, not once per value).
    private func flushChanges() {
        guard changeCount > 0 else { return }
        let batch = UnsafeBufferPointer(start: changes, count: changeCount)
        do {
            try mixer.setInputParameters(batch)
        } catch {
            // Not with parameters resolved in this unit for its own inputs; if ever, each alone.
            for change in batch { try? mixer.setInputParameter(change.parameter, element: change.element, to: change.value) }
        }
        changes.deinitialize(count: changeCount)
        changeCount = 0
    }

    /// Whether a wanted value (NaN: never set) must be sent: it moved from what the unit has
    /// by more than the slot's tolerance — 0.01° of azimuth or elevation, 0.01 % of distance,
    /// 0.001 dB of a gain or shelf, exactly for the rate and enable. A source moving on a
    /// circle recomputes its distance, elevation and gain with float noise at every update;
    /// sending that noise (inaudible) would overflow the unit's command budget at 256 sources
    /// and split each render into a catch-up slice and the rest. Compared with what was sent,
    /// so slow changes add up until they are sent.
    private static func differs(_ sent: Float, _ wanted: Float, slot: Int) -> Bool {
        guard !wanted.isNaN else { return false }
        guard !sent.isNaN, sent != wanted else { return sent.isNaN }
        let tolerance: Float
        switch slot {
        case 0, 1: tolerance = 0.01
        case 2: tolerance = 1e-4 * abs(wanted)
        case 4, 5: return true
        default: tolerance = 0.001
        }
        return abs(sent - wanted) > tolerance
    }

    /// A render of ours ran since (loopback: on this thread): the unit took everything sent.
    func unitTookCommands() { unsent = 0 }

    /// Sends everything pending, waiting for the device's renders when the unit's queue would
    /// overflow (a playback device; the render runs on its own thread). Gives up waiting after
    /// half a second (a stopped device) and sends on.
    func sendAllPending() {
        while !sendPending() {
            let seen = rendersBegun.load(ordering: .acquiring)
            for _ in 0..<500 where rendersBegun.load(ordering: .acquiring) == seen && !suspended.load(ordering: .acquiring) {
                usleep(1000)
            }
            unsent = 0
        }
    }

    // MARK: Render side

    /// Renders the context's mix and adds it into `output` (realtime).
    func render(adding destination: AudioBufferList, frameCount: Int) {
        guard !suspended.load(ordering: .acquiring) else { return }
        rendersBegun.add(1, ordering: .acquiringAndReleasing)
        bankReference._withUnsafeGuaranteedRef { $0.applyCommands() }
        let list = outputList.frames(from: 0, count: frameCount)
        var flags = RenderActionFlags()
        let status = mixerReference._withUnsafeGuaranteedRef {
            $0.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: sampleTime), bus: 0, frameCount: frameCount, into: list)
        }
        sampleTime += Double(frameCount)
        guard status == .noError else { return }
        renderEffects(into: list, frameCount: frameCount)
        // Positions as heard: each voice's read position less what the mixer's resampler holds.
        mixer3DReference._withUnsafeGuaranteedRef { mixer in
            bankReference._withUnsafeGuaranteedRef { bank in
                for element in 0..<bank.count { bank.voices[element].publishHeard(ahead: mixer.inputFramesAhead(element: element)) }
            }
        }
        if destination.channelCount == 1 {
            // A mono device: both sides, at the power of one.
            Mixing.add(UnsafePointer(list.samples(0)), into: destination.samples(0), count: frameCount, gain: 0.70710677)
            Mixing.add(UnsafePointer(list.samples(1)), into: destination.samples(0), count: frameCount, gain: 0.70710677)
            return
        }
        for channel in 0..<min(list.channelCount, destination.channelCount) {
            Mixing.add(UnsafePointer(list.samples(channel)), into: destination.samples(channel), count: frameCount, gain: 1)
        }
    }

    /// Each effect slot's effect on its auxiliary bus, added into the mix (realtime).
    private func renderEffects(into list: AudioBufferList, frameCount: Int) {
        let slots = bankReference._withUnsafeGuaranteedRef { $0.slots }
        for index in 0..<ALVoiceBank.slotCount {
            guard let effect = slots[index].effect,
                let bus = mixer3DReference._withUnsafeGuaranteedRef({ $0.auxiliaryBus(index) })
            else { continue }
            effect.pointee.render(input: bus, frames: frameCount, gain: slots[index].gain, into: list)
        }
    }
}
