import Logging
import SonoraCore
import SonoraHAL
import Synchronization

/// The I/O unit ('auou'/'rioc', Core Audio's RemoteIO): the head of a live graph, driven
/// by an audio device's I/O thread.
///
/// Core Audio's conventions: output element 0 plays, input element 1 captures; EnableIO
/// per element (output on, input off by default); the client format is the input scope
/// of element 0 (what the graph gives to play) and the output scope of element 1 (what
/// capture delivers); the device's side is the output scope of element 0 and the input
/// scope of element 1 (read-only). The input callback (SetInputCallback) is called once
/// per cycle when captured input is ready; it (or any unit connected to bus 1) gets the
/// samples with `render(… bus: 1 …)`. Formats are canonical float at the device rate;
/// the client and device channel counts may differ (extra channels are silent).
///
/// The device: `setDevice(_:)` with an open `AudioDevice`, or CurrentDevice as a name
/// (`null`, `offline`, `inprocess:FRAMES` or an ALSA PCM) opened at `initialize()` with
/// `deviceConfiguration`. Start and stop through `AudioGraph.start()/stop()` or
/// `start()`/`stop()` here.
///
/// Open for I/O units that do more with a cycle (the voice-processing I/O unit, as in Core
/// Audio, is one): they override `processCycle(_:)` and build it from `renderOutput(_:)`
/// and `callInputCallback(_:)`; everything else — device, EnableIO, formats, properties,
/// start, stop, fade-out — they inherit.
open class IOUnit: AudioUnit, DeviceDrivingUnit, @unchecked Sendable {
    public static let componentDescription = AudioComponentDescription(type: .outputUnit, subType: "rioc", manufacturer: .apple)

    /// Element numbers, as Core Audio names them.
    public static let outputElement = 0
    public static let inputElement = 1

    /// Period, buffer count, priority … for a device this unit opens itself.
    public var deviceConfiguration = AudioDeviceConfiguration(inputChannels: 0)
    /// The device to open at `initialize()` when none was set.
    public private(set) var deviceName = "null"
    public private(set) var device: (any AudioDevice)?
    private var deviceIsOwned = false
    private var outputEnabled = true
    private var inputEnabled = false
    private var inputCallback: RenderCallback?
    private var inputCallbackTarget: RenderCallbackTarget?
    private lazy var cycleTarget = CycleTarget(self)
    /// The graph whose render drives this unit (so graph updates apply at cycle starts).
    private var driver: Unmanaged<AudioGraph>?
    /// Fade-out: frames requested by the control side; the I/O thread ramps the output to
    /// silence over them and then keeps it silent, and says when it is done.
    private let fadeRequest = Atomic<Int>(0)
    private let fadedOut = Atomic<Bool>(false)
    @exclusivity(unchecked) private var fadeGain: Float = 1
    @exclusivity(unchecked) private var fadeStep: Float = 0
    /// The cycle being processed, read on the I/O thread by renders of bus 1.
    @exclusivity(unchecked) fileprivate var currentCycle: UnsafeMutablePointer<IOCycle>?

    public convenience init() {
        self.init(description: Self.componentDescription, name: "RemoteIO")
    }

    /// An I/O unit under another component description and name (a subclass's), with its
    /// parameters; `capturing`: input (element 1) enabled from the start.
    public init(description: AudioComponentDescription, name: String, parameters: [AudioUnitParameterDefinition] = [], capturing: Bool = false) {
        inputEnabled = capturing
        super.init(description: description, name: name, inputs: 2, outputs: 2, parameters: parameters)
    }

    deinit { stop() }

    public override var pullsInputsItself: Bool { true }
    public override var requiresConnectedInputs: Bool { false }
    public override var supportsBypass: Bool { false }

    // MARK: Configuration

    /// Uses `device` (already open); the unit does not close it.
    public func setDevice(_ device: any AudioDevice) throws(AudioError) {
        guard !isInitialized else { throw AudioError(.initialized, "\(name): set the device before initializing") }
        self.device = device
        deviceIsOwned = false
        deviceName = device.driver
    }

