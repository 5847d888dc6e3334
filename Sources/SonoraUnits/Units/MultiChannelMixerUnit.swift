import SonoraCore
import SonoraDSP
import Synchronization

/// Core Audio's multichannel mixer ('aumx'/'mcmx'): any number of inputs (mono or
/// any channel count) summed into one output. Per input: volume (linear gain,
/// rampable), enable, pan; on the output: volume. Mono inputs are panned with the
/// equal-power law; multichannel inputs take pan as balance. Metering like Core
/// Audio's: average and peak power in dB, before and after each input's volume
/// and on the output, for every channel of the element's format — measured only
/// on elements whose MeteringMode is on (off by default, as in Core Audio: meters
/// cost two passes over every channel).
public final class MultiChannelMixerUnit: AudioUnit, @unchecked Sendable {
    public static let componentDescription = AudioComponentDescription(type: .mixer, subType: "mcmx", manufacturer: .apple)

    /// Core Audio's parameter IDs (kMultiChannelMixerParam_…); meters add the channel.
    public enum Parameter {
        public static let volume: AudioUnitParameterID = 0
        public static let enable: AudioUnitParameterID = 1
        public static let pan: AudioUnitParameterID = 2
        public static let preAveragePower: AudioUnitParameterID = 1000
        public static let prePeakHoldLevel: AudioUnitParameterID = 2000
        public static let postAveragePower: AudioUnitParameterID = 3000
        public static let postPeakHoldLevel: AudioUnitParameterID = 4000
    }

    /// Meter channels of the input scope (the widest input) and of the output.
    private var inputMeterChannels = 0
    private var outputMeterChannels = 0
    /// MeteringMode per input element and of the output (control side).
    private var inputMetering: [Bool]
    private var outputMetering = false

    /// Per-render state, reached through raw pointers only.
    private struct Slots {
        var volume = 0, enable = 0, pan = 0, outputVolume = 0
    }

    @exclusivity(unchecked) private var slots = Slots()
    @exclusivity(unchecked) private var meters: UnsafeMutablePointer<LevelMeter>?
    @exclusivity(unchecked) private var meterCount = 0
    @exclusivity(unchecked) private var gainScratch: UnsafeMutablePointer<Float>?
    /// Per input element, how many pre- and post-fader channel meters `process` measured this
    /// cycle, published after the inputs. Publishing right after each measure put a square
    /// root on the meter's result in the path of every input; after the loop the roots are
    /// independent of each other.
    @exclusivity(unchecked) private var measuredMeters: UnsafeMutablePointer<MeasuredMeters>?

    struct MeasuredMeters {
        var pre: Int32 = 0
        var post: Int32 = 0
    }
    /// Slot of element 0 of each meter parameter: [pre average, pre peak, post average, post peak][input channel], then
    /// [output average, output peak][output channel].
    @exclusivity(unchecked) private var meterSlots: UnsafeMutablePointer<Int>?
    /// MeteringMode as the render side reads it: one flag per input element, then the output's.
    /// Written by the control side at any time, hence atomics.
    @exclusivity(unchecked) private var meteringFlags: UnsafeMutablePointer<Atomic<Bool>>?
    /// What the render side last saw of each flag (render side only), to reset meters on a switch.
    @exclusivity(unchecked) private var meteringSeen: UnsafeMutablePointer<Bool>?

    public init(inputs: Int = 2) {
        inputMetering = Array(repeating: false, count: inputs)
        super.init(
            description: Self.componentDescription, name: "MultiChannelMixer", inputs: inputs, outputs: 1,
            parameters: [], inputCountIsWritable: true)
        updateMeterParameters()
    }

