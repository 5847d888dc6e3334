import Logging
import SonoraCore
import SonoraDSP
import Synchronization

/// An audio unit: Core Audio's processing element, with properties addressed by
/// `(AudioUnitPropertyID, AudioUnitScope, AudioUnitElement)`, parameters by
/// `(AudioUnitParameterID, scope, element)`, and a pull-model `render`.
///
/// Lifecycle: create → configure (formats, element counts, callbacks,
/// connections) → `initialize()` (allocates everything render needs) → render
/// → `uninitialize()`. Properties that size render resources cannot change while
/// initialized (`-10849`). Configuration calls come from one control thread at a
/// time; `render` comes from one realtime thread and never allocates, locks or logs.
///
/// Subclasses declare their parameters and element counts in `init`, may check
/// formats in `validateFormats()`, prepare state in `allocateRenderResources()`
/// and implement `process(_:)`.
open class AudioUnit: @unchecked Sendable {
    public let componentDescription: AudioComponentDescription
    public let name: String
    public private(set) var isInitialized = false

    /// Longest ramp slice: while a ramp runs, `process` is called for at most this many frames.
    public static let rampSliceFrames = 32

    // MARK: Configuration (control side)

    struct InputElement {
        var format: StreamFormat
        var layout: AudioChannelLayout?
        var name: String?
        var callback: RenderCallback?
        var callbackTarget: RenderCallbackTarget?
        var connection: AudioUnitConnection?
    }

    struct OutputElement {
        var format: StreamFormat
        var layout: AudioChannelLayout?
        var name: String?
    }

    var inputs: [InputElement]
    var outputs: [OutputElement]
    public internal(set) var maximumFramesPerSlice = 4096
    var bypassEnabled = false
    var notifyCallbacks: [(callback: RenderCallback, target: AnyObject?)?] = Array(repeating: nil, count: RealtimeCore.notifyCapacity)
    var presentPresetValue: AudioUnitPreset?
    let inputCountIsWritable: Bool
    let outputCountIsWritable: Bool

    // Parameters: definitions, the slot of each address, the control-side value of each slot.
    /// Fixed at `init` for most units; a unit whose parameters follow its formats (a
    /// mixer's per-channel meters) replaces them with `replaceParameterDefinitions(_:)`.
    public internal(set) var parameterDefinitions: [AudioUnitParameterDefinition]
    var slotBases: [Int] = []
    var slotValues: [Float] = []

    // Property listeners.
    public typealias PropertyListener = (AudioUnit, AudioUnitPropertyID, AudioUnitScope, AudioUnitElement) -> Void
    var listeners: [(id: Int, property: AudioUnitPropertyID, handler: PropertyListener)] = []
    var nextListenerID = 0

    // MARK: Realtime side

    var resources: RealtimeResources?
    /// Read on the realtime thread; written only while it does not render.
    @exclusivity(unchecked) var core: UnsafeMutablePointer<RealtimeCore>?
    var commandsSent = 0
    /// Core Audio's HostCallbacks property: the graph's transport, read while rendering (nil
    /// without one). Set by `AudioGraph` before the unit renders in it.
    @exclusivity(unchecked) public var hostCallbacks: HostCallbacks?
    /// Objects the realtime thread may still use, kept until it has applied the command that replaced them.
    var retired: [(afterCommand: Int, object: AnyObject)] = []

    static let logger = Logger(label: "sonora.units")

    /// - Parameters:
    ///   - inputs, outputs: element counts.
    ///   - format: initial format of every element (canonical; 48 kHz stereo by default).
    ///   - inputCountIsWritable / outputCountIsWritable: whether ElementCount may be set (a mixer's inputs).
    public init(
        description: AudioComponentDescription, name: String, inputs: Int, outputs: Int,
        format: StreamFormat = .canonical(sampleRate: 48000, channels: 2),
        parameters: [AudioUnitParameterDefinition] = [],
        inputCountIsWritable: Bool = false, outputCountIsWritable: Bool = false
    ) {
        componentDescription = description
        self.name = name
        self.inputs = Array(repeating: InputElement(format: format), count: inputs)
        self.outputs = Array(repeating: OutputElement(format: format), count: outputs)
        parameterDefinitions = parameters
        self.inputCountIsWritable = inputCountIsWritable
        self.outputCountIsWritable = outputCountIsWritable
        rebuildParameterSlots(keeping: [:])
    }