    /// Opens the device called `name` at `initialize()` (a name `DeviceSpecifier`
    /// parses; a bad one is refused here, before anything is opened).
    public func setDevice(named name: String) throws(AudioError) {
        guard !isInitialized else { throw AudioError(.initialized, "\(self.name): set the device before initializing") }
        do {
            _ = try DeviceSpecifier(parsing: name)
        } catch {
            throw AudioError(.invalidPropertyValue, "\(self.name): \(error.message)")
        }
        deviceName = name
        device = nil
    }

    public func isIOEnabled(scope: AudioUnitScope, element: AudioUnitElement) -> Bool {
        element == Self.outputElement ? outputEnabled : inputEnabled
    }

    /// EnableIO: output scope element 0 (playback) or input scope element 1 (capture).
    public func setIOEnabled(_ enabled: Bool, scope: AudioUnitScope, element: AudioUnitElement) throws(AudioError) {
        guard !isInitialized else { throw AudioError(.initialized, "\(name): EnableIO cannot change while initialized") }
        switch (scope, element) {
        case (.output, Self.outputElement): outputEnabled = enabled
        case (.input, Self.inputElement): inputEnabled = enabled
        default: throw AudioError(.invalidElement, "\(name): EnableIO is output scope element 0 or input scope element 1")
        }
    }

    /// SetInputCallback: called on the I/O thread once per cycle when input is ready.
    public func setInputCallback(_ callback: RenderCallback?, keeping target: RenderCallbackTarget? = nil) throws(AudioError) {
        guard !isRunning else { throw AudioError(.cannotDoInCurrentContext, "\(name): stop before changing the input callback") }
        inputCallback = callback
        inputCallbackTarget = target
    }

    public func setInputCallback(_ target: RenderCallbackTarget) throws(AudioError) {
        try setInputCallback(RenderCallback(target), keeping: target)
    }

    public var isRunning: Bool { device?.isRunning ?? false }

    /// EnableIO of element 0 (playback) and element 1 (capture), for a cycle's work.
    public final var isOutputEnabled: Bool { outputEnabled }
    public final var isInputEnabled: Bool { inputEnabled }

    // MARK: Extended properties

    open override func extendedPropertyInfo(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement) throws(AudioError) -> AudioUnitPropertyInfo? {
        switch id {
        case .enableIO:
            guard (scope == .output && element == 0) || (scope == .input && element == 1) else {
                throw AudioError(.invalidElement, "\(name): EnableIO is output scope element 0 or input scope element 1")
            }
            return AudioUnitPropertyInfo(size: 4, isWritable: true)
        case .currentDevice, .isRunning, .hasIO, .setInputCallback:
            guard scope == .global else { throw AudioError(.invalidScope, "\(name): \(id) is in the global scope") }
            return AudioUnitPropertyInfo(size: id == .setInputCallback ? 16 : 4, isWritable: id == .currentDevice || id == .setInputCallback)
        default:
            return nil
        }
    }

    open override func extendedProperty(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement) throws(AudioError) -> AudioUnitPropertyValue {
        switch id {
        case .enableIO: .flag(isIOEnabled(scope: scope, element: element))
        case .currentDevice: .device(deviceName)
        case .isRunning: .flag(isRunning)
        case .hasIO: .flag(outputEnabled || inputEnabled)
        case .setInputCallback: .renderCallback(inputCallback)
        default: throw AudioError(.invalidProperty, "\(name) has no \(id)")
        }
    }

    open override func setExtendedProperty(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement, to value: AudioUnitPropertyValue) throws(AudioError) {
        switch (id, value) {
        case (.enableIO, .flag(let on)): try setIOEnabled(on, scope: scope, element: element)
        case (.currentDevice, .device(let text)): try setDevice(named: text)
        case (.setInputCallback, .renderCallback(let callback)): try setInputCallback(callback)
        default: throw AudioError(.invalidPropertyValue, "\(name): wrong kind of value for \(id)")
        }
    }

    // MARK: Lifecycle

