import SonoraCore
import SonoraDSP

/// Core Audio's multichannel mixer ('aumx'/'mcmx'): any number of inputs (mono or
/// any channel count) summed into one output. Per input: volume (linear gain,
/// rampable), enable, pan; on the output: volume. Mono inputs are panned with the
/// equal-power law; multichannel inputs take pan as balance. Metering like Core
/// Audio's: average and peak power in dB, before and after each input's volume
/// and on the output, for the first two channels.
public final class MultiChannelMixerUnit: AudioUnit, @unchecked Sendable {
    public static let componentDescription = AudioComponentDescription(type: .mixer, subType: "mcmx", manufacturer: .apple)

    /// Core Audio's parameter IDs (kMultiChannelMixerParam_…); meters add the channel (0 or 1).
    public enum Parameter {
        public static let volume: AudioUnitParameterID = 0
        public static let enable: AudioUnitParameterID = 1
        public static let pan: AudioUnitParameterID = 2
        public static let preAveragePower: AudioUnitParameterID = 1000
        public static let prePeakHoldLevel: AudioUnitParameterID = 2000
        public static let postAveragePower: AudioUnitParameterID = 3000
        public static let postPeakHoldLevel: AudioUnitParameterID = 4000
    }

    static let meteredChannels = 2

    /// Per-render state, reached through raw pointers only.
    private struct Slots {
        var volume = 0, enable = 0, pan = 0, outputVolume = 0
        var preAverage = 0, prePeak = 0, postAverage = 0, postPeak = 0
        var outAverage = 0, outPeak = 0
    }

    @exclusivity(unchecked) private var slots = Slots()
    @exclusivity(unchecked) private var meters: UnsafeMutablePointer<LevelMeter>?
    @exclusivity(unchecked) private var meterCount = 0
    @exclusivity(unchecked) private var gainScratch: UnsafeMutablePointer<Float>?

    public init(inputs: Int = 2) {
        func meter(_ id: AudioUnitParameterID, _ scope: AudioUnitScope, _ name: String, _ identifier: String) -> [AudioUnitParameterDefinition] {
            (0..<Self.meteredChannels).map { channel in
                AudioUnitParameterDefinition(
                    id + AudioUnitParameterID(channel), scope: scope,
                    AudioUnitParameterInfo(
                        name: "\(name) \(channel)", identifier: "\(identifier)\(channel)", unit: .decibels, minValue: -120,
                        maxValue: 20, defaultValue: -120, flags: [.isReadable, .meterReadOnly]))
            }
        }
        let volume = AudioUnitParameterInfo(
            name: "Volume", identifier: "volume", unit: .linearGain, minValue: 0, maxValue: 1, defaultValue: 1,
            flags: [.readWrite, .canRamp])
        var definitions = [
            AudioUnitParameterDefinition(Parameter.volume, scope: .input, volume),
            AudioUnitParameterDefinition(
                Parameter.enable, scope: .input,
                AudioUnitParameterInfo(name: "Enable", identifier: "enable", unit: .boolean, minValue: 0, maxValue: 1, defaultValue: 1)),
            AudioUnitParameterDefinition(
                Parameter.pan, scope: .input,
                AudioUnitParameterInfo(name: "Pan", identifier: "pan", unit: .pan, minValue: -1, maxValue: 1, defaultValue: 0)),
            AudioUnitParameterDefinition(Parameter.volume, scope: .output, volume),
        ]
        definitions += meter(Parameter.preAveragePower, .input, "Pre Average Power", "preAveragePower")
        definitions += meter(Parameter.prePeakHoldLevel, .input, "Pre Peak Hold Level", "prePeakHoldLevel")
        definitions += meter(Parameter.postAveragePower, .input, "Post Average Power", "postAveragePower")
        definitions += meter(Parameter.postPeakHoldLevel, .input, "Post Peak Hold Level", "postPeakHoldLevel")
        definitions += meter(Parameter.postAveragePower, .output, "Output Average Power", "outputAveragePower")
        definitions += meter(Parameter.postPeakHoldLevel, .output, "Output Peak Hold Level", "outputPeakHoldLevel")
        super.init(
            description: Self.componentDescription, name: "MultiChannelMixer", inputs: inputs, outputs: 1,
            parameters: definitions, inputCountIsWritable: true)
    }

    /// Unconnected inputs are silent, as in Core Audio's mixer.
    public override var requiresConnectedInputs: Bool { false }

    public override var supportsBypass: Bool { false }

    public override func supports(_ format: StreamFormat, scope: AudioUnitScope, element: AudioUnitElement) -> Bool {
        format.isCanonical && format.validationProblems.isEmpty
    }