    deinit {
        core = nil
        resources = nil
    }

    // MARK: Lifecycle

    /// Allocates what rendering needs. Fails with the unit's reason if its formats do not fit together.
    public func initialize() throws(AudioError) {
        guard !isInitialized else { return }
        try validateFormats()
        let resources = try RealtimeResources(
            inputChannels: inputs.map { Int($0.format.channelsPerFrame) },
            outputChannels: outputs.map { Int($0.format.channelsPerFrame) },
            sampleRate: outputs.first?.format.sampleRate ?? inputs.first?.format.sampleRate ?? 48000,
            maximumFrames: maximumFramesPerSlice, initialValues: slotValues, commandCapacity: 1024)
        for (element, input) in inputs.enumerated() {
            resources.core.pointee.inputSources[element] = source(of: input)
        }
        resources.core.pointee.bypass = bypassEnabled
        resources.core.pointee.processesInPlace = canProcessInPlace
        resources.core.pointee.pullsOwnInputs = pullsInputsItself
        for (index, entry) in notifyCallbacks.enumerated() { resources.core.pointee.notify[index] = entry?.callback }
        resources.core.pointee.notifyCount = notifyCallbacks.compactMap { $0 }.count
        self.resources = resources
        core = resources.core
        do {
            try allocateRenderResources()
        } catch {
            core = nil
            self.resources = nil
            throw error
        }
        commandsSent = 0
        isInitialized = true
    }

    /// Frees render resources. Call only when no render is in progress.
    public func uninitialize() {
        guard isInitialized else { return }
        deallocateRenderResources()
        core = nil
        resources = nil
        retired.removeAll()
        isInitialized = false
    }

    /// Clears DSP state (filter memories, delay lines) at the start of the next render.
    public func reset() {
        if isInitialized {
            send(.reset)
        }
    }

    // MARK: Subclass hooks

    /// Throws if the element formats cannot work together. The default asks for
    /// canonical formats at one sample rate.
    open func validateFormats() throws(AudioError) {
        let formats = inputs.map(\.format) + outputs.map(\.format)
        guard let rate = formats.first?.sampleRate else { return }
        for format in formats where format.sampleRate != rate {
            throw AudioError(
                .failedInitialization, "\(name): elements run at different sample rates (\(format.sampleRate) and \(rate))")
        }
    }

    /// Whether `format` may be set on an element of `scope`. Default: canonical formats only.
    open func supports(_ format: StreamFormat, scope: AudioUnitScope, element: AudioUnitElement) -> Bool {
        format.isCanonical && format.validationProblems.isEmpty
    }

    /// Prepares render state (filters sized for the formats, slot indices). Called by `initialize()`.
    open func allocateRenderResources() throws(AudioError) {}

    /// Releases what `allocateRenderResources()` prepared.
    open func deallocateRenderResources() {}

    /// Clears DSP state; called on the realtime thread at a cycle start after `reset()`.
    open func resetRenderState() {}

    /// Whether the render publishes meter `id` as a mean square (linear power) rather than
    /// an amplitude: the reading then takes the square root (or 10·log10 for decibels), so
    /// the render thread spends no square root per meter per cycle.
    open func publishesMeanSquare(_ id: AudioUnitParameterID) -> Bool { false }

    /// Renders one slice. Realtime: no allocation, locks, logging or Foundation.
    /// The default passes input 0 through (or renders silence if there is none).
    open func process(_ context: RenderContext) -> AudioError.Code {
        if context.inputCount > 0 {
            context.output.copy(from: context.input(0))
        } else {
            context.output.clear()
        }
        return .noError
    }

    /// Called on the control side after a parameter is set or a ramp is scheduled (initialized
    /// or not): a unit that drives others (linked plugin instances) passes the change on.
    open func parameterWasScheduled(
        _ address: ParameterAddress, from start: Float?, to end: Float, duration: Int, bufferOffset: Int
    ) {}

    /// A unit whose parameter values live in another unit (the first of linked instances)
    /// answers parameter reads from it; nil: from its own values.
    open var parameterSource: AudioUnit? { nil }

