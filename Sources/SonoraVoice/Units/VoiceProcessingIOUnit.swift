import SonoraCore
import SonoraHAL
import SonoraUnits

/// The voice-processing I/O unit ('auou'/'vpio', Core Audio's VoiceProcessingIO): an
/// `IOUnit` — output element 0 plays, input element 1 captures, EnableIO, an input
/// callback, a device opened by name or given, fade-out — whose captured signal is
/// echo-cancelled against exactly what the unit sends to the device. As in Core Audio, it
/// is the RemoteIO unit with voice processing: only what a cycle does is its own.
///
/// Each device cycle it first renders element 0 into the device's output period and
/// keeps channel 0 of what it sent in a reference ring; then it reads the reference the
/// device's round trip (`format.roundTripFrames`, from the driver: periods × period on
/// ALSA) earlier, so the canceller sees the loudspeaker's signal aligned with the
/// microphone up to the acoustic path alone, and cancels channel 0 of the captured period
/// into every channel of the capture — what element 1 renders, what a capture source
/// node gives and what the input callback's buffers hold. Settings are the shared
/// `VoiceProcessingParameter`s (also as Core Audio's properties BypassVoiceProcessing,
/// VoiceProcessingEnableAGC, MuteOutput); mute silences what is played (and so the reference).
public final class VoiceProcessingIOUnit: IOUnit, @unchecked Sendable {
    public static let voiceProcessingDescription = AudioComponentDescription(type: .outputUnit, subType: "vpio", manufacturer: .apple)

    /// The canceller's settings at `initialize()` (its sample rate and frame size follow the device).
    public var cancellerSettings: EchoCancellerConfiguration

    // Render-side voice (allocated at initialize).
    private var voice: VoiceProcessingState?
    /// The render side's view of `voice`: binding the optional class property retained and
    /// released it on the I/O thread every cycle (see VoiceProcessorUnit).
    @exclusivity(unchecked) private var renderVoice: Unmanaged<VoiceProcessingState>?
    @exclusivity(unchecked) private var referenceRing: UnsafeMutablePointer<Float>?
    @exclusivity(unchecked) private var ringMask = 0
    @exclusivity(unchecked) private var sentFrames = 0
    @exclusivity(unchecked) private var capturedFrames = 0
    @exclusivity(unchecked) private var roundTrip = 0
    @exclusivity(unchecked) private var alignedReference: UnsafeMutablePointer<Float>?
    @exclusivity(unchecked) private var processed: UnsafeMutablePointer<Float>?
    @exclusivity(unchecked) private var muted = false

    public init() {
        cancellerSettings = EchoCancellerConfiguration(sampleRate: 48000)
        super.init(
            description: Self.voiceProcessingDescription, name: "VoiceProcessingIO",
            parameters: VoiceProcessingParameter.definitions(defaults: EchoCancellerConfiguration(sampleRate: 48000)),
            capturing: true)
        // One microphone and one loudspeaker unless told otherwise.
        deviceConfiguration = AudioDeviceConfiguration(inputChannels: 1, outputChannels: 1)
    }

    deinit {
        stop()
        releaseBuffers()
    }

    // MARK: Properties (Core Audio's voice-processing ones; the rest are the I/O unit's)

    public override func extendedPropertyInfo(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement) throws(AudioError) -> AudioUnitPropertyInfo? {
        guard id.voiceParameter != nil else { return try super.extendedPropertyInfo(id, scope: scope, element: element) }
        guard scope == .global else { throw AudioError(.invalidScope, "\(name): \(id) is in the global scope") }
        return AudioUnitPropertyInfo(size: 4, isWritable: true)
    }

    public override func extendedProperty(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement) throws(AudioError) -> AudioUnitPropertyValue {
        guard let parameter = id.voiceParameter else { return try super.extendedProperty(id, scope: scope, element: element) }
        return .flag(try self.parameter(parameter) >= 0.5)
    }

    public override func setExtendedProperty(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement, to value: AudioUnitPropertyValue) throws(AudioError) {
        guard let parameter = id.voiceParameter else { return try super.setExtendedProperty(id, scope: scope, element: element, to: value) }
        guard case .flag(let on) = value else { throw AudioError(.invalidPropertyValue, "\(name): \(id) takes a flag") }
        try setParameter(parameter, to: on ? 1 : 0)
    }

    // MARK: Lifecycle

