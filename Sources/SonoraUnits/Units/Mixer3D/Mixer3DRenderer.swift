import SonoraCore
import SonoraDSP
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The 3D mixer's render side: every input's voice, scratch buffers, the reverb. Built at
/// initialize, reached through one raw pointer; `render` neither allocates nor locks.
struct Mixer3DRenderer {
    /// Kinds of `RealtimeMessage` the unit sends (its `value`).
    enum Message {
        static let settings: Double = 1
    }

    /// Parameter slots of element 0 (input parameters of element e are at slot + e).
    struct Slots {
        var azimuth = 0, elevation = 0, distance = 0, gain = 0, playbackRate = 0, enable = 0
        var minimumGain = 0, maximumGain = 0, reverbBlend = 0, occlusion = 0, obstruction = 0
        var outputGain = 0, reverbGain = 0
        var directHighShelf = 0, directLowShelf = 0

        init(unit: AudioUnit, inputCount: Int) throws(AudioError) {
            func slot(_ id: AudioUnitParameterID, _ scope: AudioUnitScope) throws(AudioError) -> Int {
                try unit.parameterSlot(ParameterAddress(id, scope: scope, element: 0))
            }
            typealias P = Mixer3DUnit.Parameter
            if inputCount > 0 {
                azimuth = try slot(P.azimuth, .input)
                elevation = try slot(P.elevation, .input)
                distance = try slot(P.distance, .input)
                gain = try slot(P.gain, .input)
                playbackRate = try slot(P.playbackRate, .input)
                enable = try slot(P.enable, .input)
                minimumGain = try slot(P.minimumGain, .input)
                maximumGain = try slot(P.maximumGain, .input)
                reverbBlend = try slot(P.reverbBlend, .input)
                occlusion = try slot(P.occlusionAttenuation, .input)
                obstruction = try slot(P.obstructionAttenuation, .input)
                directHighShelf = try slot(P.directHighFrequencyGain, .input)
                directLowShelf = try slot(P.directLowFrequencyGain, .input)
            }
            outputGain = try slot(P.gain, .output)
            reverbGain = try slot(P.globalReverbGain, .output)
        }
    }

    /// Input frames a rate stage may hold for its resampler (2× a slice, and the look-ahead).
    static func rateCapacity(_ maximumFrames: Int) -> Int { 2 * maximumFrames + 64 }

    let slots: Slots
    var settings: UnsafeMutablePointer<Mixer3DInputSettings>
    let voices: UnsafeMutablePointer<Mixer3DVoice>
    let voiceCount: Int
    let outputChannels: Int
    let sampleRate: Double
    let maximumFrames: Int
    /// Planar scratch: the input's channels (2), the ears (2), the reverb send, and interleaved room.
    let scratch: UnsafeMutablePointer<Float>
    let source: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    let ears: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    let send: UnsafeMutablePointer<Float>
    let interleaved: UnsafeMutablePointer<Float>
    /// Speaker azimuth of each output channel (NaN for LFE), for vector-based panning.
    let speakers: UnsafeMutablePointer<Float>
    let targets: UnsafeMutablePointer<Float>
    var reverb: Mixer3DReverb
    /// Frames the reverb's tail still rings after the last send.
    var reverbTail = 0
    /// Auxiliary send buses (`maximumFrames` each), and the parameter slots of their level,
    /// high shelf and low shelf for element 0: [level 0…3, HF 0…3, LF 0…3].
    let auxiliaryBusCount: Int
    let auxiliaryBuses: UnsafeMutablePointer<Float>
    let auxiliarySlots: UnsafeMutablePointer<Int>
    /// Frames of each auxiliary bus written since it was last cleared: a bus no input sends
    /// to (every bus of a context without effects) is not cleared at every render again.
    let auxiliaryWritten: UnsafeMutablePointer<Int>
    /// Scratch for a send: the input's channels summed, and that through the send's shelves.
    let sendSum: UnsafeMutablePointer<Float>
    let sendFiltered: UnsafeMutablePointer<Float>

    // Metering: one meter per metered channel of each input, then one per output channel.
    let meters: UnsafeMutablePointer<LevelMeter>
    let meterCount: Int
    /// See `Mixer3DUnit.meterSlotTable()`.
    let meterSlots: UnsafeMutablePointer<Int>
    let meteredInputChannels: Int
    /// MeteringMode of each input, then the output's: written by the control side at any time.
    let meteringFlags: UnsafeMutablePointer<Atomic<Bool>>
    /// What the render side last saw of each flag, to restart meters on a switch.
    let meteringSeen: UnsafeMutablePointer<Bool>

