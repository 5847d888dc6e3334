import SonoraCore
import SonoraDSP
import SonoraFile

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Core Audio's 3D mixer ('aumx'/'3dem'): any number of mono or stereo inputs, each placed
/// by azimuth, elevation and distance, mixed into stereo (or binaural), 4.0 or 5.1.
///
/// Per input (parameters, input scope): azimuth, elevation, distance, gain (dB), playback
/// rate (0.5…2, libsoxr's variable-rate resampler: the input is pulled for what it needs),
/// enable, minimum and maximum gain, reverb blend, occlusion and obstruction (a low-pass
/// plus gain). Per input (properties): spatialization algorithm, rendering flags, distance
/// parameters and attenuation curve. On the output: gain (dB) and the reverb's gain.
///
/// Parameter changes are interpolated across each render slice (gains, delays), so a source
/// that moves between renders moves smoothly. A disabled input is not pulled.
public final class Mixer3DUnit: AudioUnit, @unchecked Sendable {
    public static let componentDescription = AudioComponentDescription(type: .mixer, subType: "3dem", manufacturer: .apple)

    /// Core Audio's parameter IDs (k3DMixerParam_…); input scope unless noted.
    public enum Parameter {
        /// Degrees, −180…180: 0 in front, +90 right.
        public static let azimuth: AudioUnitParameterID = 0
        /// Degrees, −90…90: +90 above.
        public static let elevation: AudioUnitParameterID = 1
        /// Metres, 0…10,000.
        public static let distance: AudioUnitParameterID = 2
        /// dB, −120…20 (input and output scope). −120 dB is silence.
        public static let gain: AudioUnitParameterID = 3
        /// Rate scaler 0.5…2 (pitch follows, as a tape).
        public static let playbackRate: AudioUnitParameterID = 4
        public static let enable: AudioUnitParameterID = 5
        /// dB, −120…20: the input's gain after distance attenuation is kept at or above this…
        public static let minimumGain: AudioUnitParameterID = 6
        /// …and at or below this.
        public static let maximumGain: AudioUnitParameterID = 7
        /// The contract's (and Core Audio's) short names for the two above.
        public static let minGain = minimumGain
        public static let maxGain = maximumGain
        /// Percent, 0…100: equal-power dry/wet blend into the internal reverb.
        public static let reverbBlend: AudioUnitParameterID = 8
        /// Output scope, dB −40…40: the reverb's level.
        public static let globalReverbGain: AudioUnitParameterID = 9
        /// dB −100…0 at 5 kHz: low-pass and gain on the direct sound and the reverb send.
        public static let occlusionAttenuation: AudioUnitParameterID = 10
        /// dB −100…0 at 5 kHz: low-pass and gain on the direct sound only.
        public static let obstructionAttenuation: AudioUnitParameterID = 11
        public static let preAveragePower: AudioUnitParameterID = 1000
        public static let prePeakHoldLevel: AudioUnitParameterID = 2000
        public static let postAveragePower: AudioUnitParameterID = 3000
        public static let postPeakHoldLevel: AudioUnitParameterID = 4000
    }

    /// Input settings (control side); handed to the render side as a block on every change.
    var inputSettings: [Mixer3DInputSettings]
    private var settingsBlock: Mixer3DSettingsBlock?
    /// The SOFA file HRTF inputs use.
    public internal(set) var hrtfFilePath = Mixer3DUnit.defaultHRTFFilePath
    public static let defaultHRTFFilePath = SOFAFile.defaultPath
    var hrtf = Mixer3DHRTF()
    /// Input-scope parameters already set through `setInputParameter`: definition index and range.
    private var inputParameterCache: [AudioUnitParameterID: (index: Int, minimum: Float, maximum: Float, initial: Float)] = [:]
    /// Taps of the compact HRTF responses (0: the file's as measured); see `setCompactHRTF(taps:)`.
    public internal(set) var compactHRTFTaps = 0
    /// Auxiliary send buses (see `Mixer3DUnit+AuxiliarySends`), fixed while initialized.
    public internal(set) var auxiliaryBusCount = 0