    /// Opens the device (when the unit owns it) and takes its format for the device side.
    open override func validateFormats() throws(AudioError) {
        if device == nil {
            var configuration = deviceConfiguration
            configuration.sampleRate = Int(inputs[0].format.sampleRate)
            configuration.outputChannels = outputEnabled ? Int(inputs[0].format.channelsPerFrame) : 0
            configuration.inputChannels = inputEnabled ? Int(outputs[1].format.channelsPerFrame) : 0
            device = try AudioDevices.open(named: deviceName, configuration: configuration)
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
            let client = scope == .input ? inputs[element].format : outputs[element].format
            guard client.sampleRate == rate else {
                throw AudioError(.formatNotSupported, "\(name): client format runs at \(client.sampleRate) Hz but the device runs at \(format.sampleRate) Hz; put a converter unit before the I/O unit")
            }
        }
        outputs[0].format = .canonical(sampleRate: rate, channels: max(1, format.outputChannels))
        inputs[1].format = .canonical(sampleRate: rate, channels: max(1, format.inputChannels))
        if maximumFramesPerSlice < format.periodFrames { maximumFramesPerSlice = format.periodFrames }
        try super.validateFormats()
    }

    open override func deallocateRenderResources() {
        stop()
        if deviceIsOwned { device = nil }
    }

    /// Latency on the device: the playback buffer (the round trip Sonora adds).
    open override var latency: Double {
        guard let format = device?.format else { return 0 }
        return Double(format.roundTripFrames) / Double(format.sampleRate)
    }

    /// Starts the device's I/O thread (AudioOutputUnitStart). `graph`, when given, is
    /// rendered each cycle so its updates apply at cycle starts.
    public func start(driving graph: AudioGraph? = nil) throws(AudioError) {
        guard isInitialized, let device else { throw AudioError(.uninitialized, "\(name): initialize before starting") }
        guard !device.isRunning else { return }
        driver = graph.map { Unmanaged.passUnretained($0) }
        try device.start(IOProcedure(cycleTarget))
    }

    /// Ramps the output down to silence over `frames` frames (then silence), so stopping
    /// does not click. `isFadedOut` turns true when the ramp has played.
    public func fadeOut(frames: Int) {
        fadedOut.store(false, ordering: .relaxed)
        fadeRequest.store(max(1, frames), ordering: .releasing)
    }

    public var isFadedOut: Bool { fadedOut.load(ordering: .acquiring) }

    /// Stops the device's I/O thread (AudioOutputUnitStop).
    public func stop() {
        device?.stop()
        driver = nil
    }

    // MARK: Rendering

    open override func process(_ context: RenderContext) -> AudioError.Code {
        if context.bus == Self.inputElement {
            guard let cycle = currentCycle, inputEnabled else { context.output.clear(); return .noError }
            let captured = cycle.pointee.input
            let offset = context.frameOffset
            for channel in 0..<context.output.channelCount {
                if channel < captured.channelCount && offset + context.frameCount <= captured.frameCount {
                    context.output.samples(channel).update(from: captured.samples(channel) + offset, count: context.frameCount)
                } else {
                    context.output.samples(channel).update(repeating: 0, count: context.frameCount)
                }
            }
            return .noError
        }
        let (pulled, status) = context.pullInput(0, frameCount: context.frameCount, sampleTime: context.timeStamp.sampleTime)
        guard status == .noError else { return status }
        for channel in 0..<context.output.channelCount {
            if channel < pulled.channelCount {
                context.output.samples(channel).update(from: pulled.samples(channel), count: context.frameCount)
            } else {
                context.output.samples(channel).update(repeating: 0, count: context.frameCount)
            }
        }
        return .noError
    }