    init(
        slots: Slots, settings: UnsafeMutablePointer<Mixer3DInputSettings>, resamplers: [VariableRateResampler], resamplerDelays: [Int],
        binaural: [[BinauralRenderer]],
        inputChannels: [Int], outputChannels: Int, sampleRate: Double, maximumFrames: Int,
        meterSlots table: [Int], meteredInputChannels: Int, metering: [Bool], auxiliaryBusCount: Int = 0,
        auxiliarySlots: [Int] = []
    ) {
        self.slots = slots
        self.settings = settings
        self.outputChannels = outputChannels
        self.sampleRate = sampleRate
        self.maximumFrames = maximumFrames
        voiceCount = inputChannels.count
        // The longest interaural delay plus the interpolator's reach, as a power of two.
        let longest = Int((SpatialPanning.interauralDelay(azimuth: 90, elevation: 0) * sampleRate).rounded(.up)) + 8
        var ringSize = 16
        while ringSize < longest { ringSize *= 2 }
        voices = .allocate(capacity: max(1, voiceCount))
        for (element, channels) in inputChannels.enumerated() {
            let rate = Mixer3DRateStage(
                resampler: resamplers[element], channels: channels, capacity: Self.rateCapacity(maximumFrames),
                primingDelay: resamplerDelays[element])
            (voices + element).initialize(to: Mixer3DVoice(rate: rate, channels: channels, ringSize: ringSize))
            let renderers = binaural[element].map { Unmanaged.passUnretained($0) }
            voices[element].binaural = (renderers.first, renderers.count > 1 ? renderers[1] : nil)
        }
        let stride = maximumFrames
        scratch = .allocate(capacity: stride * 5 + 2 * (2 * maximumFrames + 64))
        scratch.initialize(repeating: 0, count: stride * 5 + 2 * (2 * maximumFrames + 64))
        source = .allocate(capacity: 2)
        source[0] = scratch
        source[1] = scratch + stride
        ears = .allocate(capacity: 2)
        ears[0] = scratch + 2 * stride
        ears[1] = scratch + 3 * stride
        send = scratch + 4 * stride
        interleaved = scratch + 5 * stride
        speakers = .allocate(capacity: Mixer3DVoice.maximumOutputs)
        speakers.initialize(repeating: .nan, count: Mixer3DVoice.maximumOutputs)
        if let layout = SpatialPanning.speakers(channels: outputChannels) {
            for (channel, azimuth) in layout.enumerated() { speakers[channel] = azimuth ?? .nan }
        }
        targets = .allocate(capacity: 2 * Mixer3DVoice.maximumOutputs)
        targets.initialize(repeating: 0, count: 2 * Mixer3DVoice.maximumOutputs)
        reverb = Mixer3DReverb(sampleRate: sampleRate)
        self.auxiliaryBusCount = auxiliaryBusCount
        auxiliaryBuses = .allocate(capacity: max(1, auxiliaryBusCount) * maximumFrames)
        auxiliaryBuses.initialize(repeating: 0, count: max(1, auxiliaryBusCount) * maximumFrames)
        auxiliaryWritten = .allocate(capacity: max(1, auxiliaryBusCount))
        auxiliaryWritten.initialize(repeating: 0, count: max(1, auxiliaryBusCount))
        self.auxiliarySlots = .allocate(capacity: 3 * Mixer3DUnit.maximumAuxiliaryBuses)
        self.auxiliarySlots.initialize(repeating: 0, count: 3 * Mixer3DUnit.maximumAuxiliaryBuses)
        for (index, slot) in auxiliarySlots.prefix(3 * Mixer3DUnit.maximumAuxiliaryBuses).enumerated() { self.auxiliarySlots[index] = slot }
        sendSum = .allocate(capacity: 2 * maximumFrames)
        sendSum.initialize(repeating: 0, count: 2 * maximumFrames)
        sendFiltered = sendSum + maximumFrames
        self.meteredInputChannels = meteredInputChannels
        meterCount = inputChannels.count * meteredInputChannels + outputChannels
        meters = .allocate(capacity: max(1, meterCount))
        meters.initialize(repeating: LevelMeter(sampleRate: sampleRate, averagingTime: 0.3, peakDecayTime: 1.5), count: meterCount)
        meterSlots = .allocate(capacity: max(1, table.count))
        meterSlots.initialize(from: table, count: table.count)
        meteringFlags = .allocate(capacity: metering.count)
        meteringSeen = .allocate(capacity: metering.count)
        for (index, on) in metering.enumerated() {
            (meteringFlags + index).initialize(to: Atomic(on))
            meteringSeen[index] = on
        }
    }