    public override func allocateRenderResources() throws(AudioError) {
        func base(_ id: AudioUnitParameterID, _ scope: AudioUnitScope) throws(AudioError) -> Int {
            try parameterSlot(ParameterAddress(id, scope: scope, element: 0))
        }
        let inputCount = elementCount(.input)
        if inputCount > 0 {
            slots.volume = try base(Parameter.volume, .input)
            slots.enable = try base(Parameter.enable, .input)
            slots.pan = try base(Parameter.pan, .input)
            slots.preAverage = try base(Parameter.preAveragePower, .input)
            slots.prePeak = try base(Parameter.prePeakHoldLevel, .input)
            slots.postAverage = try base(Parameter.postAveragePower, .input)
            slots.postPeak = try base(Parameter.postPeakHoldLevel, .input)
        }
        slots.outputVolume = try base(Parameter.volume, .output)
        slots.outAverage = try base(Parameter.postAveragePower, .output)
        slots.outPeak = try base(Parameter.postPeakHoldLevel, .output)
        // Meters: [input][pre/post][channel], then [output][channel].
        meterCount = inputCount * 2 * Self.meteredChannels + Self.meteredChannels
        let rate = try streamFormat(scope: .output, element: 0).sampleRate
        meters = .allocate(capacity: meterCount)
        meters!.initialize(repeating: LevelMeter(sampleRate: rate, averagingTime: 0.3, peakDecayTime: 1.5), count: meterCount)
        gainScratch = .allocate(capacity: maximumFramesPerSlice)
    }

    public override func deallocateRenderResources() {
        meters?.deallocate()
        meters = nil
        gainScratch?.deallocate()
        gainScratch = nil
    }

    public override func resetRenderState() {
        guard let meters else { return }
        for index in 0..<meterCount { meters[index].reset() }
    }

    public override func process(_ context: RenderContext) -> AudioError.Code {
        guard let meters, let gains = gainScratch else { return .uninitialized }
        let output = context.output
        let frames = context.frameCount
        output.clear()
        let outputChannels = output.channelCount
        let metered = Self.meteredChannels
        for element in 0..<context.inputCount {
            let enabled = context.parameter(slots.enable + element) >= 0.5
            let pan = context.parameter(slots.pan + element)
            let ramping = context.isRamping(slots.volume + element)
            let volumes: UnsafePointer<Float>? = ramping ? context.parameterValues(slots.volume + element) : nil
            let volume = ramping ? 0 : context.parameter(slots.volume + element)
            let input = context.input(element)
            let preMeters = meters + element * 2 * metered
            let postMeters = preMeters + metered
            for channel in 0..<min(input.channelCount, metered) {
                preMeters[channel].measure(input.samples(channel), count: frames)
                context.publish(Float(preMeters[channel].meanSquare.squareRoot()), slot: slots.preAverage + element * metered + channel)
                context.publish(Float(preMeters[channel].peak), slot: slots.prePeak + element * metered + channel)
            }
            guard enabled else { continue }
            for inputChannel in 0..<input.channelCount {
                let source = input.samples(inputChannel)
                // Post-fader signal of this channel, into the scratch buffer.
                if let volumes {
                    for frame in 0..<frames { gains[frame] = source[frame] * volumes[frame] }
                } else {
                    Mixing.copy(source, to: gains, count: frames, gain: volume)
                }
                if inputChannel < metered {
                    postMeters[inputChannel].measure(gains, count: frames)
                    context.publish(Float(postMeters[inputChannel].meanSquare.squareRoot()), slot: slots.postAverage + element * metered + inputChannel)
                    context.publish(Float(postMeters[inputChannel].peak), slot: slots.postPeak + element * metered + inputChannel)
                }
                if input.channelCount == 1 && outputChannels == 2 {
                    let (left, right) = PanLaw.equalPower.gains(pan: pan)
                    Mixing.add(gains, into: output.samples(0), count: frames, gain: left)
                    Mixing.add(gains, into: output.samples(1), count: frames, gain: right)
                } else if input.channelCount == 2 && outputChannels == 2 {
                    // Balance: panning one way turns the other side down.
                    let gain = inputChannel == 0 ? min(1, 1 - pan) : min(1, 1 + pan)
                    Mixing.add(gains, into: output.samples(inputChannel), count: frames, gain: gain)
                } else {
                    Mixing.add(gains, into: output.samples(inputChannel % outputChannels), count: frames, gain: 1)
                }
            }
        }
        if context.isRamping(slots.outputVolume) {
            let volumes = context.parameterValues(slots.outputVolume)
            for channel in 0..<outputChannels {
                let samples = output.samples(channel)
                for frame in 0..<frames { samples[frame] *= volumes[frame] }
            }
        } else {
            let volume = context.parameter(slots.outputVolume)
            if volume != 1 {
                for channel in 0..<outputChannels { Mixing.scale(output.samples(channel), count: frames, by: volume) }
            }
        }
        let outputMeters = meters + meterCount - metered
        for channel in 0..<min(outputChannels, metered) {
            outputMeters[channel].measure(output.samples(channel), count: frames)
            context.publish(Float(outputMeters[channel].meanSquare.squareRoot()), slot: slots.outAverage + channel)
            context.publish(Float(outputMeters[channel].peak), slot: slots.outPeak + channel)
        }
        return .noError
    }
}