    private var resamplers: [VariableRateResampler] = []
    /// Lenders of mono inputs, by element (see `Mixer3DInputLender`); taken at initialize.
    var inputLenders: [Int: Mixer3DInputLender] = [:]
    @exclusivity(unchecked) var renderer: UnsafeMutablePointer<Mixer3DRenderer>?

    /// MeteringMode of each input and of the output (control side).
    var inputMetering: [Bool]
    var outputMetering = false
    /// Channels the meter parameters are declared for.
    var meteredChannels = (input: 0, output: 0)

    public init(inputs: Int = 1) {
        inputSettings = Array(repeating: Mixer3DInputSettings(), count: inputs)
        inputMetering = Array(repeating: false, count: inputs)
        super.init(
            description: Self.componentDescription, name: "3DMixer", inputs: inputs, outputs: 1,
            parameters: Self.fixedDefinitions + Self.auxiliaryDefinitions, inputCountIsWritable: true)
        // Inputs are mono by default (Core Audio's 3D mixer); the output stereo.
        for element in 0..<inputs { self.inputs[element].format = .canonical(sampleRate: 48000, channels: 1) }
        updateMeterParameters()
    }

    static let fixedDefinitions: [AudioUnitParameterDefinition] = {
        func info(
            _ name: String, _ identifier: String, _ unit: AudioUnitParameterUnit, _ range: ClosedRange<Float>, _ value: Float,
            ramp: Bool = true
        ) -> AudioUnitParameterInfo {
            AudioUnitParameterInfo(
                name: name, identifier: identifier, unit: unit, minValue: range.lowerBound, maxValue: range.upperBound,
                defaultValue: value, flags: ramp ? [.readWrite, .canRamp] : .readWrite)
        }
        return [
            AudioUnitParameterDefinition(Parameter.azimuth, scope: .input, info("Azimuth", "azimuth", .degrees, -180...180, 0)),
            AudioUnitParameterDefinition(Parameter.elevation, scope: .input, info("Elevation", "elevation", .degrees, -90...90, 0)),
            AudioUnitParameterDefinition(Parameter.distance, scope: .input, info("Distance", "distance", .meters, 0...10_000, 1)),
            AudioUnitParameterDefinition(Parameter.gain, scope: .input, info("Gain", "gain", .decibels, -120...20, 0)),
            AudioUnitParameterDefinition(
                Parameter.playbackRate, scope: .input, info("Playback Rate", "playbackRate", .rate, 0.5...2, 1)),
            AudioUnitParameterDefinition(Parameter.enable, scope: .input, info("Enable", "enable", .boolean, 0...1, 1, ramp: false)),
            AudioUnitParameterDefinition(Parameter.minimumGain, scope: .input, info("Minimum Gain", "minGain", .decibels, -120...20, -120)),
            AudioUnitParameterDefinition(Parameter.maximumGain, scope: .input, info("Maximum Gain", "maxGain", .decibels, -120...20, 20)),
            AudioUnitParameterDefinition(Parameter.reverbBlend, scope: .input, info("Reverb Blend", "reverbBlend", .percent, 0...100, 0)),
            AudioUnitParameterDefinition(
                Parameter.occlusionAttenuation, scope: .input,
                info("Occlusion Attenuation", "occlusionAttenuation", .decibels, -100...0, 0)),
            AudioUnitParameterDefinition(
                Parameter.obstructionAttenuation, scope: .input,
                info("Obstruction Attenuation", "obstructionAttenuation", .decibels, -100...0, 0)),
            AudioUnitParameterDefinition(Parameter.gain, scope: .output, info("Output Gain", "outputGain", .decibels, -120...20, 0)),
            AudioUnitParameterDefinition(
                Parameter.globalReverbGain, scope: .output, info("Reverb Gain", "globalReverbGain", .decibels, -40...40, 0)),
        ]
    }()

    override func elementsDidChange(_ scope: AudioUnitScope) {
        if scope == .input {
            if inputSettings.count > inputs.count { inputSettings.removeLast(inputSettings.count - inputs.count) }
            while inputSettings.count < inputs.count { inputSettings.append(Mixer3DInputSettings()) }
            inputMetering = (0..<inputs.count).map { $0 < inputMetering.count && inputMetering[$0] }
        }
        updateMeterParameters()
    }

