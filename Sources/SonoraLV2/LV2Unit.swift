import CLilv
import SonoraCore
import SonoraUnits

/// An LV2 plugin as an audio unit.
///
/// - Audio ports are elements by `LV2BusLayout`'s rule (groups, sidechains, CV).
/// - Control inputs are global parameters with ID = port index (`identifier` = symbol);
///   control outputs are read-only meter parameters, readable while rendering.
/// - A latency port feeds the Latency property (and so `AudioGraph`'s latency totals).
/// - The plugin's presets are the FactoryPresets; ClassInfo carries the whole plugin
///   state (lilv state as Turtle, state-interface properties included).
///
/// The plugin is instantiated when the unit is made (at `sampleRate` and with
/// `maximumFrames` as its block-length bound) so presets and state work before
/// `initialize()`; it is activated by `initialize()` and deactivated by `uninitialize()`.
/// Raising MaximumFramesPerSlice above the bound re-instantiates it, carrying its state over.
public final class LV2Unit: AudioUnit, @unchecked Sendable {
    public struct Options: Sendable {
        public var sampleRate: Double
        public var maximumFrames: Int
        /// `.inline` for offline rendering (deterministic), `.thread` for realtime.
        public var workerMode: LV2Worker.Mode
        /// Bytes per atom port buffer when the plugin asks for less (rsz:minimumSize).
        public var atomBufferSize: Int
        /// Block-length features the caller guarantees to honour (`LV2URI.fixedBlockLength`,
        /// `LV2URI.powerOf2BlockLength`): offered to plugins that require them. The unit does
        /// not enforce them; the graph driving it must.
        public var blockLengthGuarantees: Set<String>

        public init(
            sampleRate: Double = 48000, maximumFrames: Int = 4096, workerMode: LV2Worker.Mode = .thread,
            atomBufferSize: Int = 32768, blockLengthGuarantees: Set<String> = []
        ) {
            self.sampleRate = sampleRate
            self.maximumFrames = maximumFrames
            self.workerMode = workerMode
            self.atomBufferSize = atomBufferSize
            self.blockLengthGuarantees = blockLengthGuarantees
        }
    }

    public let world: LV2World
    public let plugin: LV2PluginDescription
    public let layout: LV2BusLayout
    public let options: Options
    public let sampleRate: Double
    var instance: LV2Instance
    /// Realtime state (nil while uninitialized).
    @exclusivity(unchecked) var run: UnsafeMutablePointer<LV2RunState>?
    var runMemory: [UnsafeMutableRawPointer] = []
    var midiQueue: MessageQueue<LV2MIDIEvent>
    var atomOutputRing: RecordRing
    /// Patch messages (forged atoms) for the realtime side to put on the control input.
    var patchQueue: RecordRing
    /// The last value the plugin reported for each patch parameter (patch:Set / patch:Put on its
    /// atom outputs, read by `drainAtomOutputs()`).
    public internal(set) var patchValues: [String: LV2PatchValue] = [:]
    var presetCache: [LV2Preset]?
    /// Where lilv's get-port-value callback puts the value it hands back.
    let stateScratch = UnsafeMutablePointer<Float>.allocate(capacity: 1)
    /// Problems the set-port-value callback met during one restore.
    var stateErrors: [String] = []
    var lastReportedLatency = 0
    /// Parameter changes announced to the realtime side (see LV2ControlChanges); its two
    /// words are the first of `runBlock`.
    let controlChanges: LV2ControlChanges
    /// The control-change words, the run state and its channel entries, one 64-aligned block
    /// for the unit's life (`LV2RunState.Block`): what the plain slice reads is three adjacent lines.
    let runBlock: UnsafeMutableRawPointer

    public static let manufacturer: FourCharCode = "LV2 "

    /// An unconnected bus (a sidechain nobody feeds) is silence, as in Ardour or jalv.
    public override var requiresConnectedInputs: Bool { false }