    func deallocate() {
        for element in 0..<voiceCount { voices[element].deallocate() }
        voices.deinitialize(count: voiceCount)
        voices.deallocate()
        scratch.deallocate()
        source.deallocate()
        ears.deallocate()
        speakers.deallocate()
        targets.deallocate()
        reverb.deallocate()
        auxiliaryBuses.deallocate()
        auxiliaryWritten.deallocate()
        auxiliarySlots.deallocate()
        sendSum.deallocate()
        meters.deallocate()
        meterSlots.deallocate()
        meteringFlags.deallocate()
        meteringSeen.deallocate()
    }

    mutating func reset() {
        for element in 0..<voiceCount { voices[element].reset() }
        reverb.reset()
        reverbTail = 0
        for index in 0..<meterCount { meters[index].reset() }
    }

    // MARK: Render

    mutating func render(_ context: RenderContext) -> AudioError.Code {
        let frames = context.frameCount
        let output = context.output
        output.clear()
        guard frames > 0 else { return .noError }
        send.update(repeating: 0, count: frames)
        // A bus holds zeros beyond what was written since its last clear.
        for bus in 0..<auxiliaryBusCount where auxiliaryWritten[bus] > 0 {
            (auxiliaryBuses + bus * maximumFrames).update(repeating: 0, count: auxiliaryWritten[bus])
            auxiliaryWritten[bus] = 0
        }
        let outputGain = Self.gain(decibels: context.parameter(slots.outputGain))
        let reverbGain = Self.gain(decibels: context.parameter(slots.reverbGain))
        var sending = false
        for element in 0..<min(voiceCount, context.inputCount) {
            // Every parameter is read once per slice, so ramps advance whether or not the input plays.
            let azimuth = context.parameter(slots.azimuth + element)
            let elevation = context.parameter(slots.elevation + element)
            let distance = context.parameter(slots.distance + element)
            let gainDB = context.parameter(slots.gain + element)
            let rate = context.parameter(slots.playbackRate + element)
            let enabled = context.parameter(slots.enable + element) >= 0.5
            let minimumDB = context.parameter(slots.minimumGain + element)
            let maximumDB = context.parameter(slots.maximumGain + element)
            let blend = context.parameter(slots.reverbBlend + element)
            let occlusionDB = context.parameter(slots.occlusion + element)
            let obstructionDB = context.parameter(slots.obstruction + element)
            let directHighDB = context.parameter(slots.directHighShelf + element)
            let directLowDB = context.parameter(slots.directLowShelf + element)
            let voice = voices + element
            guard enabled else {
                voice.pointee.hasState = false
                continue
            }
            let setting = settings[element]
            let channels = voice.pointee.channels
            var playbackRate = rate
            if setting.flags.contains(.dopplerShift) {
                playbackRate = min(max(rate * doppler(voice, distance: distance, frames: frames), 0.5), 2)
            } else {
                voice.pointee.lastDistance = distance
                voice.pointee.velocity = 0
            }
            // The rate stage writes resampled frames into the scratch, or points `source` at the
            // pulled buffer (rate 1), which is copied only before a filter works in place.
            useScratchSource()
            let status = voice.pointee.rate.produce(
                context, element: element, rate: playbackRate, frames: frames, into: source, interleaved: interleaved)
            if status != .noError { return status }

            // The input's gain: its own, distance, clamps, then the output's.
            var decibels = gainDB
            if setting.flags.contains(.distanceAttenuation) {
                let curve: Mixer3DUnit.AttenuationCurve = setting.flags.contains(.linearDistanceAttenuation) ? .linear : setting.curve
                decibels += curve.attenuationDB(atDistance: distance, setting.distance)
            }
            decibels = min(max(decibels, minimumDB), maximumDB)
            let inputGain = voice.pointee.inputGain(decibels: decibels) * outputGain
            // Occlusion and obstruction: a quarter of the attenuation broadband, the rest by the low-pass at 5 kHz.
            let occlusionGain = Self.gain(decibels: occlusionDB / 4)
            let obstructionGain = Self.gain(decibels: obstructionDB / 4)
            // No blend (the default) is exactly dry 1, wet 0: the sines are skipped.
            let fraction = Double(blend) / 100
            let dry = blend == 0 ? 1 : Float(sin((1 - fraction) * .pi / 2)), wet = blend == 0 ? 0 : Float(sin(fraction * .pi / 2))
            let directGain = inputGain * dry * occlusionGain * obstructionGain
            let sendTarget = inputGain * wet * occlusionGain

            if meteringOn(element, context: context) {
                meterInput(element, channels: channels, frames: frames, gain: directGain, context: context)
            }
            // Occlusion and obstruction: a quarter of the attenuation is broadband (above), the rest the
            // low-pass's at 5 kHz; the distance filter adds air absorption to the direct sound's low-pass.
            var directLowPass = obstructionDB * 0.75
            if setting.flags.contains(.distanceFilter) {
                let beyond = min(max(distance, setting.distance.referenceDistance), setting.distance.maximumDistance)
                    - setting.distance.referenceDistance
                directLowPass += max(-60, -Self.airAbsorption * beyond)
            }
            updateFilters(voice, occlusionDB: occlusionDB * 0.75, obstructionDB: max(-100, directLowPass))
            if voice.pointee.occlusionDB < 0 {
                makeSourceWritable(channels: channels, frames: frames)
                for channel in 0..<channels { voice.pointee.filters[channel].process(source[channel], count: frames) }
            }
            if sendTarget > 0 || voice.pointee.sendGain > 0 {
                addSend(voice, target: sendTarget, channels: channels, frames: frames)
                sending = true
            }
            if auxiliaryBusCount > 0 {
                addAuxiliarySends(voice, element: element, channels: channels, frames: frames, context: context)
            }
            applyDirectShelves(voice, highDB: directHighDB, lowDB: directLowDB, channels: channels, frames: frames)
            if voice.pointee.obstructionDB < 0 {
                makeSourceWritable(channels: channels, frames: frames)
                for channel in 0..<channels { voice.pointee.filters[2 + channel].process(source[channel], count: frames) }
            }

            var algorithm = setting.algorithm
            if outputChannels != 2 && algorithm != .stereoPassThrough { algorithm = .vectorBasedPanning }
            if algorithm != voice.pointee.algorithm {
                // The head's delay line was not fed meanwhile: start it from silence, not stale samples.
                if algorithm == .sphericalHead && voice.pointee.hasState { voice.pointee.restartHead() }
                voice.pointee.algorithm = algorithm
            }
            switch algorithm {
            case .hrtf:
                renderBinaural(voice, azimuth: azimuth, elevation: elevation, gain: directGain, frames: frames, output: output)
            case .sphericalHead:
                renderHead(
                    voice, azimuth: azimuth, elevation: elevation, gain: directGain,
                    delays: setting.flags.contains(.interAuralDelay), frames: frames, output: output)
            default:
                placeByGains(voice, algorithm: algorithm, azimuth: azimuth, elevation: elevation, gain: directGain)
                mixByGains(voice, frames: frames, output: output)
            }
            voice.pointee.hasState = true
        }
        if sending { reverbTail = Int(sampleRate * 3) }
        if reverbTail > 0 {
            reverb.process(send, count: frames, left: ears[0], right: ears[1])
            mixReverb(gain: reverbGain, frames: frames, output: output)
            reverbTail = max(0, reverbTail - frames)
        }
        if meteringOn(voiceCount, context: context) { meterOutput(output, frames: frames, context: context) }
        return .noError
    }

