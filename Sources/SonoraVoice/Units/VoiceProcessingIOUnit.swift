import SonoraCore
import SonoraHAL
import SonoraUnits

/// The voice-processing I/O unit ('auou'/'vpio', Core Audio's VoiceProcessingIO): the
/// I/O unit of `IOUnit` — output element 0 plays, input element 1 captures, EnableIO,
/// an input callback, a device opened by name or given — whose captured signal is
/// echo-cancelled against exactly what the unit sends to the device.
///
/// Each device cycle it first renders element 0 into the device's output period and
/// keeps channel 0 of what it sent in a reference ring; then it reads the reference the
/// device's round trip (`format.roundTripFrames`, from the driver: periods × period on
/// ALSA) earlier, so the canceller sees the loudspeaker's signal aligned with the
/// microphone up to the acoustic path alone, and cancels channel 0 of the captured
/// period into the signal element 1 delivers (every channel carries it); then it calls
/// the input callback. Settings are the shared `VoiceProcessingParameter`s (also as
/// Core Audio's properties BypassVoiceProcessing, VoiceProcessingEnableAGC, MuteOutput);
/// mute silences what is played (and so the reference).
public final class VoiceProcessingIOUnit: AudioUnit, DeviceDrivingUnit, @unchecked Sendable {
    public static let componentDescription = AudioComponentDescription(type: .outputUnit, subType: "vpio", manufacturer: .apple)
    public static let outputElement = 0
    public static let inputElement = 1

    public var deviceConfiguration = AudioDeviceConfiguration(inputChannels: 1, outputChannels: 1)
    public var cancellerSettings: EchoCancellerConfiguration
    public private(set) var deviceName = "null"
    public private(set) var device: (any AudioDevice)?
    private var deviceIsOwned = false
    private var outputEnabled = true
    private var inputEnabled = true
    private var inputCallback: RenderCallback?
    private var inputCallbackTarget: RenderCallbackTarget?
    private lazy var cycleTarget = Target(self)
    private var driver: Unmanaged<AudioGraph>?

    // Render-side voice (allocated at initialize).
    @exclusivity(unchecked) private var voice: VoiceProcessingState?
    @exclusivity(unchecked) private var referenceRing: UnsafeMutablePointer<Float>?
    @exclusivity(unchecked) private var ringMask = 0
    @exclusivity(unchecked) private var sentFrames = 0
    @exclusivity(unchecked) private var capturedFrames = 0
    @exclusivity(unchecked) private var roundTrip = 0
    @exclusivity(unchecked) private var alignedReference: UnsafeMutablePointer<Float>?
    @exclusivity(unchecked) private var processed: UnsafeMutablePointer<Float>?
    @exclusivity(unchecked) private var processedFrames = 0
    @exclusivity(unchecked) private var muted = false

    public init() {
        cancellerSettings = EchoCancellerConfiguration(sampleRate: 48000)
        super.init(
            description: Self.componentDescription, name: "VoiceProcessingIO", inputs: 2, outputs: 2,
            parameters: VoiceProcessingParameter.definitions(defaults: EchoCancellerConfiguration(sampleRate: 48000)))
    }

    deinit {
        stop()
        releaseBuffers()
    }

    public override var pullsInputsItself: Bool { true }
    public override var requiresConnectedInputs: Bool { false }
    public override var supportsBypass: Bool { false }

    // MARK: Configuration (as IOUnit)

    public func setDevice(_ device: any AudioDevice) throws(AudioError) {
        guard !isInitialized else { throw AudioError(.initialized, "\(name): set the device before initializing") }
        self.device = device
        deviceIsOwned = false
        deviceName = device.driver
    }

    public func setDevice(named name: String) throws(AudioError) {
        guard !isInitialized else { throw AudioError(.initialized, "\(self.name): set the device before initializing") }
        deviceName = name
        device = nil
    }

    public func isIOEnabled(scope: AudioUnitScope, element: AudioUnitElement) -> Bool {
        element == Self.outputElement ? outputEnabled : inputEnabled
    }

    public func setIOEnabled(_ enabled: Bool, scope: AudioUnitScope, element: AudioUnitElement) throws(AudioError) {
        guard !isInitialized else { throw AudioError(.initialized, "\(name): EnableIO cannot change while initialized") }
        switch (scope, element) {
        case (.output, Self.outputElement): outputEnabled = enabled
        case (.input, Self.inputElement): inputEnabled = enabled
        default: throw AudioError(.invalidElement, "\(name): EnableIO is output scope element 0 or input scope element 1")
        }
    }

