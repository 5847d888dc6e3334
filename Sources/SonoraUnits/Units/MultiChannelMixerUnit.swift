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
    /// Everything else the render reads (meters, scratch, metering flags, the steady form).
    @exclusivity(unchecked) private var kernel: UnsafeMutablePointer<MultiChannelMixerKernel>?
    /// The memory every input a steady cycle pulls (not a plan buffer) is pulled into, one
    /// input after another (`MultiChannelMixerKernel.steadyPullLists`).
    private var steadyPullBuffer: OwnedAudioBufferList?

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

    /// The average-power meters (pre and post, per channel) are published as mean squares.
    public override func publishesMeanSquare(_ id: AudioUnitParameterID) -> Bool {
        (Parameter.preAveragePower..<Parameter.prePeakHoldLevel).contains(id)
            || (Parameter.postAveragePower..<Parameter.postPeakHoldLevel).contains(id)
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
        kernel?.pointee.meteringFlags[scope == .input ? element : inputs.count].store(on, ordering: .relaxed)
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
        guard let core else { throw AudioError(.uninitialized, "\(name): no realtime core") }
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
        // Meters: [input][pre/post][channel], then [output][channel].
        let meterCount = inputCount * 2 * inputChannels + outputChannels
        let rate: Double
        do {
            rate = try streamFormat(scope: .output, element: 0).sampleRate
        } catch {
            table.deallocate()
            throw error
        }
        let meters = UnsafeMutablePointer<LevelMeter>.allocate(capacity: max(1, meterCount))
        meters.initialize(repeating: LevelMeter(sampleRate: rate, averagingTime: 0.3, peakDecayTime: 1.5), count: meterCount)
        let flags = UnsafeMutablePointer<Atomic<Bool>>.allocate(capacity: inputCount + 1)
        let seen = UnsafeMutablePointer<Bool>.allocate(capacity: inputCount + 1)
        for element in 0...inputCount {
            let on = element < inputCount ? inputMetering[element] : outputMetering
            (flags + element).initialize(to: Atomic(on))
            (seen + element).initialize(to: on)
        }
        let measured = UnsafeMutablePointer<MultiChannelMixerKernel.MeasuredMeters>.allocate(capacity: max(1, inputCount))
        measured.initialize(repeating: .init(), count: max(1, inputCount))
        // One pull buffer for the steady cycle's pulled inputs, as wide as the widest input
        // (an input list has at least one channel), each input's list its own channel count.
        let pullChannels = (0..<inputCount).map { core.pointee.ownedInputLists[$0].channelCount }.max() ?? 1
        let pullBuffer: OwnedAudioBufferList
        do {
            pullBuffer = try OwnedAudioBufferList(channelCount: max(1, pullChannels), frameCapacity: core.pointee.maximumFrames)
        } catch {
            meters.deallocate()
            flags.deallocate()
            seen.deallocate()
            measured.deallocate()
            table.deallocate()
            throw error
        }
        let pullLists = UnsafeMutablePointer<AudioBufferList>.allocate(capacity: max(1, inputCount))
        for element in 0..<inputCount {
            (pullLists + element).initialize(
                to: pullBuffer.list.channels(prefix: core.pointee.ownedInputLists[element].channelCount))
        }
        steadyPullBuffer = pullBuffer
        // Filled by `steadySlot` before a steady cycle reads them.
        let steadyInputs = UnsafeMutablePointer<MultiChannelMixerKernel.SteadyInput>.allocate(capacity: max(1, inputCount))
        for element in 0..<inputCount { (steadyInputs + element).initialize(to: .init(list: pullLists[element])) }
        kernel = .allocate(capacity: 1)
        kernel!.initialize(
            to: MultiChannelMixerKernel(
                meters: meters, meterCount: meterCount, inputMeterChannels: inputChannels, outputMeterChannels: outputChannels,
                gains: .allocate(capacity: maximumFramesPerSlice), measured: measured, meterSlots: table, meteringFlags: flags,
                meteringSeen: seen, core: core, steadyInputs: steadyInputs, steadyPullLists: pullLists))
    }

    public override func deallocateRenderResources() {
        guard let kernel else { return }
        kernel.pointee.meters.deallocate()
        kernel.pointee.gains.deallocate()
        kernel.pointee.measured.deallocate()
        kernel.pointee.meterSlots.deallocate()
        kernel.pointee.meteringFlags.deallocate()
        kernel.pointee.meteringSeen.deallocate()
        kernel.pointee.steadyInputs.deallocate()
        kernel.pointee.steadyPullLists.deallocate()
        kernel.deallocate()
        self.kernel = nil
        steadyPullBuffer = nil
    }

    public override func resetRenderState() {
        guard let kernel else { return }
        for index in 0..<kernel.pointee.meterCount { kernel.pointee.meters[index].reset() }
    }

    public override func process(_ context: RenderContext) -> AudioError.Code {
        // The kernel's fields copied once, not once per input (see `renderSteady`).
        guard let kernel = kernel?.pointee else { return .uninitialized }
        let published = context.core.pointee.published
        let output = context.output
        let frames = context.frameCount
        output.clear()
        let inputCount = context.inputCount
        for element in 0..<inputCount {
            let enabled = context.parameter(slots.enable + element) >= 0.5
            let pan = context.parameter(slots.pan + element)
            let ramping = context.isRamping(slots.volume + element)
            let volumes: UnsafePointer<Float>? = ramping ? context.parameterValues(slots.volume + element) : nil
            let volume = ramping ? 0 : context.parameter(slots.volume + element)
            let input = context.input(element)
            kernel.mix(
                element, input, enabled: enabled, volume: volume, volumes: volumes,
                sides: .init(pan: pan, inputChannels: input.channelCount, outputChannels: output.channelCount),
                frames: frames, into: output, published)
        }
        kernel.publishInputMeters(inputCount: inputCount, published)
        let ramping = context.isRamping(slots.outputVolume)
        let volumes: UnsafePointer<Float>? = ramping ? context.parameterValues(slots.outputVolume) : nil
        let volume = ramping ? 1 : context.parameter(slots.outputVolume)
        kernel.finish(output, frames: frames, inputCount: inputCount, volume: volume, volumes: volumes, published)
        return .noError
    }

    /// The steady form of this mixer for a render plan's steady cycles (`renderSteady`), from
    /// how the last (lean) cycle bound its inputs: each input a plan buffer, or pulled from a
    /// render callback (or silent, unconnected) into the shared pull buffer (`steadyPullLists`:
    /// nothing reads a pulled input after its mix, and the unit's own input buffers are not a
    /// pull of the cycle's afterwards, `lastPulledSampleTime` −1); the parameters as the ramps
    /// hold them, no ramp running. Nil for an input pulled from anything else. Realtime side,
    /// between cycles.
    override func steadySlot(
        _ core: UnsafeMutablePointer<RealtimeCore>, inputs: UnsafeMutablePointer<RenderPlan.Input>, output: AudioBufferList
    ) -> SteadySlot? {
        guard let kernel, kernel.pointee.core == core, output.channelCount > 0 else { return nil }
        let ramps = core.pointee.ramps
        for element in 0..<core.pointee.inputCount {
            let steady = kernel.pointee.steadyInputs + element
            if inputs[element].direct {
                steady.pointee.source = .none
                steady.pointee.list = inputs[element].list
                steady.pointee.direct = true
            } else {
                switch core.pointee.inputSources[element] {
                case .callback, .none: break
                case .connection: return nil
                }
                steady.pointee.source = core.pointee.inputSources[element]
                steady.pointee.list = kernel.pointee.steadyPullLists[element]
                steady.pointee.direct = false
            }
            steady.pointee.enabled = ramps[slots.enable + element].value >= 0.5
            steady.pointee.volume = ramps[slots.volume + element].value
            steady.pointee.sides = .init(
                pan: ramps[slots.pan + element].value, inputChannels: steady.pointee.list.channelCount,
                outputChannels: output.channelCount)
        }
        kernel.pointee.steadyOutput = output
        kernel.pointee.steadyOutputVolume = ramps[slots.outputVolume].value
        var slot = SteadySlot()
        slot.kernel = .mixer
        slot.state = UnsafeMutableRawPointer(kernel)
        return slot
    }
}