    // MARK: The input's samples

    /// Points `source` at the scratch, where the rate stage writes what it resamples.
    @inline(__always)
    func useScratchSource() {
        source[0] = scratch
        source[1] = scratch + maximumFrames
    }

    /// Before a filter works on `source` in place: when it still points at the pulled buffer
    /// (which is not the mixer's to change), its samples go to the scratch first.
    @inline(__always)
    func makeSourceWritable(channels: Int, frames: Int) {
        guard source[0] != scratch else { return }
        for channel in 0..<channels { (scratch + channel * maximumFrames).update(from: source[channel], count: frames) }
        useScratchSource()
    }

    // MARK: Doppler

    /// The pitch factor c / (c + v) of a source whose distance grows at v m/s: v is the distance's
    /// change per second, smoothed over about 50 ms (distances arrive once per render, in steps).
    /// `mutating` though it changes only the voice: called from the mutating `render`, a
    /// non-mutating method that is not inlined got a copy of the renderer (376 bytes, a
    /// `memcpy` per input and slice).
    mutating func doppler(_ voice: UnsafeMutablePointer<Mixer3DVoice>, distance: Float, frames: Int) -> Float {
        guard voice.pointee.hasState else {
            voice.pointee.lastDistance = distance
            voice.pointee.velocity = 0
            return 1
        }
        let seconds = Float(frames) / Float(sampleRate)
        let velocity = (distance - voice.pointee.lastDistance) / seconds
        voice.pointee.lastDistance = distance
        let smoothing = 1 - expf(-seconds / 0.05)
        voice.pointee.velocity += (velocity - voice.pointee.velocity) * smoothing
        let speed = Float(SpatialPanning.speedOfSound)
        return speed / max(speed + voice.pointee.velocity, speed * 0.25)
    }