    /// Seconds of latency the unit adds (Latency property).
    open var latency: Double { 0 }

    /// Seconds of output after input stops (TailTime property).
    open var tailTime: Double { 0 }

    /// True for units that implement BypassEffect in `process` themselves (reading
    /// `RenderContext.isBypassed`), e.g. with a crossfade; the base then does not copy input to output.
    open var handlesBypass: Bool { false }

    /// Tells property listeners that a property changed (for values a subclass computes, such as a
    /// plugin-reported latency). Control thread only.
    public func propertyDidChange(_ id: AudioUnitPropertyID, scope: AudioUnitScope = .global, element: AudioUnitElement = 0) {
        notifyListeners(id, scope, element)
    }

    /// Called (uninitialized, on the control thread) after a stream format or element count
    /// of `scope` changed, before listeners hear of it: for units whose parameters or
    /// per-element properties follow their formats.
    func elementsDidChange(_ scope: AudioUnitScope) {}

    /// Replaces the parameter definitions, keeping the value of every address that remains.
    func replaceParameterDefinitions(_ definitions: [AudioUnitParameterDefinition]) {
        let old = parameterValuesByAddress
        parameterDefinitions = definitions
        rebuildParameterSlots(keeping: old)
    }

    /// Whether a sample rate of `scope` may change while initialized (a converter re-rates
    /// itself; Core Audio's other units refuse with -10849). Such a unit is told through
    /// `sampleRateDidChangeWhileInitialized()`, and undoes nothing if that throws: the base restores the rate.
    func canChangeSampleRateWhileInitialized(scope: AudioUnitScope) -> Bool { false }

    /// Applies a sample-rate change while initialized (control thread; hand render state over with `send(.message)`).
    func sampleRateDidChangeWhileInitialized() throws(AudioError) {}

    /// Applies a message sent with `send(.message(_:))`, on the realtime thread at a cycle start.
    func receive(_ message: RealtimeMessage) {}

    /// True for units with an AudioChannelLayout property on their input and output elements
    /// (units that keep channels apart: mixers, converters, pass-through units).
    open var hasChannelLayouts: Bool { false }

    /// Whether BypassEffect is meaningful for this unit.
    open var supportsBypass: Bool { inputs.count >= 1 && outputs.count >= 1 }

    /// Factory presets (FactoryPresets property).
    open var factoryPresets: [AudioUnitPreset] { [] }

    /// Applies factory preset `preset` (its parameter values). Default: no presets.
    open func applyFactoryPreset(_ preset: AudioUnitPreset) throws(AudioError) {
        throw AudioError(.invalidPropertyValue, "\(name) has no factory preset \(preset.number)")
    }

    /// True for one-input, one-output units whose `process` may read and write the
    /// same buffers. The render then pulls the input straight into the output
    /// buffers, so a chain of such units works in one buffer that stays in cache.
    open var canProcessInPlace: Bool { false }

    /// True for units that pull their inputs from `process` themselves, in amounts
    /// of their own choosing (a sample-rate converter); the base then does not pull.
    open var pullsInputsItself: Bool { false }
    /// A unit that pulls its inputs itself, but each once per render and only the frames of
    /// the render it is in (the I/O unit): as a render plan's head its inputs are rendered
    /// as steps of the plan and its pulls are served from them.
    open var takesPlannedInputs: Bool { false }

    /// Unit-specific state beyond parameters, saved in ClassInfo.
    open var extraState: [String: String] { [:] }

    /// Restores what `extraState` saved; called by `restore(_:)` before the parameter values are set.
    open func restoreExtraState(_ extra: [String: String]) throws(AudioError) {}

    /// Properties beyond the base set (an I/O unit's EnableIO, a plugin's own): the size
    /// and writability of `id` at the address if this unit handles it itself, else nil.
    /// Throw the Core Audio error for a bad scope or element of a property you handle.
    open func extendedPropertyInfo(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement) throws(AudioError) -> AudioUnitPropertyInfo? { nil }

    /// The value of a property `extendedPropertyInfo` claims.
    open func extendedProperty(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement) throws(AudioError) -> AudioUnitPropertyValue {
        throw AudioError(.invalidProperty, "\(name) has no \(id)")
    }