    private static func definitions(inputChannels: Int, outputChannels: Int) -> [AudioUnitParameterDefinition] {
        func meter(_ id: AudioUnitParameterID, _ scope: AudioUnitScope, _ channels: Int, _ name: String, _ identifier: String)
            -> [AudioUnitParameterDefinition]
        {
            (0..<channels).map { channel in
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
        definitions += meter(Parameter.preAveragePower, .input, inputChannels, "Pre Average Power", "preAveragePower")
        definitions += meter(Parameter.prePeakHoldLevel, .input, inputChannels, "Pre Peak Hold Level", "prePeakHoldLevel")
        definitions += meter(Parameter.postAveragePower, .input, inputChannels, "Post Average Power", "postAveragePower")
        definitions += meter(Parameter.postPeakHoldLevel, .input, inputChannels, "Post Peak Hold Level", "postPeakHoldLevel")
        definitions += meter(Parameter.postAveragePower, .output, outputChannels, "Output Average Power", "outputAveragePower")
        definitions += meter(Parameter.postPeakHoldLevel, .output, outputChannels, "Output Peak Hold Level", "outputPeakHoldLevel")
        return definitions
    }

    /// One meter parameter per channel of the widest input and of the output.
    private func updateMeterParameters() {
        let inputChannels = inputs.map { Int($0.format.channelsPerFrame) }.max() ?? 0
        let outputChannels = outputs.map { Int($0.format.channelsPerFrame) }.max() ?? 0
        guard inputChannels != inputMeterChannels || outputChannels != outputMeterChannels || parameterDefinitions.isEmpty
        else { return }
        inputMeterChannels = inputChannels
        outputMeterChannels = outputChannels
        replaceParameterDefinitions(Self.definitions(inputChannels: inputChannels, outputChannels: outputChannels))
    }

    override func elementsDidChange(_ scope: AudioUnitScope) {
        if inputMetering.count != inputs.count {
            inputMetering = (0..<inputs.count).map { $0 < inputMetering.count && inputMetering[$0] }
        }
        updateMeterParameters()
    }

    // MARK: MeteringMode

    public override func extendedPropertyInfo(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement)
        throws(AudioError) -> AudioUnitPropertyInfo?
    {
        guard id == .meteringMode else { return nil }
        guard scope == .input || scope == .output else {
            throw AudioError(.invalidScope, "\(name): MeteringMode is set per input or output element, not in the \(scope) scope")
        }
        guard element >= 0 && element < elementCount(scope) else {
            throw AudioError(.invalidElement, "\(name): \(scope) scope has \(elementCount(scope)) elements, not element \(element)")
        }
        return AudioUnitPropertyInfo(size: 4, isWritable: true)
    }

    public override func extendedProperty(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement)
        throws(AudioError) -> AudioUnitPropertyValue
    {
        .flag(scope == .input ? inputMetering[element] : outputMetering)
    }

    /// MeteringMode may change while rendering: the render side picks it up at its next cycle.
    public override func setExtendedProperty(
        _ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement, to value: AudioUnitPropertyValue
    ) throws(AudioError) {
        guard case .flag(let on) = value else {
            throw AudioError(.invalidPropertyValue, "\(name): wrong kind of value for \(id)")
        }
        if scope == .input { inputMetering[element] = on } else { outputMetering = on }
        meteringFlags?[scope == .input ? element : inputs.count].store(on, ordering: .relaxed)
        propertyDidChange(.meteringMode, scope: scope, element: element)
    }

    /// Unconnected inputs are silent, as in Core Audio's mixer.
    public override var requiresConnectedInputs: Bool { false }

    public override var supportsBypass: Bool { false }

    public override var hasChannelLayouts: Bool { true }

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
        }
        slots.outputVolume = try base(Parameter.volume, .output)
        let inputChannels = inputMeterChannels, outputChannels = outputMeterChannels
        let table = UnsafeMutablePointer<Int>.allocate(capacity: max(1, 4 * inputChannels + 2 * outputChannels))
        do {
            if inputCount > 0 {
                for (kind, id) in [Parameter.preAveragePower, Parameter.prePeakHoldLevel, Parameter.postAveragePower,
                                   Parameter.postPeakHoldLevel].enumerated() {
                    for channel in 0..<inputChannels {
                        table[kind * inputChannels + channel] = try base(id + AudioUnitParameterID(channel), .input)
                    }
                }
            }
            for (kind, id) in [Parameter.postAveragePower, Parameter.postPeakHoldLevel].enumerated() {
                for channel in 0..<outputChannels {
                    table[4 * inputChannels + kind * outputChannels + channel] = try base(id + AudioUnitParameterID(channel), .output)
                }
            }
        } catch {
            table.deallocate()
            throw error
        }
        meterSlots = table
        // Meters: [input][pre/post][channel], then [output][channel].
        meterCount = inputCount * 2 * inputChannels + outputChannels
        let rate = try streamFormat(scope: .output, element: 0).sampleRate
        meters = .allocate(capacity: max(1, meterCount))
        meters!.initialize(repeating: LevelMeter(sampleRate: rate, averagingTime: 0.3, peakDecayTime: 1.5), count: meterCount)
        meteringFlags = .allocate(capacity: inputCount + 1)
        meteringSeen = .allocate(capacity: inputCount + 1)
        for element in 0...inputCount {
            let on = element < inputCount ? inputMetering[element] : outputMetering
            (meteringFlags! + element).initialize(to: Atomic(on))
            (meteringSeen! + element).initialize(to: on)
        }
        gainScratch = .allocate(capacity: maximumFramesPerSlice)
        measuredMeters = .allocate(capacity: max(1, inputCount))
        measuredMeters!.initialize(repeating: MeasuredMeters(), count: max(1, inputCount))
    }