    /// One device cycle (on the I/O thread): the cycle is what bus 1 renders while it lasts.
    fileprivate final func runCycle(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 {
        currentCycle = cycle
        defer { currentCycle = nil }
        return processCycle(cycle)
    }

    /// One device cycle: the input callback, then element 0 into the device's output. A
    /// subclass may change what a cycle does (its capture is what bus 1 and the input
    /// callback see, so a processed capture goes back into `cycle.input`). Returns 0 or an
    /// `AudioError.Code` raw value; nothing here may allocate, lock or wait.
    open func processCycle(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 {
        let status = callInputCallback(cycle)
        if status != .noError { return status.rawValue }
        return renderOutput(cycle).rawValue
    }

    /// Calls the input callback (when capture is enabled and one is set) for this cycle's capture.
    public final func callInputCallback(_ cycle: UnsafeMutablePointer<IOCycle>) -> AudioError.Code {
        guard inputEnabled, let inputCallback else { return .noError }
        var request = RenderRequest(
            flags: [], timeStamp: cycle.pointee.inputTime, bus: Self.inputElement,
            frameCount: cycle.pointee.frameCount, buffers: cycle.pointee.input)
        return withUnsafeMutablePointer(to: &request) { inputCallback.call($0) }
    }

    /// Renders element 0 (through the driving graph, so its updates apply at the cycle's
    /// start) into the device's output, fading out when asked; silence when playback is off.
    public final func renderOutput(_ cycle: UnsafeMutablePointer<IOCycle>) -> AudioError.Code {
        guard outputEnabled, cycle.pointee.output.channelCount > 0 else { return .noError }
        var flags = RenderActionFlags()
        var stamp = cycle.pointee.outputTime
        stamp.sampleTime = cycle.pointee.inputTime.sampleTime
        let status: AudioError.Code
        if let driver {
            status = driver._withUnsafeGuaranteedRef {
                $0.render(flags: &flags, timeStamp: stamp, frameCount: cycle.pointee.frameCount, into: cycle.pointee.output)
            }
        } else {
            status = render(flags: &flags, timeStamp: stamp, bus: Self.outputElement, frameCount: cycle.pointee.frameCount, into: cycle.pointee.output)
        }
        applyFade(cycle.pointee.output, frames: cycle.pointee.frameCount)
        return status
    }

    @inline(__always)
    private func applyFade(_ output: AudioBufferList, frames: Int) {
        let requested = fadeRequest.exchange(0, ordering: .acquiring)
        if requested > 0 { fadeStep = fadeGain / Float(requested) }
        guard fadeStep > 0 else { return }
        for frame in 0..<frames {
            for channel in 0..<output.channelCount { output.samples(channel)[frame] *= fadeGain }
            fadeGain = max(0, fadeGain - fadeStep)
        }
        if fadeGain == 0 { fadedOut.store(true, ordering: .releasing) }
    }

    /// A unit (no inputs, one output) that renders what this I/O unit captured in the
    /// current cycle — the same as its bus 1, as a node of its own so a graph can take
    /// capture and feed the I/O unit's element 0 without a cycle through one node.
    public func makeCaptureSource() -> CaptureSourceUnit { CaptureSourceUnit(io: self) }

    /// The captured samples of the cycle in progress (I/O thread only).
    func capturedInput() -> AudioBufferList? {
        guard inputEnabled, let cycle = currentCycle else { return nil }
        return cycle.pointee.input
    }

    /// Bridges the device's I/O procedure to the unit without reference counting.
    private final class CycleTarget: IOCycleTarget, @unchecked Sendable {
        unowned(unsafe) let unit: IOUnit
        init(_ unit: IOUnit) { self.unit = unit }
        override func process(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 {
            unit.runCycle(cycle)
        }
    }
}

/// What the I/O unit captured this cycle, as a generator node ('augn'/'capt', Sonora's).
public final class CaptureSourceUnit: AudioUnit, @unchecked Sendable {
    public static let componentDescription = AudioComponentDescription(type: .generator, subType: "capt", manufacturer: .sonora)
    unowned(unsafe) let io: IOUnit

    init(io: IOUnit) {
        self.io = io
        super.init(description: Self.componentDescription, name: "Capture", inputs: 0, outputs: 1)
    }

    public override func process(_ context: RenderContext) -> AudioError.Code {
        guard let captured = io.capturedInput() else { context.output.clear(); return .noError }
        let offset = context.frameOffset
        for channel in 0..<context.output.channelCount {
            if channel < captured.channelCount && offset + context.frameCount <= captured.frameCount {
                context.output.samples(channel).update(from: captured.samples(channel) + offset, count: context.frameCount)
            } else {
                context.output.samples(channel).update(repeating: 0, count: context.frameCount)
            }
        }
        return .noError
    }
}
