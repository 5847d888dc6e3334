import SonoraCore
import SonoraUnits

/// The voice processor effect ('aufx'/'vpro', Sonora's): echo cancellation and
/// suppression for graphs whose I/O is elsewhere and for offline pipelines. Input
/// element 0 is the microphone, input element 1 the reference (what the loudspeaker
/// plays, aligned so that reference[n] is playing when microphone[n] is captured); the
/// one output is the cleaned microphone, `latency` seconds (two blocks) later. Channel 0
/// of each input is processed; every output channel carries the result.
///
/// Parameters (`VoiceProcessingParameter`): bypass, AGC, mute output, suppression
/// strength, noise suppression, comfort noise — all changeable while rendering — and the
/// read-only metrics estimated delay, ERLE, double talk and drift.
public final class VoiceProcessorUnit: AudioUnit, @unchecked Sendable {
    public static let componentDescription = AudioComponentDescription(type: .effect, subType: "vpro", manufacturer: .sonora)

    /// Settings fixed at initialize (filter length, maximum delay, drift compensation);
    /// the sample rate comes from the stream format.
    public var cancellerSettings: EchoCancellerConfiguration

    /// Owns the canceller (set and cleared off the realtime thread)…
    private var voice: VoiceProcessingState?
    /// …and the render reaches it through this view: binding the optional class property
    /// retained and released it (and its canceller) on every render on the I/O thread
    /// (`sonora-bench refcounts`, the appliance's pipeline with a `voice` node).
    @exclusivity(unchecked) private var renderVoice: Unmanaged<VoiceProcessingState>?

    public init() {
        cancellerSettings = EchoCancellerConfiguration(sampleRate: 48000)
        super.init(
            description: Self.componentDescription, name: "VoiceProcessor", inputs: 2, outputs: 1,
            parameters: VoiceProcessingParameter.definitions(defaults: EchoCancellerConfiguration(sampleRate: 48000)))
    }

    /// The reference may be left unconnected (silence: nothing to cancel).
    public override var requiresConnectedInputs: Bool { false }
    public override var supportsBypass: Bool { false }

    public override func validateFormats() throws(AudioError) {
        try super.validateFormats()
        let microphone = try streamFormat(scope: .input, element: 0)
        let reference = try streamFormat(scope: .input, element: 1)
        let output = try streamFormat(scope: .output, element: 0)
        guard microphone.sampleRate == reference.sampleRate, microphone.sampleRate == output.sampleRate else {
            throw AudioError(.formatNotSupported, "\(name): microphone (\(microphone.sampleRate) Hz), reference (\(reference.sampleRate) Hz) and output (\(output.sampleRate) Hz) must share one rate")
        }
    }

    public override func allocateRenderResources() throws(AudioError) {
        var settings = cancellerSettings
        settings.sampleRate = try streamFormat(scope: .output, element: 0).sampleRate
        settings.maximumFramesPerCall = maximumFramesPerSlice
        settings.suppressionStrength = try parameter(VoiceProcessingParameter.suppressionStrength)
        let canceller = try EchoCanceller(configuration: settings)
        let state = try VoiceProcessingState(canceller: canceller, unit: self)
        voice = state
        renderVoice = .passUnretained(state)
    }

    public override func deallocateRenderResources() {
        renderVoice = nil
        voice = nil
    }

    public override func resetRenderState() { voice?.canceller.reset() }

    public override var latency: Double {
        let rate = (try? streamFormat(scope: .output, element: 0).sampleRate) ?? cancellerSettings.sampleRate
        var settings = cancellerSettings
        settings.sampleRate = rate
        return Double(settings.latencyFrames) / rate
    }

    public override func extendedPropertyInfo(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement) throws(AudioError) -> AudioUnitPropertyInfo? {
        guard id.voiceParameter != nil else { return nil }
        guard scope == .global else { throw AudioError(.invalidScope, "\(name): \(id) is in the global scope") }
        return AudioUnitPropertyInfo(size: 4, isWritable: true)
    }

    public override func extendedProperty(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement) throws(AudioError) -> AudioUnitPropertyValue {
        guard let parameter = id.voiceParameter else { throw AudioError(.invalidProperty, "\(name) has no \(id)") }
        return .flag(try self.parameter(parameter) >= 0.5)
    }

    public override func setExtendedProperty(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement, to value: AudioUnitPropertyValue) throws(AudioError) {
        guard let parameter = id.voiceParameter, case .flag(let on) = value else {
            throw AudioError(.invalidPropertyValue, "\(name): wrong kind of value for \(id)")
        }
        try setParameter(parameter, to: on ? 1 : 0)
    }

    public override func process(_ context: RenderContext) -> AudioError.Code {
        guard let renderVoice else { return .uninitialized }
        return renderVoice._withUnsafeGuaranteedRef { process(context, voice: $0) }
    }

    @inline(__always)
    private func process(_ context: RenderContext, voice: VoiceProcessingState) -> AudioError.Code {
        let microphone = context.input(0)
        let reference = context.input(1)
        let output = context.output
        let frames = context.frameCount
        let muted = voice.applySettings(context)
        let destination = output.samples(0)
        voice.canceller.process(microphone: microphone.samples(0), reference: reference.samples(0), output: destination, frames: frames)
        if muted { destination.update(repeating: 0, count: frames) }
        for channel in 1..<max(1, output.channelCount) {
            output.samples(channel).update(from: destination, count: frames)
        }
        voice.publishMetrics(context)
        return .noError
    }
}