    // MARK: Metering

    /// Whether element `index` (the output after the inputs) meters this slice. On a switch its
    /// meters restart from silence, and publish silence while off rather than freeze.
    mutating func meteringOn(_ index: Int, context: RenderContext) -> Bool {
        let on = meteringFlags[index].load(ordering: .relaxed)
        guard on != meteringSeen[index] else { return on }
        meteringSeen[index] = on
        if index < voiceCount {
            let channels = meteredInputChannels
            for channel in 0..<channels {
                meters[index * channels + channel].reset()
                if !on { for kind in 0..<4 { context.publish(0, slot: meterSlots[kind * channels + channel] + index) } }
            }
        } else {
            let first = voiceCount * meteredInputChannels
            for channel in 0..<outputChannels {
                meters[first + channel].reset()
                if !on {
                    context.publish(0, slot: meterSlots[4 * meteredInputChannels + channel])
                    context.publish(0, slot: meterSlots[4 * meteredInputChannels + outputChannels + channel])
                }
            }
        }
        return on
    }

    func meterInput(_ element: Int, channels: Int, frames: Int, gain: Float, context: RenderContext) {
        let metered = meteredInputChannels
        for channel in 0..<min(channels, metered) {
            let meter = meters + element * metered + channel
            meter.pointee.measure(source[channel], count: frames)
            // Average power as a mean square (the reading takes the root: Mixer3DUnit.publishesMeanSquare).
            let meanSquare = Float(meter.pointee.meanSquare), peak = Float(meter.pointee.peak)
            context.publish(meanSquare, slot: meterSlots[channel] + element)
            context.publish(peak, slot: meterSlots[metered + channel] + element)
            context.publish(meanSquare * (gain * gain), slot: meterSlots[2 * metered + channel] + element)
            context.publish(peak * gain, slot: meterSlots[3 * metered + channel] + element)
        }
    }

    func meterOutput(_ output: AudioBufferList, frames: Int, context: RenderContext) {
        let first = voiceCount * meteredInputChannels
        let slots = meterSlots + 4 * meteredInputChannels
        for channel in 0..<outputChannels {
            let meter = meters + first + channel
            meter.pointee.measure(output.samples(channel), count: frames)
            context.publish(Float(meter.pointee.meanSquare), slot: slots[channel])
            context.publish(Float(meter.pointee.peak), slot: slots[outputChannels + channel])
        }
    }

    /// dB to linear amplitude; −120 dB and below is silence.
    @inline(__always)
    static func gain(decibels: Float) -> Float {
        // 0 dB (no occlusion, no obstruction, unity gains) is the common case: powf(10, 0) is
        // exactly 1, so skipping it changes nothing but its cost (several per input and slice).
        decibels == 0 ? 1 : decibels <= -120 ? 0 : powf(10, decibels / 20)
    }

    // MARK: Gain-matrix placement (equal power, vector-based, pass-through)

    /// Where a stereo input's channels sit around its azimuth (degrees), as OpenAL Soft places them.
    static let stereoSpread: Float = 30

    @inline(__always)
    static func channelAzimuth(_ azimuth: Float, channel: Int, of channels: Int) -> Float {
        guard channels == 2 else { return azimuth }
        var value = azimuth + (channel == 0 ? -stereoSpread : stereoSpread)
        if value > 180 { value -= 360 }
        if value < -180 { value += 360 }
        return value
    }

    /// Target gains of each input channel into each output channel.
    func placeByGains(
        _ voice: UnsafeMutablePointer<Mixer3DVoice>, algorithm: Mixer3DUnit.SpatializationAlgorithm, azimuth: Float,
        elevation: Float, gain: Float
    ) {
        let channels = voice.pointee.channels
        let stride = Mixer3DVoice.maximumOutputs
        targets.update(repeating: 0, count: 2 * stride)
        if algorithm == .stereoPassThrough {
            if channels == 1 {
                targets[0] = gain * 0.70710678
                targets[1] = gain * 0.70710678
            } else {
                targets[0] = gain
                targets[stride + 1] = gain
            }
            return
        }
        for channel in 0..<channels {
            let channelAzimuth = Self.channelAzimuth(azimuth, channel: channel, of: channels)
            let row = targets + channel * stride
            if outputChannels == 2 {
                let (left, right) = voice.pointee.equalPowerGains(channel: channel, azimuth: channelAzimuth, elevation: elevation)
                row[0] = left * gain
                row[1] = right * gain
            } else {
                SpatialPanning.vectorBasedGains(
                    azimuth: channelAzimuth, elevation: elevation, speakers: speakers, count: outputChannels, into: row)
                for output in 0..<outputChannels { row[output] *= gain }
            }
        }
    }