    /// Unconnected inputs are silent, as in Core Audio's mixers.
    public override var requiresConnectedInputs: Bool { false }
    public override var supportsBypass: Bool { false }
    public override var pullsInputsItself: Bool { true }

    /// The average-power meters are published as mean squares (no square root on the render thread).
    public override func publishesMeanSquare(_ id: AudioUnitParameterID) -> Bool {
        (Parameter.preAveragePower..<Parameter.prePeakHoldLevel).contains(id)
            || (Parameter.postAveragePower..<Parameter.postPeakHoldLevel).contains(id)
    }

    /// Inputs mono or stereo; the output stereo, 4.0 (L R Ls Rs) or 5.1 (L R C LFE Ls Rs).
    public override func supports(_ format: StreamFormat, scope: AudioUnitScope, element: AudioUnitElement) -> Bool {
        guard format.isCanonical && format.validationProblems.isEmpty else { return false }
        let channels = format.channelsPerFrame
        return scope == .input ? (channels == 1 || channels == 2) : (channels == 2 || channels == 4 || channels == 6)
    }

    // MARK: Properties

    public override func extendedPropertyInfo(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement)
        throws(AudioError) -> AudioUnitPropertyInfo?
    {
        switch id {
        case .meteringMode:
            return try meteringInfo(scope: scope, element: element)
        case .spatializationAlgorithm, .renderingFlags, .attenuationCurve, .distanceParameters:
            guard scope == .input else {
                throw AudioError(.invalidScope, "\(name): \(id) is set per input element, not in the \(scope) scope")
            }
            guard element >= 0 && element < inputs.count else {
                throw AudioError(.invalidElement, "\(name): input scope has \(inputs.count) elements, not element \(element)")
            }
            return AudioUnitPropertyInfo(size: id == .distanceParameters ? 12 : 4, isWritable: true)
        case .hrtfFilePath:
            guard scope == .global else {
                throw AudioError(.invalidScope, "\(name): \(id) is global, not in the \(scope) scope")
            }
            guard element == 0 else { throw AudioError(.invalidElement, "\(name): \(id) has only global element 0") }
            return AudioUnitPropertyInfo(size: 8, isWritable: true)
        case .auxiliaryBusCount:
            guard scope == .global else {
                throw AudioError(.invalidScope, "\(name): \(id) is global, not in the \(scope) scope")
            }
            guard element == 0 else { throw AudioError(.invalidElement, "\(name): \(id) has only global element 0") }
            return AudioUnitPropertyInfo(size: 4, isWritable: !isInitialized)
        default:
            return nil
        }
    }

    public override func extendedProperty(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement)
        throws(AudioError) -> AudioUnitPropertyValue
    {
        switch id {
        case .meteringMode: return .flag(scope == .input ? inputMetering[element] : outputMetering)
        case .spatializationAlgorithm: return .spatializationAlgorithm(inputSettings[element].algorithm)
        case .renderingFlags: return .renderingFlags(inputSettings[element].flags)
        case .attenuationCurve: return .attenuationCurve(inputSettings[element].curve)
        case .distanceParameters: return .distanceParameters(inputSettings[element].distance)
        case .auxiliaryBusCount: return .elementCount(auxiliaryBusCount)
        default: return .filePath(hrtfFilePath)
        }
    }

