import SonoraCore
import SonoraDSP

/// Core Audio's converter unit ('aufc'/'conv'): changes sample rate (libsoxr,
/// quality selectable), channel count or order (a channel map), and — at a
/// graph's edge — sample format and interleaving: its input may be any linear
/// PCM format, read from a `PCMInputProvider`, and `renderPCM` writes its
/// output in any linear PCM format. Between units, buffers are canonical Float32.
///
/// It pulls its input in the amounts the resampler asks for, so input and
/// output run on their own timelines.
public final class ConverterUnit: AudioUnit, @unchecked Sendable {
    public static let componentDescription = AudioComponentDescription(type: .formatConverter, subType: "conv", manufacturer: .apple)

    public enum Parameter {
        /// Resampler quality, fixed at initialize: 0 quick … 4 very high (libsoxr's recipes).
        public static let quality: AudioUnitParameterID = 0
    }

    public static var qualityNames: [String] { Resampler.Quality.allCases.map(\.name) }

    /// Feeds a non-canonical input format (set before initialize; kept alive by the unit).
    public var inputProvider: PCMInputProvider?

    /// Output channel `i` takes input channel `channelMap[i]`, or silence for -1.
    /// nil: the default map (same channels; mono to all; stereo to mono averaged).
    public var channelMap: [Int]? {
        didSet { notifyListeners(.channelMap, .output, 0) }
    }

    private struct Realtime {
        /// Nil when input and output rates are equal.
        var resampler: Unmanaged<Resampler>?
        var inputChannels: Int
        var outputChannels: Int
        var map: UnsafeMutablePointer<Int>      // per output channel, see ChannelMap
        /// Input channels after resampling, before the channel map.
        var resampled: AudioBufferList
        var pendingOffset: Int
        var pendingCount: Int
        var inputSampleTime: Double
        var ratio: Double
        /// Set when the input is raw PCM from `inputProvider`.
        var rawInput: PCMBufferList?
        var rawSample: PCMSample?
        var provider: Unmanaged<PCMInputProvider>?
        /// Canonical scratch for `renderPCM` (channels × capacity).
        var pcmScratch: AudioBufferList?
    }

    private var resamplerOwner: Resampler?
    private var resampledBuffers: OwnedAudioBufferList?
    private var rawInputBuffers: OwnedPCMBufferList?
    private var pcmScratchBuffers: OwnedAudioBufferList?

    @exclusivity(unchecked) private var realtime: UnsafeMutablePointer<Realtime>?

    public init() {
        super.init(
            description: Self.componentDescription, name: "Converter", inputs: 1, outputs: 1,
            parameters: [
                AudioUnitParameterDefinition(
                    Parameter.quality,
                    AudioUnitParameterInfo(
                        name: "Quality", identifier: "quality", unit: .indexed, minValue: 0, maxValue: 4, defaultValue: 3,
                        flags: [.readWrite, .nonRealTime], valueStrings: Self.qualityNames)),
            ])
    }

    public override var pullsInputsItself: Bool { true }

    public override var hasChannelLayouts: Bool { true }

    /// A raw-PCM input needs no connection or callback: the provider feeds it.
    public override var requiresConnectedInputs: Bool { inputProvider == nil }

    /// Any linear PCM on the input (with a provider); canonical on the output.
    public override func supports(_ format: StreamFormat, scope: AudioUnitScope, element: AudioUnitElement) -> Bool {
        guard format.validationProblems.isEmpty else { return false }
        return scope == .input ? format.pcmSample != nil : format.isCanonical
    }

    public override var latency: Double {
        guard let resamplerOwner else { return 0 }
        return resamplerOwner.delay / resamplerOwner.outputRate
    }

    /// Input and output may differ in rate and channel count.
    public override func validateFormats() throws(AudioError) {
        let input = try streamFormat(scope: .input, element: 0)
        let output = try streamFormat(scope: .output, element: 0)
        if !input.isCanonical && inputProvider == nil {
            throw AudioError(.failedInitialization, "Converter: input format \(input) needs an inputProvider (units exchange canonical Float32)")
        }
        do {
            _ = try ChannelMap.sources(inputs: Int(input.channelsPerFrame), outputs: Int(output.channelsPerFrame), explicit: channelMap)
        } catch {
            throw AudioError(.failedInitialization, "Converter: \(error.message)")
        }
        let ratio = output.sampleRate / input.sampleRate
        guard ratio >= 1.0 / 256 && ratio <= 256 else {
            throw AudioError(.failedInitialization, "Converter: \(input.sampleRate) Hz to \(output.sampleRate) Hz is beyond 256×")
        }
    }