    /// Makes the plugin `uri` of `world` an audio unit.
    public init(uri: String, world: LV2World = .shared, options: Options = Options()) throws(AudioError) {
        let description = try world.plugin(uri)
        let instance = try LV2Instance(
            world: world, description: description, sampleRate: options.sampleRate,
            maximumBlockLength: options.maximumFrames, sequenceSize: options.atomBufferSize,
            workerMode: options.workerMode, extraFeatures: options.blockLengthGuarantees)
        self.world = world
        self.plugin = description
        self.options = options
        self.sampleRate = options.sampleRate
        self.instance = instance
        layout = LV2BusLayout(description)
        midiQueue = try MessageQueue(capacity: 1024)
        atomOutputRing = try RecordRing(capacity: 256 * 1024)
        patchQueue = try RecordRing(capacity: 64 * 1024)
        let audioChannels = layout.inputs.reduce(0) { $0 + $1.ports.count } + layout.outputs.reduce(0) { $0 + $1.ports.count }
        runBlock = .allocate(byteCount: LV2RunState.Block.byteCount(channels: audioChannels), alignment: 64)
        controlChanges = LV2ControlChanges(at: runBlock)
        let parameters = description.ports.filter { $0.kind == .control }.map {
            LV2ParameterMapping.definition(for: $0, sampleRate: options.sampleRate)
        }
        let type: FourCharCode =
            layout.inputs.isEmpty ? (description.ports.contains(where: \.takesMIDI) ? .musicDevice : .generator)
            : description.ports.contains(where: { $0.takesMIDI && $0.direction == .input }) ? .musicEffect : .effect
        super.init(
            description: AudioComponentDescription(type: type, subType: Self.subType(uri), manufacturer: Self.manufacturer),
            name: description.name, inputs: layout.inputs.count, outputs: max(layout.outputs.count, 1),
            format: .canonical(sampleRate: options.sampleRate, channels: 1), parameters: parameters)
        for (element, bus) in layout.inputs.enumerated() {
            try setStreamFormat(.canonical(sampleRate: sampleRate, channels: bus.ports.count), scope: .input, element: element)
            try setProperty(.elementName, scope: .input, element: element, to: .elementName(bus.name))
        }
        for (element, bus) in layout.outputs.enumerated() {
            try setStreamFormat(.canonical(sampleRate: sampleRate, channels: bus.ports.count), scope: .output, element: element)
            try setProperty(.elementName, scope: .output, element: element, to: .elementName(bus.name))
        }
        if layout.outputs.isEmpty {
            // A plugin whose product is events or control outputs (meters, MIDI tools, eg-params):
            // one silent mono output element, so a graph or an offline render can pull it.
            try setProperty(.elementName, scope: .output, element: 0, to: .elementName("silent"))
        }
        try setMaximumFramesPerSlice(options.maximumFrames)
        if description.requiredFeatures.contains(LV2URI.stateLoadDefaultState)
            || description.optionalFeatures.contains(LV2URI.stateLoadDefaultState)
        {
            try loadDefaultState()
        }
    }

    deinit {
        freeRunState()
        stateScratch.deallocate()
        controlChanges.deinitialize()
        runBlock.deallocate()
    }

    /// A stable four-character subtype from the URI (FNV-1a), so ClassInfo names the plugin.
    static func subType(_ uri: String) -> FourCharCode {
        var hash: UInt32 = 0x811c_9dc5
        for byte in uri.utf8 { hash = (hash ^ UInt32(byte)) &* 0x0100_0193 }
        return FourCharCode(rawValue: hash)
    }

    /// Channels of an element must be the bus's port count; the rate is the one the plugin was made for.
    public override func supports(_ format: StreamFormat, scope: AudioUnitScope, element: AudioUnitElement) -> Bool {
        guard format.isCanonical, format.validationProblems.isEmpty, format.sampleRate == sampleRate else { return false }
        let buses = scope == .input ? layout.inputs : layout.outputs
        if scope == .output && buses.isEmpty { return element == 0 && format.channelsPerFrame == 1 }
        guard element >= 0 && element < buses.count else { return false }
        return Int(format.channelsPerFrame) == buses[element].ports.count
    }

    public override func validateFormats() throws(AudioError) {
        try super.validateFormats()
        for element in 0..<elementCount(.output) where try streamFormat(scope: .output, element: element).sampleRate != sampleRate {
            throw AudioError(
                .failedInitialization,
                "\(name): made for \(Int(sampleRate)) Hz; make a new LV2Unit for another rate (lv2:sampleRate ranges depend on it)")
        }
    }

    /// The parameter of a control port, by symbol.
    public func parameterID(symbol: String) throws(AudioError) -> AudioUnitParameterID {
        guard let port = plugin.port(symbol: symbol), port.kind == .control else {
            throw AudioError(.invalidParameter, "\(name) (\(plugin.uri)) has no control port '\(symbol)'")
        }
        return AudioUnitParameterID(port.index)
    }

    /// Sets a control input by symbol.
    @discardableResult
    public func setControl(_ symbol: String, to value: Float, bufferOffset: Int = 0) throws(AudioError) -> ParameterChange {
        guard value.isFinite else {
            throw AudioError(.invalidParameterValue, "\(name): \(value) is not a number for '\(symbol)'")
        }
        return try setParameter(try parameterID(symbol: symbol), to: value, bufferOffset: bufferOffset)
    }