    public override func setExtendedProperty(
        _ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement, to value: AudioUnitPropertyValue
    ) throws(AudioError) {
        var settings = inputSettings
        switch (id, value) {
        case (.meteringMode, .flag(let on)):
            setMetering(on, scope: scope, element: element)
            return
        case (.spatializationAlgorithm, .spatializationAlgorithm(let algorithm)):
            if algorithm == .hrtf { try prepareHRTF(forInput: element) }
            settings[element].algorithm = algorithm
        case (.renderingFlags, .renderingFlags(let flags)):
            guard flags.rawValue & ~RenderingFlags.known == 0 else {
                throw AudioError(.invalidPropertyValue, "\(name): rendering flags 0x\(String(flags.rawValue, radix: 16)) have unknown bits")
            }
            settings[element].flags = flags
        case (.attenuationCurve, .attenuationCurve(let curve)):
            settings[element].curve = curve
        case (.distanceParameters, .distanceParameters(let parameters)):
            if let problem = parameters.problem {
                throw AudioError(.invalidPropertyValue, "\(name): distance parameters of input \(element): \(problem)")
            }
            settings[element].distance = parameters
        case (.hrtfFilePath, .filePath(let path)):
            try setHRTFFile(path)
            return
        case (.auxiliaryBusCount, .elementCount(let count)):
            guard !isInitialized else {
                throw AudioError(.cannotDoInCurrentContext, "\(name): \(id) is set before initialize")
            }
            guard (0...Self.maximumAuxiliaryBuses).contains(count) else {
                throw AudioError(.invalidPropertyValue, "\(name): \(count) auxiliary buses (0…\(Self.maximumAuxiliaryBuses))")
            }
            auxiliaryBusCount = count
            propertyDidChange(id, scope: scope, element: element)
            return
        default:
            throw AudioError(.invalidPropertyValue, "\(name): wrong kind of value for \(id)")
        }
        inputSettings = settings
        handOverSettings()
        propertyDidChange(id, scope: scope, element: element)
    }

    /// Gives the render side a fresh copy of every input's settings.
    private func handOverSettings() {
        guard isInitialized else { return }
        let block = Mixer3DSettingsBlock(inputSettings)
        retire(settingsBlock)
        settingsBlock = block
        send(.message(RealtimeMessage(value: Mixer3DRenderer.Message.settings, object: UnsafeMutableRawPointer(block.settings))))
    }

    override func receive(_ message: RealtimeMessage) {
        guard let renderer else { return }
        if message.value == Mixer3DRenderer.Message.settings, let object = message.object {
            renderer.pointee.settings = object.assumingMemoryBound(to: Mixer3DInputSettings.self)
        }
    }

    // MARK: Render resources

    public override func allocateRenderResources() throws(AudioError) {
        let output = try streamFormat(scope: .output, element: 0)
        let block = Mixer3DSettingsBlock(inputSettings)
        settingsBlock = block
        var made: [VariableRateResampler] = []
        var delays: [Int] = []
        for element in 0..<inputs.count {
            let channels = Int(inputs[element].format.channelsPerFrame)
            let resampler = try VariableRateResampler(channels: channels, maximumRatio: 2)
            delays.append(Self.warm(resampler, channels: channels, frames: maximumFramesPerSlice, capacity: Mixer3DRenderer.rateCapacity(maximumFramesPerSlice)))
            made.append(resampler)
        }
        resamplers = made
        try allocateHRTFRenderers()
        let slots = try Mixer3DRenderer.Slots(unit: self, inputCount: inputs.count)
        let meterTable = try meterSlotTable()
        let state = UnsafeMutablePointer<Mixer3DRenderer>.allocate(capacity: 1)
        state.initialize(
            to: Mixer3DRenderer(
                slots: slots, settings: block.settings, resamplers: made, resamplerDelays: delays, binaural: hrtf.renderers,
                inputChannels: inputs.map { Int($0.format.channelsPerFrame) }, outputChannels: Int(output.channelsPerFrame),
                sampleRate: output.sampleRate, maximumFrames: maximumFramesPerSlice,
                meterSlots: meterTable, meteredInputChannels: meteredChannels.input,
                metering: inputMetering + [outputMetering], auxiliaryBusCount: auxiliaryBusCount,
                auxiliarySlots: try auxiliarySlotTable()))
        for (element, lender) in inputLenders where element < inputs.count && state.pointee.voices[element].channels == 1 {
            state.pointee.voices[element].rate.lender = lender
        }
        renderer = state
    }

    public override func deallocateRenderResources() {
        if let renderer {
            renderer.pointee.deallocate()
            renderer.deinitialize(count: 1)
            renderer.deallocate()
        }
        renderer = nil
        resamplers = []
        hrtf.renderers = []
        settingsBlock = nil
    }

    public override func resetRenderState() {
        renderer?.pointee.reset()
    }