    public override func allocateRenderResources() throws(AudioError) {
        let input = try streamFormat(scope: .input, element: 0)
        let output = try streamFormat(scope: .output, element: 0)
        let inputChannels = Int(input.channelsPerFrame)
        let outputChannels = Int(output.channelsPerFrame)
        if input.sampleRate != output.sampleRate {
            let quality = Resampler.Quality(rawValue: Int(try parameter(Parameter.quality))) ?? .high
            do {
                resamplerOwner = try Resampler(from: input.sampleRate, to: output.sampleRate, channels: inputChannels, quality: quality)
            } catch {
                throw AudioError(error.code, "Converter: \(error.message)")
            }
            try warm(resamplerOwner!, channels: inputChannels, rate: input.sampleRate)
        } else {
            resamplerOwner = nil
        }
        let sources = try ChannelMap.sources(inputs: inputChannels, outputs: outputChannels, explicit: channelMap)
        let map = UnsafeMutablePointer<Int>.allocate(capacity: outputChannels)
        map.initialize(from: sources, count: outputChannels)
        let capacity = maximumFramesPerSlice
        let resampled = try OwnedAudioBufferList(channelCount: inputChannels, frameCapacity: capacity)
        resampledBuffers = resampled
        let state = UnsafeMutablePointer<Realtime>.allocate(capacity: 1)
        state.initialize(
            to: Realtime(
                resampler: resamplerOwner.map { Unmanaged.passUnretained($0) }, inputChannels: inputChannels,
                outputChannels: outputChannels, map: map, resampled: resampled.list, pendingOffset: 0, pendingCount: 0,
                inputSampleTime: 0, ratio: output.sampleRate / input.sampleRate))
        if !input.isCanonical, let provider = inputProvider {
            let raw = try OwnedPCMBufferList(format: input, frameCapacity: capacity)
            rawInputBuffers = raw
            state.pointee.rawInput = raw.list(frameCount: capacity)
            state.pointee.rawSample = input.pcmSample
            state.pointee.provider = Unmanaged.passUnretained(provider)
        }
        let scratch = try OwnedAudioBufferList(channelCount: outputChannels, frameCapacity: capacity)
        pcmScratchBuffers = scratch
        state.pointee.pcmScratch = scratch.list
        realtime = state
    }

    public override func deallocateRenderResources() {
        guard let state = realtime else { return }
        state.pointee.map.deallocate()
        state.deinitialize(count: 1)
        state.deallocate()
        realtime = nil
        resamplerOwner = nil
        resampledBuffers = nil
        rawInputBuffers = nil
        pcmScratchBuffers = nil
    }

    // MARK: Rate changes while initialized

    /// A ported program varies the rate by setting a sample rate on the running converter
    /// (Core Audio's converter takes it without uninitialize).
    override func canChangeSampleRateWhileInitialized(scope: AudioUnitScope) -> Bool { true }

    /// Builds the resampler for the new rates here, off the realtime thread, and hands it over;
    /// the old one is freed once the realtime side has taken the new one.
    override func sampleRateDidChangeWhileInitialized() throws(AudioError) {
        try validateFormats()
        let input = try streamFormat(scope: .input, element: 0)
        let output = try streamFormat(scope: .output, element: 0)
        var fresh: Resampler?
        if input.sampleRate != output.sampleRate {
            let quality = Resampler.Quality(rawValue: Int(try parameter(Parameter.quality))) ?? .high
            do {
                fresh = try Resampler(from: input.sampleRate, to: output.sampleRate, channels: Int(input.channelsPerFrame), quality: quality)
            } catch {
                throw AudioError(error.code, "Converter: \(error.message)")
            }
        }
        if let fresh { try warm(fresh, channels: Int(input.channelsPerFrame), rate: input.sampleRate) }
        retire(resamplerOwner)
        resamplerOwner = fresh
        send(.message(RealtimeMessage(
            value: output.sampleRate / input.sampleRate, object: fresh.map { Unmanaged.passUnretained($0).toOpaque() })))
        propertyDidChange(.latency)
    }

    /// libsoxr keeps allocating through its first second or so of slices (its own warm-up covers
    /// one block): run a second of silence through in slices here, so the render thread never
    /// meets those allocations. Not cleared afterwards (a clear frees them again); the silence
    /// it holds comes out as a few milliseconds of silence at the switch.
    private func warm(_ resampler: Resampler, channels: Int, rate: Double) throws(AudioError) {
        let slice = maximumFramesPerSlice
        let input = try OwnedAudioBufferList(channelCount: channels, frameCapacity: slice)
        let output = try OwnedAudioBufferList(channelCount: channels, frameCapacity: slice)
        var fed = 0
        while fed < Int(rate) {
            var offset = 0
            while offset < slice {
                let (consumed, _) = resampler.process(input.list.frames(from: offset, count: slice - offset), into: output.list)
                if consumed == 0 { break }
                offset += consumed
            }
            fed += slice
        }
    }