    /// Adds each input channel into each output channel, the gains moving linearly across the
    /// slice from where they stood to their targets.
    func mixByGains(_ voice: UnsafeMutablePointer<Mixer3DVoice>, frames: Int, output: AudioBufferList) {
        let stride = Mixer3DVoice.maximumOutputs
        let current = voice.pointee.gains
        let fresh = !voice.pointee.hasState
        for channel in 0..<voice.pointee.channels {
            let samples = source[channel]
            if outputChannels == 2 {
                // Stereo (the common case): both sides in one pass over the samples.
                let index = channel * stride
                let start = fresh ? (targets[index], targets[index + 1]) : (current[index], current[index + 1])
                let target = (targets[index], targets[index + 1])
                current[index] = target.0
                current[index + 1] = target.1
                if start != target {
                    Self.addRampedPair(
                        samples, into: output.samples(0), output.samples(1), count: frames, from: start, to: target)
                    continue
                }
            }
            for out in 0..<outputChannels {
                let index = channel * stride + out
                let target = targets[index]
                let start = fresh ? target : current[index]
                current[index] = target
                let destination = output.samples(out)
                if start == target {
                    if target != 0 { Mixing.add(samples, into: destination, count: frames, gain: target) }
                    continue
                }
                Self.addRamped(samples, into: destination, count: frames, from: start, to: target)
            }
        }
    }

    /// `addRamped` into a left and a right output at once (each gain as there, so the same
    /// sums): the samples are read once.
    @inline(__always)
    static func addRampedPair(
        _ samples: UnsafePointer<Float>, into left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>, count: Int,
        from start: (Float, Float), to target: (Float, Float)
    ) {
        let stepLeft = (target.0 - start.0) / Float(count), stepRight = (target.1 - start.1) / Float(count)
        let lanes = SIMD8<Float>(1, 2, 3, 4, 5, 6, 7, 8)
        let startsLeft = SIMD8<Float>(repeating: start.0), stepsLeft = SIMD8<Float>(repeating: stepLeft)
        let startsRight = SIMD8<Float>(repeating: start.1), stepsRight = SIMD8<Float>(repeating: stepRight)
        var frame = 0
        while frame + 8 <= count {
            let positions = SIMD8<Float>(repeating: Float(frame)) + lanes
            let input = UnsafeRawPointer(samples + frame).loadUnaligned(as: SIMD8<Float>.self)
            let l = UnsafeMutableRawPointer(left + frame), r = UnsafeMutableRawPointer(right + frame)
            l.storeBytes(of: l.loadUnaligned(as: SIMD8<Float>.self) + input * (startsLeft + stepsLeft * positions), as: SIMD8<Float>.self)
            r.storeBytes(of: r.loadUnaligned(as: SIMD8<Float>.self) + input * (startsRight + stepsRight * positions), as: SIMD8<Float>.self)
            frame += 8
        }
        while frame < count {
            left[frame] += samples[frame] * (start.0 + stepLeft * Float(frame + 1))
            right[frame] += samples[frame] * (start.1 + stepRight * Float(frame + 1))
            frame += 1
        }
    }

    /// destination[i] += samples[i] · (start + step·(i + 1)), step = (target − start) / count:
    /// a gain moving linearly to `target` at the last frame. Eight frames per SIMD register,
    /// each gain computed as the scalar form does (the same products, so the same sums);
    /// the compiler does not vectorize the scalar loop (the pointers may alias).
    @inline(__always)
    static func addRamped(
        _ samples: UnsafePointer<Float>, into destination: UnsafeMutablePointer<Float>, count: Int, from start: Float, to target: Float
    ) {
        let step = (target - start) / Float(count)
        let lanes = SIMD8<Float>(1, 2, 3, 4, 5, 6, 7, 8)
        let starts = SIMD8<Float>(repeating: start), steps = SIMD8<Float>(repeating: step)
        var frame = 0
        while frame + 8 <= count {
            let gains = starts + steps * (SIMD8<Float>(repeating: Float(frame)) + lanes)
            let input = UnsafeRawPointer(samples + frame).loadUnaligned(as: SIMD8<Float>.self)
            let output = UnsafeMutableRawPointer(destination + frame)
            output.storeBytes(of: output.loadUnaligned(as: SIMD8<Float>.self) + input * gains, as: SIMD8<Float>.self)
            frame += 8
        }
        while frame < count {
            destination[frame] += samples[frame] * (start + step * Float(frame + 1))
            frame += 1
        }
    }