    public func setInputCallback(_ callback: RenderCallback?, keeping target: RenderCallbackTarget? = nil) throws(AudioError) {
        guard !isRunning else { throw AudioError(.cannotDoInCurrentContext, "\(name): stop before changing the input callback") }
        inputCallback = callback
        inputCallbackTarget = target
    }

    public func setInputCallback(_ target: RenderCallbackTarget) throws(AudioError) {
        try setInputCallback(RenderCallback(target), keeping: target)
    }

    public var isRunning: Bool { device?.isRunning ?? false }

    // MARK: Properties

    public override func extendedPropertyInfo(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement) throws(AudioError) -> AudioUnitPropertyInfo? {
        switch id {
        case .enableIO:
            guard (scope == .output && element == 0) || (scope == .input && element == 1) else {
                throw AudioError(.invalidElement, "\(name): EnableIO is output scope element 0 or input scope element 1")
            }
            return AudioUnitPropertyInfo(size: 4, isWritable: true)
        case .currentDevice, .isRunning, .hasIO, .setInputCallback, .bypassVoiceProcessing, .voiceProcessingEnableAGC, .muteOutput:
            guard scope == .global else { throw AudioError(.invalidScope, "\(name): \(id) is in the global scope") }
            let writable = id != .isRunning && id != .hasIO
            return AudioUnitPropertyInfo(size: id == .setInputCallback ? 16 : 4, isWritable: writable)
        default:
            return nil
        }
    }

    public override func extendedProperty(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement) throws(AudioError) -> AudioUnitPropertyValue {
        if let parameter = id.voiceParameter { return .flag(try self.parameter(parameter) >= 0.5) }
        switch id {
        case .enableIO: return .flag(isIOEnabled(scope: scope, element: element))
        case .currentDevice: return .device(deviceName)
        case .isRunning: return .flag(isRunning)
        case .hasIO: return .flag(outputEnabled || inputEnabled)
        case .setInputCallback: return .renderCallback(inputCallback)
        default: throw AudioError(.invalidProperty, "\(name) has no \(id)")
        }
    }

    public override func setExtendedProperty(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement, to value: AudioUnitPropertyValue) throws(AudioError) {
        switch (id, value) {
        case (.enableIO, .flag(let on)): try setIOEnabled(on, scope: scope, element: element)
        case (.currentDevice, .device(let text)): try setDevice(named: text)
        case (.setInputCallback, .renderCallback(let callback)): try setInputCallback(callback)
        case (_, .flag(let on)) where id.voiceParameter != nil: try setParameter(id.voiceParameter!, to: on ? 1 : 0)
        default: throw AudioError(.invalidPropertyValue, "\(name): wrong kind of value for \(id)")
        }
    }

    // MARK: Lifecycle

    public override func validateFormats() throws(AudioError) {
        if device == nil {
            var configuration = deviceConfiguration
            let play = try streamFormat(scope: .input, element: 0), capture = try streamFormat(scope: .output, element: 1)
            configuration.sampleRate = Int(play.sampleRate)
            configuration.outputChannels = outputEnabled ? Int(play.channelsPerFrame) : 0
            configuration.inputChannels = inputEnabled ? Int(capture.channelsPerFrame) : 0
            device = try AudioDevices.open(DeviceSpecifier(parsing: deviceName), configuration: configuration)
            deviceIsOwned = true
        }
        guard let device else { return }
        let format = device.format
        if outputEnabled && format.outputChannels == 0 {
            throw AudioError(.failedInitialization, "\(name): output is enabled but device '\(deviceName)' has no playback")
        }
        if inputEnabled && format.inputChannels == 0 {
            throw AudioError(.failedInitialization, "\(name): input is enabled but device '\(deviceName)' has no capture")
        }
        let rate = Double(format.sampleRate)
        for (scope, element) in [(AudioUnitScope.input, 0), (.output, 1)] {
            let client = try streamFormat(scope: scope, element: element)
            guard client.sampleRate == rate else {
                throw AudioError(.formatNotSupported, "\(name): client format runs at \(client.sampleRate) Hz but the device runs at \(format.sampleRate) Hz; put a converter unit before the I/O unit")
            }
        }
        try setStreamFormat(.canonical(sampleRate: rate, channels: max(1, format.outputChannels)), scope: .output, element: 0)
        try setStreamFormat(.canonical(sampleRate: rate, channels: max(1, format.inputChannels)), scope: .input, element: 1)
        try super.validateFormats()
    }