    override func receive(_ message: RealtimeMessage) {
        guard let state = realtime else { return }
        state.pointee.resampler = message.object.map { Unmanaged<Resampler>.fromOpaque($0) }
        state.pointee.ratio = message.value
    }

    public override func resetRenderState() {
        guard let state = realtime else { return }
        state.pointee.resampler?._withUnsafeGuaranteedRef { $0.reset() }
        state.pointee.pendingCount = 0
        state.pointee.pendingOffset = 0
    }

    public override func process(_ context: RenderContext) -> AudioError.Code {
        guard let state = realtime else { return .uninitialized }
        let need = context.frameCount
        var produced = 0
        while produced < need {
            if state.pointee.pendingCount == 0 {
                // Ask for about what the output still needs, plus a little for the filter.
                let wanted = state.pointee.resampler == nil
                    ? need - produced
                    : min(context.maximumFrames, Int(Double(need - produced) / state.pointee.ratio) + 16)
                let list: AudioBufferList
                if let raw = state.pointee.rawInput, let provider = state.pointee.provider, let sample = state.pointee.rawSample {
                    // Raw PCM: the provider fills bytes, decoded here into the canonical input buffer.
                    let frames = min(wanted, raw.frameCount)
                    let request = PCMBufferList(format: raw.format, buffers: raw.buffers, frameCount: frames)
                    let status = provider._withUnsafeGuaranteedRef { $0.fill(request, sampleTime: state.pointee.inputSampleTime) }
                    if status != .noError { return status }
                    list = context.pulledInput(0).frames(from: 0, count: frames)
                    request.decode(frames: frames, offset: 0, into: list, sample: sample)
                } else {
                    let (pulled, status) = context.pullInput(0, frameCount: wanted, sampleTime: state.pointee.inputSampleTime)
                    if status != .noError { return status }
                    list = pulled
                }
                state.pointee.inputSampleTime += Double(list.frameCount)
                state.pointee.pendingOffset = 0
                state.pointee.pendingCount = list.frameCount
            }
            let input = context.pulledInput(0)
            let pending = state.pointee.pendingCount
            let offset = state.pointee.pendingOffset
            let space = need - produced
            var consumed = 0
            var made = 0
            let resampled = state.pointee.resampled.frames(from: 0, count: min(space, state.pointee.resampled.frameCount))
            if let resampler = state.pointee.resampler {
                let (inputDone, outputDone) = resampler._withUnsafeGuaranteedRef {
                    $0.process(input.frames(from: offset, count: pending), into: resampled)
                }
                consumed = inputDone
                made = outputDone
            } else {
                made = min(pending, resampled.frameCount)
                consumed = made
                resampled.copy(from: input.frames(from: offset, count: made))
            }
            map(state, frames: made, into: context.output, at: produced)
            state.pointee.pendingOffset += consumed
            state.pointee.pendingCount -= consumed
            produced += made
            if consumed == 0 && made == 0 && state.pointee.pendingCount > 0 { return .unspecified }
        }
        return .noError
    }

    /// Renders `frameCount` frames and writes them into `destination` in its own
    /// PCM format (any sample type, interleaved or not, either byte order):
    /// the converter as the graph's edge towards a device or a file. Realtime-safe.
    public func renderPCM(
        into destination: PCMBufferList, frameCount: Int, timeStamp: AudioTimeStamp
    ) -> AudioError.Code {
        guard let state = realtime, let scratch = state.pointee.pcmScratch, let sample = destination.format.pcmSample else {
            return .uninitialized
        }
        guard destination.format.channelsPerFrame == UInt32(scratch.channelCount), frameCount <= destination.frameCount else {
            return .formatNotSupported
        }
        var done = 0
        while done < frameCount {
            let frames = min(frameCount - done, scratch.frameCount)
            var flags = RenderActionFlags()
            let status = render(
                flags: &flags, timeStamp: timeStamp.advanced(byFrames: done, sampleRate: destination.format.sampleRate),
                bus: 0, frameCount: frames, into: scratch.frames(from: 0, count: frames))
            if status != .noError { return status }
            destination.encode(scratch, frames: frames, offset: done, sample: sample)
            done += frames
        }
        return .noError
    }

    private func map(_ state: UnsafeMutablePointer<Realtime>, frames: Int, into output: AudioBufferList, at offset: Int) {
        guard frames > 0 else { return }
        ChannelMap.apply(
            state.pointee.map, from: state.pointee.resampled.frames(from: 0, count: frames),
            to: output.frames(from: offset, count: frames), frames: frames)
    }
}

extension AudioUnitPropertyID {
    /// The converter's channel map (`kAudioOutputUnitProperty_ChannelMap`).
    public static let channelMap = AudioUnitPropertyID(rawValue: 2002)
}