    /// Sets a writable property `extendedPropertyInfo` claims.
    open func setExtendedProperty(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement, to value: AudioUnitPropertyValue) throws(AudioError) {
        throw AudioError(.propertyNotWritable, "\(name): \(id) is read-only")
    }

    /// Whether a render of element `element` requires a source on every input (else `-10876`).
    open var requiresConnectedInputs: Bool { true }

    /// The compact form of this unit's steady render from `input` to `output` (its one input
    /// bound to a render plan's buffer) for a plan's steady cycles (`SteadySlot`), or nil if it
    /// has none. Called on the realtime side between cycles: reads the core only.
    func steadySlot(_ core: UnsafeMutablePointer<RealtimeCore>, input: AudioBufferList, output: AudioBufferList) -> SteadySlot? {
        nil
    }

    /// The compact form of this unit's steady render for a unit of any number of inputs, each
    /// bound to a render plan's buffer or pulled as the last (lean) cycle found it (`inputs`,
    /// one per input element), or nil if it has none. Asked when the one-input form does not
    /// apply. Called on the realtime side between cycles: reads the core only.
    func steadySlot(
        _ core: UnsafeMutablePointer<RealtimeCore>, inputs: UnsafeMutablePointer<RenderPlan.Input>, output: AudioBufferList
    ) -> SteadySlot? {
        nil
    }

    // MARK: Realtime commands

    func send(_ command: RealtimeCommand) {
        guard let resources, push(command, to: resources) else { return }
        publishCommands(1, to: resources)
    }

    /// Queues `command` for the realtime side without publishing it (`publishCommands`: a
    /// batch of changes pushes each, then publishes once). False when the queue is full.
    func push(_ command: RealtimeCommand, to resources: RealtimeResources) -> Bool {
        guard resources.commands.push(command) else {
            Self.logger.warning("\(name): realtime command queue full; command dropped")
            return false
        }
        return true
    }

    /// Publishes the last `count` pushed commands: the unit's count, then the epoch.
    func publishCommands(_ count: Int, to resources: RealtimeResources) {
        guard count > 0 else { return }
        commandsSent += count
        resources.core.pointee.commandsSent.pointee.store(commandsSent, ordering: .releasing)
        // After the unit's own count: a plan that sees the new epoch then sees the commands.
        unitCommandEpoch.pointee.add(1, ordering: .releasing)
        purgeRetired()
    }

    func retire(_ object: AnyObject?) {
        guard let object else { return }
        // The command about to be sent replaces it; once the realtime side has taken that one, it is free.
        if isInitialized {
            retired.append((commandsSent + 1, object))
        }
    }

    func purgeRetired() {
        guard let core, !retired.isEmpty else { return }
        let applied = core.pointee.commandsApplied.pointee.load(ordering: .acquiring)
        retired.removeAll { $0.afterCommand <= applied }
    }

    func source(of input: InputElement) -> InputSource {
        if let callback = input.callback { return .callback(callback) }
        if let connection = input.connection {
            return .connection(Unmanaged.passUnretained(connection.sourceUnit), bus: connection.sourceBus)
        }
        return .none
    }

    func notifyListeners(_ property: AudioUnitPropertyID, _ scope: AudioUnitScope, _ element: AudioUnitElement) {
        for listener in listeners where listener.property == property {
            listener.handler(self, property, scope, element)
        }
    }
}

/// Bumped (release) after every command any unit is sent. A render plan reads it once per
/// cycle: while it has not moved since a cycle in which every step was steady, no unit of
/// the plan can have a command waiting, so every step is steady again (see `RenderPlan`).
nonisolated(unsafe) let unitCommandEpoch: UnsafeMutablePointer<Atomic<Int>> = {
    let epoch = UnsafeMutablePointer<Atomic<Int>>.allocate(capacity: 1)
    epoch.initialize(to: Atomic(0))
    return epoch
}()

/// An input element's connection to another unit's output element (MakeConnection).
public struct AudioUnitConnection {
    public var sourceUnit: AudioUnit
    public var sourceBus: Int
    public var destinationInput: Int

    public init(from sourceUnit: AudioUnit, bus: Int, to destinationInput: Int) {
        self.sourceUnit = sourceUnit
        self.sourceBus = bus
        self.destinationInput = destinationInput
    }
}