    /// A control port's value by symbol (outputs: the last value the plugin wrote).
    public func control(_ symbol: String) throws(AudioError) -> Float {
        try parameter(try parameterID(symbol: symbol))
    }

    /// Latency the plugin reports through its latency port, in frames (0 if none, or before the first render).
    /// While uninitialized: the last value seen (kept by `refreshLatency()`, which uninitialize calls).
    public var latencyFrames: Int {
        guard isInitialized else { return lastReportedLatency }
        guard let index = plugin.latencyPortIndex, let value = try? parameter(AudioUnitParameterID(index)) else { return 0 }
        return Int(max(0, value).rounded())
    }

    public override var latency: Double { Double(latencyFrames) / sampleRate }

    /// Tells Latency listeners if the plugin's reported latency changed since the last call
    /// (a plugin reports it from run(); call this from the control side, e.g. after renders).
    /// Returns the latency in frames.
    @discardableResult
    public func refreshLatency() -> Int {
        let frames = latencyFrames
        if frames != lastReportedLatency {
            lastReportedLatency = frames
            propertyDidChange(.latency)
        }
        return frames
    }

    /// Messages the plugin logged since the last call (also passed to swift-log). Not for the realtime thread.
    @discardableResult
    public func drainLog() -> [LV2Log.Message] { instance.features.log.drain() }

    public var recentLogMessages: [LV2Log.Message] { instance.features.log.recent }

    /// Queues a MIDI message for the plugin's MIDI input, `frameOffset` frames into the next render.
    public func sendMIDI(_ bytes: [UInt8], at frameOffset: Int = 0) throws(AudioError) {
        guard plugin.ports.contains(where: { $0.kind == .atom && $0.direction == .input && $0.takesMIDI }) else {
            throw AudioError(.invalidProperty, "\(name) (\(plugin.uri)) has no MIDI input")
        }
        guard (1...3).contains(bytes.count), frameOffset >= 0 else {
            throw AudioError(.invalidParameterValue, "\(name): a MIDI message is 1–3 bytes at a non-negative offset")
        }
        guard midiQueue.push(LV2MIDIEvent(bytes, at: frameOffset)) else {
            throw AudioError(.cannotDoInCurrentContext, "\(name): MIDI queue full")
        }
    }

    // MARK: Overrides (bodies in LV2Unit+Render.swift and LV2Unit+State.swift)

    /// The realtime side copies controls into the port floats only after a change (LV2ControlChanges).
    public override func parameterWasScheduled(
        _ address: ParameterAddress, from start: Float?, to end: Float, duration: Int, bufferOffset: Int
    ) {
        controlChanges.announce(span: bufferOffset + duration)
    }

    public override func process(_ context: RenderContext) -> AudioError.Code { renderSlice(context) }

    public override var factoryPresets: [AudioUnitPreset] { lv2FactoryPresets }

    public override func applyFactoryPreset(_ preset: AudioUnitPreset) throws(AudioError) { try applyLV2Preset(preset) }

    public override var extraState: [String: String] { lv2ExtraState }

    /// Bypass through the plugin's lv2:enabled port, or a host crossfade (see LV2Bypass).
    public override var handlesBypass: Bool { true }

    public override func restoreExtraState(_ extra: [String: String]) throws(AudioError) {
        try restoreLV2ExtraState(extra)
    }

    // MARK: Lifecycle

    public override func allocateRenderResources() throws(AudioError) {
        if maximumFramesPerSlice > instance.maximumBlockLength {
            try reinstantiate(maximumBlockLength: maximumFramesPerSlice)
        }
        try buildRunState()
        instance.activate()
    }

    public override func deallocateRenderResources() {
        refreshLatency()
        instance.deactivate()
        freeRunState()
        drainLog()
    }

    /// LV2 has no reset: deactivate + activate is the way to clear a plugin's DSP state.
    public override func resetRenderState() {}

    /// Replaces the instance by one with a larger block-length bound, restoring the state into it.
    func reinstantiate(maximumBlockLength: Int) throws(AudioError) {
        let saved = try? saveState()
        let replacement = try LV2Instance(
            world: world, description: plugin, sampleRate: sampleRate, maximumBlockLength: maximumBlockLength,
            sequenceSize: options.atomBufferSize, workerMode: options.workerMode,
            extraFeatures: options.blockLengthGuarantees)
        instance = replacement
        if let saved { try restoreState(saved) }
    }
}
