import Logging
import SonoraCore
import SonoraDSP
import SonoraHAL
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The I/O unit ('auou'/'rioc', Core Audio's RemoteIO): the head of a live graph, driven
/// by an audio device's I/O thread.
///
/// Core Audio's conventions: output element 0 plays, input element 1 captures; EnableIO
/// per element (output on, input off by default); the client format is the input scope
/// of element 0 (what the graph gives to play) and the output scope of element 1 (what
/// capture delivers); the device's side is the output scope of element 0 and the input
/// scope of element 1 (read-only). The input callback (SetInputCallback) is called once
/// per cycle when captured input is ready; it (or any unit connected to bus 1) gets the
/// samples with `render(… bus: 1 …)`. Formats are canonical float.
///
/// As RemoteIO does, the unit converts between each client format and the device (rate by
/// libsoxr, channels by `ChannelMap`'s default: a mono client plays on every device channel,
/// a mono device feeds every client channel, many channels into one are averaged). When a
/// side converts, the graph renders element 0 in client-rate slices of about one period's
/// duration and each device cycle is taken from a small FIFO; the input callback is told
/// the converted frames available (a count that varies from cycle to cycle, as on iOS). The
/// latency this adds is in `latency`. Only enabled elements need a client format.
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
    /// Conversions between the client formats and the device, made at `initialize()` when a
    /// side's rate or channels differ (and again at each start, so a stream starts clean).
    private var playbackConversion: IOPlaybackConversion?
    private var captureConversion: IOCaptureConversion?
    @exclusivity(unchecked) private var playbackConverter: Unmanaged<IOPlaybackConversion>?
    @exclusivity(unchecked) private var captureConverter: Unmanaged<IOCaptureConversion>?
    /// Whether this cycle's capture has been converted onto the capture FIFO yet.
    @exclusivity(unchecked) private var captureConverted = false
    /// While the input callback runs, bus 1 renders what this cycle converted (what the
    /// callback was told); otherwise the FIFO's head, which element 0's renders consume.
    @exclusivity(unchecked) private var inInputCallback = false
    /// The device rate the unit was last initialized at: elements at it follow the device.
    private var initializedDeviceRate = 0.0
    /// The thread following a device format change (0: none). Its `stop()` and release of
    /// the device, inside the re-initialization, are not a stop: the device keeps running.
    private let followingThread = Atomic<UInt>(0)
    private var isFollowingOnThisThread: Bool { followingThread.load(ordering: .acquiring) == UInt(pthread_self()) }

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
    /// Element 0 is pulled once per render, for that render's frames (the device's slices
    /// are cut outside, in `renderOutput`): a plan can render it as steps.
    public override var takesPlannedInputs: Bool { true }
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

    /// Moves an initialized unit onto `newDevice` (already open; the unit does not close it)
    /// without re-initializing: the I/O thread stops on the old device and, if it was running,
    /// starts on the new one. The new device must run at the rate and period the unit was
    /// initialized for, with at least the channels it uses, so nothing downstream changes.
    /// If the new device cannot start, the unit goes back to the old one and says why.
    /// Returns the device it left.
    @discardableResult
    public func switchDevice(to newDevice: any AudioDevice) throws(AudioError) -> (any AudioDevice)? {
        guard isInitialized, let old = device else {
            try setDevice(newDevice)
            return nil
        }
        let was = old.format, new = newDevice.format
        guard new.sampleRate == was.sampleRate, new.periodFrames == was.periodFrames else {
            throw AudioError(.formatNotSupported, "\(name): '\(newDevice.driver)' runs at \(new.sampleRate) Hz, period \(new.periodFrames); this unit runs at \(was.sampleRate) Hz, period \(was.periodFrames)")
        }
        guard (!outputEnabled || new.outputChannels == was.outputChannels), (!inputEnabled || new.inputChannels == was.inputChannels) else {
            throw AudioError(.formatNotSupported, "\(name): '\(newDevice.driver)' has \(new.outputChannels) playback and \(new.inputChannels) capture channels; this unit uses \(was.outputChannels) and \(was.inputChannels)")
        }
        let running = old.isRunning
        let graph = driver
        stop()
        let oldOwned = deviceIsOwned, oldName = deviceName
        device = newDevice
        deviceIsOwned = false
        deviceName = newDevice.driver
        do {
            try makeConversions()
            if running { try start(driving: graph?.takeUnretainedValue()) }
        } catch {
            stop()
            device = old
            deviceIsOwned = oldOwned
            deviceName = oldName
            try? makeConversions()
            if running { try? start(driving: graph?.takeUnretainedValue()) }
            throw error
        }
        return old
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
        initializedDeviceRate = rate
        outputs[0].format = .canonical(sampleRate: rate, channels: max(1, format.outputChannels))
        inputs[1].format = .canonical(sampleRate: rate, channels: max(1, format.inputChannels))
        if maximumFramesPerSlice < format.periodFrames { maximumFramesPerSlice = format.periodFrames }
        try makeConversions()
        if let playbackConversion, maximumFramesPerSlice < playbackConversion.sliceFrames {
            maximumFramesPerSlice = playbackConversion.sliceFrames
        }
        if let captureConversion, maximumFramesPerSlice < captureConversion.maximumCycleFrames {
            maximumFramesPerSlice = captureConversion.maximumCycleFrames
        }
        // Not the base check that every element runs at one rate: the client and device
        // sides may differ here; the conversions bridge them.
    }

    /// Makes the conversions an enabled side needs (its client rate or channels differ from
    /// the device's); a disabled side needs no client format at all.
    private func makeConversions() throws(AudioError) {
        playbackConversion = nil
        captureConversion = nil
        guard let format = device?.format else { return }
        let rate = Double(format.sampleRate)
        if outputEnabled {
            let client = inputs[Self.outputElement].format
            if client.sampleRate != rate || Int(client.channelsPerFrame) != format.outputChannels {
                do {
                    playbackConversion = try IOPlaybackConversion(
                        clientRate: client.sampleRate, deviceRate: rate, clientChannels: Int(client.channelsPerFrame),
                        deviceChannels: format.outputChannels, periodFrames: format.periodFrames)
                } catch {
                    throw AudioError(.formatNotSupported, "\(name): cannot play a \(client.sampleRate) Hz, \(client.channelsPerFrame)-channel client on the device's \(format.sampleRate) Hz, \(format.outputChannels) channels: \(error.message)")
                }
            }
        }
        if inputEnabled {
            let client = outputs[Self.inputElement].format
            if client.sampleRate != rate || Int(client.channelsPerFrame) != format.inputChannels {
                do {
                    captureConversion = try IOCaptureConversion(
                        deviceRate: rate, clientRate: client.sampleRate, deviceChannels: format.inputChannels,
                        clientChannels: Int(client.channelsPerFrame), periodFrames: format.periodFrames)
                } catch {
                    throw AudioError(.formatNotSupported, "\(name): cannot capture the device's \(format.sampleRate) Hz, \(format.inputChannels) channels into a \(client.sampleRate) Hz, \(client.channelsPerFrame)-channel client: \(error.message)")
                }
            }
        }
        playbackConverter = playbackConversion.map { Unmanaged.passUnretained($0) }
        captureConverter = captureConversion.map { Unmanaged.passUnretained($0) }
    }

    open override func deallocateRenderResources() {
        stop()
        playbackConverter = nil
        captureConverter = nil
        playbackConversion = nil
        captureConversion = nil
        if deviceIsOwned && !isFollowingOnThisThread { device = nil }
    }

    /// Latency on the device: the playback buffer (the round trip Sonora adds), plus what
    /// rate conversion adds (the filters' delay and the playback FIFO's slice).
    open override var latency: Double {
        guard let format = device?.format else { return 0 }
        let converted = (playbackConversion?.latencyFrames ?? 0) + (captureConversion?.latencyFrames ?? 0)
        return (Double(format.roundTripFrames) + converted) / Double(format.sampleRate)
    }

    /// Starts the device's I/O thread (AudioOutputUnitStart). `graph`, when given, is
    /// rendered each cycle so its updates apply at cycle starts.
    public func start(driving graph: AudioGraph? = nil) throws(AudioError) {
        guard isInitialized, let device else { throw AudioError(.uninitialized, "\(name): initialize before starting") }
        guard !device.isRunning else { return }
        // A fresh conversion per start: nothing of the last run is left in the FIFOs or filters.
        if playbackConversion != nil || captureConversion != nil { try makeConversions() }
        driver = graph.map { Unmanaged.passUnretained($0) }
        device.setFormatChangeHandler { [weak self] format in self?.followDevice(format) }
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
        guard !isFollowingOnThisThread else { return }
        device?.stop()
        device?.setFormatChangeHandler(nil)
        driver = nil
    }

    /// The device changed its rate or period under the running unit (a JACK server's new
    /// buffer size or rate). Runs on the device's control thread while the device calls no
    /// cycle: re-initializes the driving graph (or this unit alone) at the new format —
    /// elements at the old device rate take the new one, MaximumFramesPerSlice grows to the
    /// period — so the first cycle at the new format renders it. As with Core Audio's
    /// property listeners, the owner must not reconfigure the graph from another thread
    /// meanwhile; a failure is logged and the cycles render silence (render errors).
    private func followDevice(_ format: DeviceFormat) {
        followingThread.store(UInt(pthread_self()), ordering: .releasing)
        defer { followingThread.store(0, ordering: .releasing) }
        let old = initializedDeviceRate, new = Double(format.sampleRate)
        do throws(AudioError) {
            if let graph = driver?.takeUnretainedValue() {
                try graph.follow(deviceRate: old, to: new, periodFrames: format.periodFrames)
            } else {
                uninitialize()
                try follow(deviceRate: old, to: new, periodFrames: format.periodFrames)
                try initialize()
            }
            Self.logger.notice("\(name): following the device to \(format.sampleRate) Hz, \(format.periodFrames) frames per period")
        } catch {
            Self.logger.error("\(name): could not follow the device to \(format.sampleRate) Hz, \(format.periodFrames) frames: \(error.message)")
        }
    }

    // MARK: Rendering

    open override func process(_ context: RenderContext) -> AudioError.Code {
        if context.bus == Self.inputElement {
            guard let captured = capturedInput() else { context.output.clear(); return .noError }
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
        // The whole stamp: a render callback schedules by host time too (queues' start at a host time).
        let (pulled, status) = context.pullInput(0, frameCount: context.frameCount, timeStamp: context.timeStamp)
        guard status == .noError else { return status }
        if let playbackConverter {
            // Converting: the client's channels map onto the device's here (then the rate).
            let sources = playbackConverter._withUnsafeGuaranteedRef { $0.channelSources }
            ChannelMap.apply(sources, from: pulled, to: context.output, frames: context.frameCount)
            return .noError
        }
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
        captureConverted = false
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
    /// With capture conversion, the callback is told the converted frames available; when
    /// nothing plays, those are then consumed (otherwise element 0's renders consume them).
    public final func callInputCallback(_ cycle: UnsafeMutablePointer<IOCycle>) -> AudioError.Code {
        guard inputEnabled, let inputCallback else { return .noError }
        if let captureConverter {
            _ = convertCapture(cycle)
            let recent = captureConverter._withUnsafeGuaranteedRef { $0.recent }
            let available = recent.frames(from: 0, count: min(recent.frameCount, maximumFramesPerSlice))
            guard available.frameCount > 0 else { return .noError }
            var request = RenderRequest(
                flags: [], timeStamp: cycle.pointee.inputTime, bus: Self.inputElement,
                frameCount: available.frameCount, buffers: available)
            inInputCallback = true
            let status = withUnsafeMutablePointer(to: &request) { inputCallback.call($0) }
            inInputCallback = false
            if !outputEnabled || cycle.pointee.output.channelCount == 0 {
                captureConverter._withUnsafeGuaranteedRef { $0.consumeAll() }
            }
            return status
        }
        var request = RenderRequest(
            flags: [], timeStamp: cycle.pointee.inputTime, bus: Self.inputElement,
            frameCount: cycle.pointee.frameCount, buffers: cycle.pointee.input)
        return withUnsafeMutablePointer(to: &request) { inputCallback.call($0) }
    }

    /// This cycle's capture converted onto the capture FIFO (once per cycle, at first use,
    /// so a subclass's processing of `cycle.input` before that is what gets converted).
    private func convertCapture(_ cycle: UnsafeMutablePointer<IOCycle>) -> AudioBufferList {
        guard let captureConverter else { return cycle.pointee.input }
        return captureConverter._withUnsafeGuaranteedRef {
            if !captureConverted {
                captureConverted = true
                $0.append(cycle.pointee.input, frames: cycle.pointee.frameCount)
            }
            return inInputCallback ? $0.recent : $0.available
        }
    }

    /// Renders element 0 (through the driving graph, so its updates apply at the cycle's
    /// start) into the device's output, fading out when asked; silence when playback is off.
    public final func renderOutput(_ cycle: UnsafeMutablePointer<IOCycle>) -> AudioError.Code {
        guard outputEnabled, cycle.pointee.output.channelCount > 0 else { return .noError }
        var stamp = cycle.pointee.outputTime
        stamp.sampleTime = cycle.pointee.inputTime.sampleTime
        let status: AudioError.Code
        if let playbackConverter {
            status = playbackConverter._withUnsafeGuaranteedRef {
                $0.play(into: cycle.pointee.output, frames: cycle.pointee.frameCount) { slice, sampleTime in
                    stamp.sampleTime = sampleTime
                    return renderElement0(into: slice, frameCount: slice.frameCount, timeStamp: stamp)
                }
            }
        } else {
            status = renderElement0(into: cycle.pointee.output, frameCount: cycle.pointee.frameCount, timeStamp: stamp)
        }
        applyFade(cycle.pointee.output, frames: cycle.pointee.frameCount)
        return status
    }

    /// One render of element 0 (through the driving graph when there is one); the capture
    /// FIFO, when capture converts, then drops the frames this render took.
    private func renderElement0(into list: AudioBufferList, frameCount: Int, timeStamp: AudioTimeStamp) -> AudioError.Code {
        var flags = RenderActionFlags()
        let status: AudioError.Code
        if let driver {
            status = driver._withUnsafeGuaranteedRef {
                $0.render(flags: &flags, timeStamp: timeStamp, frameCount: frameCount, into: list)
            }
        } else {
            status = render(flags: &flags, timeStamp: timeStamp, bus: Self.outputElement, frameCount: frameCount, into: list)
        }
        if inputEnabled, let captureConverter, let cycle = currentCycle {
            _ = convertCapture(cycle)
            captureConverter._withUnsafeGuaranteedRef { $0.consume(frameCount) }
        }
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
        return convertCapture(cycle)
    }

    /// Bridges the device's I/O procedure to the unit without reference counting.
    private final class CycleTarget: IOCycleTarget, @unchecked Sendable {
        /// Unmanaged, not `unowned(unsafe)`: the call through that retained and released the
        /// unit once a cycle on the I/O thread (`sonora-bench refcounts`, between two renders).
        let unit: Unmanaged<IOUnit>
        init(_ unit: IOUnit) { self.unit = .passUnretained(unit) }
        override func process(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 {
            unit._withUnsafeGuaranteedRef { $0.runCycle(cycle) }
        }
    }
}

/// What the I/O unit captured this cycle, as a generator node ('augn'/'capt', Sonora's).
public final class CaptureSourceUnit: AudioUnit, @unchecked Sendable {
    public static let componentDescription = AudioComponentDescription(type: .generator, subType: "capt", manufacturer: .sonora)
    /// The I/O unit whose graph renders this node (it outlives its graph's nodes). Unmanaged,
    /// not `unowned(unsafe)`: the call through that retained and released the I/O unit once a
    /// render on the I/O thread (`sonora-bench refcounts`, the appliance's I/O thread).
    let io: Unmanaged<IOUnit>

    init(io: IOUnit) {
        self.io = .passUnretained(io)
        super.init(description: Self.componentDescription, name: "Capture", inputs: 0, outputs: 1)
    }

    public override func process(_ context: RenderContext) -> AudioError.Code {
        guard let captured = io._withUnsafeGuaranteedRef({ $0.capturedInput() }) else { context.output.clear(); return .noError }
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