    public override func allocateRenderResources() throws(AudioError) {
        guard let device else { throw AudioError(.uninitialized, "\(name): no device") }
        let format = device.format
        var settings = cancellerSettings
        settings.sampleRate = Double(format.sampleRate)
        let period = max(format.periodFrames, maximumFramesPerSlice)
        settings.maximumFramesPerCall = period
        settings.suppressionStrength = try parameter(VoiceProcessingParameter.suppressionStrength)
        let canceller = try EchoCanceller(configuration: settings)
        voice = try VoiceProcessingState(canceller: canceller, unit: self)
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
        processedFrames = 0
    }

    public override func deallocateRenderResources() {
        stop()
        voice = nil
        releaseBuffers()
        if deviceIsOwned { device = nil }
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
        return Double(format.roundTripFrames + settings.latencyFrames) / Double(format.sampleRate)
    }

    public func start(driving graph: AudioGraph? = nil) throws(AudioError) {
        guard isInitialized, let device else { throw AudioError(.uninitialized, "\(name): initialize before starting") }
        guard !device.isRunning else { return }
        driver = graph.map { Unmanaged.passUnretained($0) }
        try device.start(IOProcedure(cycleTarget))
    }

    public func stop() {
        device?.stop()
        driver = nil
    }

    // MARK: Rendering

    public override func process(_ context: RenderContext) -> AudioError.Code {
        guard let voice else { return .uninitialized }
        if context.bus == Self.inputElement {
            // The cancelled capture of this cycle.
            guard let processed, processedFrames > 0 else { context.output.clear(); return .noError }
            let offset = context.frameOffset
            for channel in 0..<context.output.channelCount {
                if offset + context.frameCount <= processedFrames {
                    context.output.samples(channel).update(from: processed + offset, count: context.frameCount)
                } else {
                    context.output.samples(channel).update(repeating: 0, count: context.frameCount)
                }
            }
            return .noError
        }
        muted = voice.applySettings(context)
        voice.publishMetrics(context)
        let (pulled, status) = context.pullInput(0, frameCount: context.frameCount, sampleTime: context.timeStamp.sampleTime)
        guard status == .noError else { return status }
        for channel in 0..<context.output.channelCount {
            if channel < pulled.channelCount && !muted {
                context.output.samples(channel).update(from: pulled.samples(channel), count: context.frameCount)
            } else {
                context.output.samples(channel).update(repeating: 0, count: context.frameCount)
            }
        }
        return .noError
    }

    /// One device cycle: play element 0 and remember it, cancel the capture against what was
    /// played one round trip ago, then hand the capture to the input callback.
    fileprivate func runCycle(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 {
        guard let voice, let ring = referenceRing, let aligned = alignedReference, let processed else { return 0 }
        let frames = cycle.pointee.frameCount
        if outputEnabled, cycle.pointee.output.channelCount > 0 {
            var flags = RenderActionFlags()
            var stamp = cycle.pointee.outputTime
            stamp.sampleTime = cycle.pointee.inputTime.sampleTime
            let status: AudioError.Code
            if let driver {
                status = driver._withUnsafeGuaranteedRef {
                    $0.render(flags: &flags, timeStamp: stamp, frameCount: frames, into: cycle.pointee.output)
                }
            } else {
                status = render(flags: &flags, timeStamp: stamp, bus: Self.outputElement, frameCount: frames, into: cycle.pointee.output)
            }
            if status != .noError { return status.rawValue }
            let sent = cycle.pointee.output.samples(0)
            for n in 0..<frames { ring[(sentFrames + n) & ringMask] = sent[n] }
        } else {
            for n in 0..<frames { ring[(sentFrames + n) & ringMask] = 0 }
        }
        sentFrames += frames
        guard inputEnabled, cycle.pointee.input.channelCount > 0 else { return 0 }
        let start = capturedFrames - roundTrip
        for n in 0..<frames {
            let index = start + n
            aligned[n] = index >= 0 ? ring[index & ringMask] : 0
        }
        capturedFrames += frames
        voice.canceller.process(microphone: cycle.pointee.input.samples(0), reference: aligned, output: processed, frames: frames)
        processedFrames = frames
        if let inputCallback {
            var request = RenderRequest(
                flags: [], timeStamp: cycle.pointee.inputTime, bus: Self.inputElement,
                frameCount: frames, buffers: cycle.pointee.input)
            let status = withUnsafeMutablePointer(to: &request) { inputCallback.call($0) }
            if status != .noError { return status.rawValue }
        }
        return 0
    }

    private final class Target: IOCycleTarget, @unchecked Sendable {
        unowned(unsafe) let unit: VoiceProcessingIOUnit
        init(_ unit: VoiceProcessingIOUnit) { self.unit = unit }
        override func process(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 { unit.runCycle(cycle) }
    }
}