    public override func deallocateRenderResources() {
        meters?.deallocate()
        meters = nil
        gainScratch?.deallocate()
        gainScratch = nil
        measuredMeters?.deallocate()
        measuredMeters = nil
        meterSlots?.deallocate()
        meterSlots = nil
        meteringFlags?.deallocate()
        meteringFlags = nil
        meteringSeen?.deallocate()
        meteringSeen = nil
    }

    public override func resetRenderState() {
        guard let meters else { return }
        for index in 0..<meterCount { meters[index].reset() }
    }

    /// Whether element `index` (the output after the inputs) meters this cycle. On a switch
    /// its meters restart from silence, and publish silence while off rather than freeze.
    @inline(__always)
    private func meteringOn(_ index: Int, meters: UnsafeMutablePointer<LevelMeter>, count: Int, silence: () -> Void) -> Bool {
        let on = meteringFlags![index].load(ordering: .relaxed)
        if on != meteringSeen![index] {
            meteringSeen![index] = on
            for meter in 0..<count { meters[meter].reset() }
            if !on { silence() }
        }
        return on
    }

    public override func process(_ context: RenderContext) -> AudioError.Code {
        guard let meters, let gains = gainScratch, let table = meterSlots, let measured = measuredMeters else { return .uninitialized }
        let output = context.output
        let frames = context.frameCount
        output.clear()
        let outputChannels = output.channelCount
        let metered = inputMeterChannels
        let inputCount = context.inputCount
        for element in 0..<inputCount {
            let enabled = context.parameter(slots.enable + element) >= 0.5
            let pan = context.parameter(slots.pan + element)
            let ramping = context.isRamping(slots.volume + element)
            let volumes: UnsafePointer<Float>? = ramping ? context.parameterValues(slots.volume + element) : nil
            let volume = ramping ? 0 : context.parameter(slots.volume + element)
            let input = context.input(element)
            let channels = min(input.channelCount, metered)
            let preMeters = meters + element * 2 * metered
            let postMeters = preMeters + metered
            let metering = meteringOn(element, meters: preMeters, count: 2 * metered) {
                for kind in 0..<4 {
                    for channel in 0..<channels { context.publish(0, slot: table[kind * metered + channel] + element) }
                }
            }
            measured[element] = MeasuredMeters()
            if metering {
                for channel in 0..<channels { preMeters[channel].measure(input.samples(channel), count: frames) }
                measured[element] = MeasuredMeters(pre: Int32(channels), post: enabled ? Int32(channels) : 0)
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
                if metering && inputChannel < metered { postMeters[inputChannel].measure(gains, count: frames) }
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
        for element in 0..<inputCount where measured[element].pre > 0 {
            let preMeters = meters + element * 2 * metered
            let postMeters = preMeters + metered
            for channel in 0..<Int(measured[element].pre) {
                context.publish(Float(preMeters[channel].meanSquare.squareRoot()), slot: table[channel] + element)
                context.publish(Float(preMeters[channel].peak), slot: table[metered + channel] + element)
            }
            for channel in 0..<Int(measured[element].post) {
                context.publish(Float(postMeters[channel].meanSquare.squareRoot()), slot: table[2 * metered + channel] + element)
                context.publish(Float(postMeters[channel].peak), slot: table[3 * metered + channel] + element)
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
        let outputMetered = min(outputChannels, outputMeterChannels)
        let outputMeters = meters + meterCount - outputMeterChannels
        let outputSlots = table + 4 * metered
        let outputMetering = meteringOn(inputCount, meters: outputMeters, count: outputMeterChannels) {
            for channel in 0..<outputMetered {
                context.publish(0, slot: outputSlots[channel])
                context.publish(0, slot: outputSlots[outputMeterChannels + channel])
            }
        }
        if outputMetering {
            for channel in 0..<outputMetered {
                outputMeters[channel].measure(output.samples(channel), count: frames)
                context.publish(Float(outputMeters[channel].meanSquare.squareRoot()), slot: outputSlots[channel])
                context.publish(Float(outputMeters[channel].peak), slot: outputSlots[outputMeterChannels + channel])
            }
        }
        return .noError
    }
}