    // MARK: Spherical head

    /// Interaural delay (a fractional delay on the far ear, moving linearly across the slice)
    /// and head shadow (Brown–Duda's shelf on each ear), for each input channel.
    mutating func renderHead(
        _ voice: UnsafeMutablePointer<Mixer3DVoice>, azimuth: Float, elevation: Float, gain: Float, delays useDelays: Bool,
        frames: Int, output: AudioBufferList
    ) {
        let channels = voice.pointee.channels
        let fresh = !voice.pointee.hasState || voice.pointee.headRestarted
        voice.pointee.headRestarted = false
        let startGain = !voice.pointee.hasState ? gain : voice.pointee.scalarGain
        voice.pointee.scalarGain = gain
        let ringSize = voice.pointee.ringSize
        let mask = ringSize - 1
        var position = voice.pointee.ringPosition
        for channel in 0..<channels {
            let channelAzimuth = Self.channelAzimuth(azimuth, channel: channel, of: channels)
            let lateral = SpatialPanning.lateralAngle(azimuth: channelAzimuth, elevation: elevation)
            let itd = useDelays ? Float(SpatialPanning.interauralDelay(azimuth: channelAzimuth, elevation: elevation) * sampleRate) : 0
            // One sample of latency on both ears, so the interpolator always has its four points.
            let targetDelays = (lateral > 0 ? 1 + itd : 1, lateral < 0 ? 1 + itd : 1)
            let ring = voice.pointee.ring + channel * ringSize
            let input = source[channel]
            position = voice.pointee.ringPosition
            let delayPair = voice.pointee.delays + channel * 2
            let startLeft = fresh ? targetDelays.0 : delayPair[0]
            let startRight = fresh ? targetDelays.1 : delayPair[1]
            delayPair[0] = targetDelays.0
            delayPair[1] = targetDelays.1
            let stepLeft = (targetDelays.0 - startLeft) / Float(frames)
            let stepRight = (targetDelays.1 - startRight) / Float(frames)
            let gainStep = (gain - startGain) / Float(frames)
            let left = ears[0], right = ears[1]
            for frame in 0..<frames {
                ring[position] = input[frame]
                let g = startGain + gainStep * Float(frame + 1)
                left[frame] = g * Self.read(ring, mask: mask, at: position, delay: startLeft + stepLeft * Float(frame + 1))
                right[frame] = g * Self.read(ring, mask: mask, at: position, delay: startRight + stepRight * Float(frame + 1))
                position = (position + 1) & mask
            }
            for ear in 0..<2 {
                let side: Double = ear == 0 ? -1 : 1
                let alpha = SpatialPanning.headShadowAlpha(
                    incidence: SpatialPanning.incidence(azimuth: channelAzimuth, elevation: elevation, ear: side))
                let filter = voice.pointee.filters + 4 + channel * 2 + ear
                filter.pointee.coefficients = SpatialPanning.headShadowCoefficients(alpha: alpha, sampleRate: sampleRate)
                filter.pointee.process(ears[ear], count: frames)
                Mixing.add(ears[ear], into: output.samples(ear), count: frames, gain: 1)
            }
        }
        voice.pointee.ringPosition = position
    }

    // MARK: HRTF

    /// Each input channel through its `BinauralRenderer` (which ramps the gain and cross-fades
    /// directions itself), added into left and right.
    func renderBinaural(
        _ voice: UnsafeMutablePointer<Mixer3DVoice>, azimuth: Float, elevation: Float, gain: Float, frames: Int,
        output: AudioBufferList
    ) {
        let channels = voice.pointee.channels
        for channel in 0..<channels {
            guard let renderer = voice.pointee.binauralRenderer(channel) else { continue }
            let channelAzimuth = Self.channelAzimuth(azimuth, channel: channel, of: channels)
            renderer._withUnsafeGuaranteedRef {
                $0.render(
                    source[channel], count: frames, azimuth: channelAzimuth, elevation: elevation, gain: gain,
                    addingInto: output.samples(0), output.samples(1))
            }
        }
    }