    public override func allocateRenderResources() throws(AudioError) {
        try super.allocateRenderResources()
        guard let device else { throw AudioError(.uninitialized, "\(name): no device") }
        let format = device.format
        var settings = cancellerSettings
        settings.sampleRate = Double(format.sampleRate)
        let period = max(format.periodFrames, maximumFramesPerSlice)
        settings.maximumFramesPerCall = period
        settings.suppressionStrength = try parameter(VoiceProcessingParameter.suppressionStrength)
        let canceller = try EchoCanceller(configuration: settings)
        let state = try VoiceProcessingState(canceller: canceller, unit: self)
        voice = state
        renderVoice = .passUnretained(state)
        roundTrip = max(0, format.roundTripFrames)
        var size = 1
        while size < roundTrip + 2 * period + 1 { size *= 2 }
        releaseBuffers()
        referenceRing = .allocate(capacity: size)
        referenceRing!.initialize(repeating: 0, count: size)
        ringMask = size - 1
        alignedReference = .allocate(capacity: period)
        alignedReference!.initialize(repeating: 0, count: period)
        processed = .allocate(capacity: period)
        processed!.initialize(repeating: 0, count: period)
        sentFrames = 0
        capturedFrames = 0
    }

    public override func deallocateRenderResources() {
        stop()
        renderVoice = nil
        voice = nil
        releaseBuffers()
        super.deallocateRenderResources()
    }

    private func releaseBuffers() {
        referenceRing?.deallocate(); referenceRing = nil
        alignedReference?.deallocate(); alignedReference = nil
        processed?.deallocate(); processed = nil
    }

    /// The device's round trip plus the canceller's own latency on the captured side.
    public override var latency: Double {
        guard let format = device?.format else { return 0 }
        var settings = cancellerSettings
        settings.sampleRate = Double(format.sampleRate)
        return super.latency + Double(settings.latencyFrames) / Double(format.sampleRate)
    }

    // MARK: Rendering

    /// Element 0 as the I/O unit plays it, with this slice's settings applied, the metrics
    /// published and the output muted when asked; element 1 (the cancelled capture) as the I/O unit's.
    public override func process(_ context: RenderContext) -> AudioError.Code {
        guard context.bus == Self.outputElement else { return super.process(context) }
        guard let renderVoice else { return .uninitialized }
        muted = renderVoice._withUnsafeGuaranteedRef { voice in
            defer { voice.publishMetrics(context) }
            return voice.applySettings(context)
        }
        let status = super.process(context)
        if muted { context.output.clear() }
        return status
    }

    /// One device cycle: cancel the capture against what was played one round trip ago,
    /// play element 0 and remember it, then hand the capture to the input callback.
    ///
    /// The capture is cancelled *before* element 0 renders: the graph that renders it may
    /// pull the capture (a capture source node, a pipeline's `input`) and must get it
    /// cancelled. The reference it needs was sent in earlier cycles whenever the round trip
    /// covers a period (ALSA: periods × period); only a device with a shorter round trip
    /// is cancelled after rendering, against what this cycle plays.
    public override func processCycle(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 {
        guard let renderVoice else { return 0 }
        return renderVoice._withUnsafeGuaranteedRef { processCycle(cycle, voice: $0) }
    }

    @inline(__always)
    private func processCycle(_ cycle: UnsafeMutablePointer<IOCycle>, voice: VoiceProcessingState) -> Int32 {
        let frames = cycle.pointee.frameCount
        let capture = cycle.pointee.input
        let captures = isInputEnabled && capture.channelCount > 0
        let cancelFirst = roundTrip >= frames
        if captures && cancelFirst { cancel(capture, frames: frames, voice: voice) }
        let status = renderOutput(cycle)
        if status != .noError { return status.rawValue }
        remember(cycle.pointee.output, frames: frames)
        guard captures else { return 0 }
        if !cancelFirst { cancel(capture, frames: frames, voice: voice) }
        return callInputCallback(cycle).rawValue
    }

    /// Keeps channel 0 of what was sent to the device (silence when output is off) in the reference ring.
    private func remember(_ output: AudioBufferList, frames: Int) {
        guard let ring = referenceRing else { return }
        if isOutputEnabled, output.channelCount > 0 {
            let sent = output.samples(0)
            for n in 0..<frames { ring[(sentFrames + n) & ringMask] = sent[n] }
        } else {
            for n in 0..<frames { ring[(sentFrames + n) & ringMask] = 0 }
        }
        sentFrames += frames
    }

    /// Cancels channel 0 of the captured period against the reference one round trip
    /// earlier, into every channel of the capture.
    private func cancel(_ capture: AudioBufferList, frames: Int, voice: VoiceProcessingState) {
        guard let ring = referenceRing, let aligned = alignedReference, let processed else { return }
        let start = capturedFrames - roundTrip
        for n in 0..<frames {
            let index = start + n
            aligned[n] = index >= 0 && index < sentFrames ? ring[index & ringMask] : 0
        }
        capturedFrames += frames
        voice.canceller.process(microphone: capture.samples(0), reference: aligned, output: processed, frames: frames)
        for channel in 0..<capture.channelCount { capture.samples(channel).update(from: processed, count: frames) }
    }
}