    /// libsoxr allocates while its buffers grow: run silence through here, at the ratios and in
    /// the amounts the render side will use (up to `capacity` frames in, `frames` out at a time),
    /// so the render thread never meets those allocations. Not cleared afterwards (a clear frees
    /// them again): the resampler keeps holding a few frames of silence. Returns how many
    /// outputs an input frame given now comes out behind (an impulse's position, measured), so
    /// the render side can drop exactly the stale outputs when it first switches to the resampler.
    static func warm(_ resampler: VariableRateResampler, channels: Int, frames: Int, capacity: Int) -> Int {
        var input = [Float](repeating: 0, count: capacity * channels)
        var output = [Float](repeating: 0, count: max(frames, 64) * channels)
        let outputFrames = max(frames, 64)
        func run(_ count: Int) -> [Float] {
            var made: [Float] = []
            input.withUnsafeBufferPointer { source in
                output.withUnsafeMutableBufferPointer { sink in
                    var offset = 0
                    var idle = 0
                    while offset < count || idle < 2 {
                        let (consumed, produced) = resampler.process(
                            source.baseAddress! + offset * channels, frames: count - offset, into: sink.baseAddress!, capacity: outputFrames)
                        offset += consumed
                        made += sink[0..<(produced * channels)]
                        idle = produced == 0 ? idle + 1 : 0
                        if consumed == 0 && produced == 0 && offset >= count { break }
                    }
                }
            }
            return made
        }
        for ratio in [1, 0.5, 2, 1.37, 0.71, 1.9, 0.53, 1.13, 1] {
            do throws(AudioError) { try resampler.setRatio(ratio) } catch {}
            for round in 0..<6 { _ = run(round % 2 == 0 ? capacity : 16) }
        }
        for _ in 0..<8 { _ = run(frames) }
        // The probe: an impulse, then silence until it has come out and gone.
        input[0] = 1
        var outputs = run(64)
        input[0] = 0
        while outputs.count < (512 + 64) * channels { outputs += run(64) }
        var peak = 0
        for index in stride(from: 0, to: outputs.count, by: channels) where abs(outputs[index]) > abs(outputs[peak * channels]) {
            peak = index / channels
        }
        return peak
    }

    public override func process(_ context: RenderContext) -> AudioError.Code {
        guard let renderer else { return .uninitialized }
        return renderer.pointee.render(context)
    }

    /// Input frames of `element` pulled but not yet heard (the playback-rate resampler's
    /// look-ahead): a source that reports a play position subtracts them. For the render
    /// thread, after a render (plain reads, no allocation); 0 when uninitialized.
    public func inputFramesAhead(element: Int) -> Double {
        guard let renderer, element >= 0, element < renderer.pointee.voiceCount else { return 0 }
        return renderer.pointee.voices[element].rate.heldFrames
    }
}

extension Mixer3DUnit {
    /// `setParameter(id, scope: .input, element: element, to: value)` for callers that set
    /// thousands a second (the OpenAL-style API: every moving source at every update): the
    /// same clamp, stored value and render command, but the definition is found through a
    /// cache instead of a search that copies it (its strings) at every call.
    public func setInputParameter(_ id: AudioUnitParameterID, element: Int, to value: Float) throws(AudioError) {
        if let cached = inputParameterCache[id], cached.index < parameterDefinitions.count,
            parameterDefinitions[cached.index].id == id, parameterDefinitions[cached.index].scope == .input,
            element >= 0, element < inputs.count
        {
            let applied = value.isNaN ? cached.initial : min(max(value, cached.minimum), cached.maximum)
            let slot = slotBases[cached.index] + element
            slotValues[slot] = applied
            if isInitialized {
                send(.parameter(ParameterEvent(slot: Int32(slot), frameOffset: 0, duration: 0, startValue: 0, endValue: applied, hasStartValue: false)))
            }
            parameterWasScheduled(
                ParameterAddress(id, scope: .input, element: element), from: nil, to: applied, duration: 0, bufferOffset: 0)
            return
        }
        // The general path checks everything (and throws what it finds); then the cache learns the definition.
        try setParameter(id, scope: .input, element: element, to: value)
        let (index, definition) = try self.definition(id, scope: .input)
        inputParameterCache[id] = (index, definition.info.minValue, definition.info.maxValue, definition.info.defaultValue)
    }
}