    /// The sample `delay` (≥ 1) samples before the one at `position`, by third-order Lagrange interpolation.
    @inline(__always)
    static func read(_ ring: UnsafeMutablePointer<Float>, mask: Int, at position: Int, delay: Float) -> Float {
        let whole = Int(delay)
        let d = delay - Float(whole) + 1  // 1…2: between the second and third of the four points
        let newest = (position - whole + 1) & mask
        let x0 = ring[newest], x1 = ring[(newest - 1) & mask], x2 = ring[(newest - 2) & mask], x3 = ring[(newest - 3) & mask]
        let h0 = -(d - 1) * (d - 2) * (d - 3) / 6
        let h1 = d * (d - 2) * (d - 3) / 2
        let h2 = -d * (d - 1) * (d - 3) / 2
        let h3 = d * (d - 1) * (d - 2) / 6
        return h0 * x0 + h1 * x1 + h2 * x2 + h3 * x3
    }

    // MARK: Occlusion, obstruction, reverb

    /// Redesigns a voice's low-passes when their attenuations at 5 kHz (dB, ≤ 0) change.
    /// `mutating` for the reason `doppler` is: no copy of the renderer per input and slice.
    mutating func updateFilters(_ voice: UnsafeMutablePointer<Mixer3DVoice>, occlusionDB: Float, obstructionDB: Float) {
        if occlusionDB != voice.pointee.occlusionDB {
            if voice.pointee.occlusionDB == 0 { for channel in 0..<2 { voice.pointee.filters[channel].reset() } }
            voice.pointee.occlusionDB = occlusionDB
            let coefficients = Self.attenuationLowPass(occlusionDB, sampleRate: sampleRate)
            for channel in 0..<2 { voice.pointee.filters[channel].coefficients = coefficients }
        }
        if obstructionDB != voice.pointee.obstructionDB {
            if voice.pointee.obstructionDB == 0 { for channel in 0..<2 { voice.pointee.filters[2 + channel].reset() } }
            voice.pointee.obstructionDB = obstructionDB
            let coefficients = Self.attenuationLowPass(obstructionDB, sampleRate: sampleRate)
            for channel in 0..<2 { voice.pointee.filters[2 + channel].coefficients = coefficients }
        }
    }

    /// Air absorption at 5 kHz, dB per metre (ISO 9613-1, 20 °C, 50 % humidity: about 0.05).
    static let airAbsorption: Float = 0.05

    /// The frequency at which low-pass attenuations are specified.
    static let attenuationFrequency = 5_000.0

    /// A 12 dB/octave low-pass whose response at 5 kHz is `decibels` (≤ 0). A Butterworth
    /// low-pass by the bilinear transform has |H(f)|² = 1 / (1 + (tan(πf/fs) / tan(πfc/fs))⁴): solved for fc.
    static func attenuationLowPass(_ decibels: Float, sampleRate: Double) -> BiquadCoefficients {
        guard decibels < 0 else { return .identity }
        let reference = min(attenuationFrequency, 0.45 * sampleRate)
        let ratio = pow(pow(10, -Double(decibels) / 10) - 1, 0.25)
        let warped = tan(.pi * reference / sampleRate) / ratio
        let cutoff = atan(warped) * sampleRate / .pi
        return .lowPass(frequency: cutoff, q: 0.5.squareRoot(), sampleRate: sampleRate)
    }

    /// Adds the voice's channels (occluded, not obstructed) into the reverb send, its gain ramped.
    func addSend(_ voice: UnsafeMutablePointer<Mixer3DVoice>, target: Float, channels: Int, frames: Int) {
        let start = voice.pointee.hasState ? voice.pointee.sendGain : target
        voice.pointee.sendGain = target
        let scale: Float = channels == 2 ? 0.5 : 1
        let step = (target - start) / Float(frames)
        for channel in 0..<channels {
            let samples = source[channel]
            for frame in 0..<frames { send[frame] += samples[frame] * (start + step * Float(frame + 1)) * scale }
        }
    }

    func mixReverb(gain: Float, frames: Int, output: AudioBufferList) {
        let left = ears[0], right = ears[1]
        if outputChannels == 2 {
            Mixing.add(left, into: output.samples(0), count: frames, gain: gain)
            Mixing.add(right, into: output.samples(1), count: frames, gain: gain)
        } else {
            // Front and surround pairs: L R … Ls Rs (the last two channels in 4.0 and 5.1).
            let half = gain * 0.70710678
            Mixing.add(left, into: output.samples(0), count: frames, gain: half)
            Mixing.add(right, into: output.samples(1), count: frames, gain: half)
            Mixing.add(left, into: output.samples(outputChannels - 2), count: frames, gain: half)
            Mixing.add(right, into: output.samples(outputChannels - 1), count: frames, gain: half)
        }
    }
}
