import SonoraCore
import SonoraUnits

/// A plugin narrower than the bus it sits on, run as linked instances — dual mono, triple
/// mono …, as Ardour and Carla do: on a bus of `instances.count × k` channels, instance `i`
/// takes channels `i·k ..< (i+1)·k`, where `k` is the plugin's main bus width.
///
/// One control surface for all of them: a parameter set (or ramped) here is set on every
/// instance at the same frame; reads — values, meters (control outputs), latency — come from
/// the first; a factory preset and ClassInfo state (the plugin's own state included) are
/// applied to every instance. MIDI, patch messages (patch:Set, patch:Get) and the graph's
/// transport (time:Position) reach every instance at the same frame; patch values and atom
/// outputs are read from the first. Plugins with one main audio input and one main audio
/// output bus of equal width only (no sidechain buses).
public final class LV2LinkedUnit: AudioUnit, LV2PatchSurface, @unchecked Sendable {
    /// The linked instances, in channel order.
    public let instances: [LV2Unit]
    /// Channels each instance takes (the plugin's main bus width).
    public let channelsPerInstance: Int
    public let sampleRate: Double
    /// `instances.count`, read by the realtime side (reading the array would retain it).
    private let instanceCount: Int

    /// Per instance: the share of the current slice's input its render callback hands over.
    private let feeds: UnsafeMutablePointer<AudioBufferList>
    /// The instances without reference counting, for the realtime side.
    private let handles: UnsafeMutablePointer<Unmanaged<LV2Unit>>

    /// Makes `count` instances of the plugin `uri`, linked over a bus of `count × k` channels.
    public init(uri: String, instances count: Int, world: LV2World = .shared, options: LV2Unit.Options = LV2Unit.Options()) throws(AudioError) {
        guard count >= 1 && count <= 64 else {
            throw AudioError(.invalidPropertyValue, "linked instances: \(count) is not 1…64")
        }
        var made: [LV2Unit] = []
        for _ in 0..<count { made.append(try LV2Unit(uri: uri, world: world, options: options)) }
        let first = made[0]
        guard let input = first.layout.inputs.first, let output = first.layout.outputs.first,
            first.layout.inputs.count == 1, first.layout.outputs.count == 1, input.ports.count == output.ports.count,
            input.ports.count > 0
        else {
            let shape = "\(first.layout.inputs.map { "\($0.ports.count)" }.joined(separator: "+")) in, \(first.layout.outputs.map { "\($0.ports.count)" }.joined(separator: "+")) out"
            throw AudioError(
                .formatNotSupported,
                "\(first.name) cannot run as linked instances: it needs one audio input bus and one output bus of the same width (it has \(shape.isEmpty ? "no audio" : shape))")
        }
        instances = made
        instanceCount = count
        channelsPerInstance = input.ports.count
        sampleRate = options.sampleRate
        feeds = .allocate(capacity: count)
        handles = .allocate(capacity: count)
        for index in 0..<count { (handles + index).initialize(to: Unmanaged.passUnretained(made[index])) }
        // The bus's channels start silent (a feed is set before every instance render).
        let silent = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: 1)
        silentChannel = silent
        feeds.initialize(repeating: AudioBufferList(channels: silent, channelCount: 0, frameCount: 0), count: count)
        let format = StreamFormat.canonical(sampleRate: options.sampleRate, channels: count * channelsPerInstance)
        super.init(
            description: first.componentDescription, name: first.name, inputs: 1, outputs: 1, format: format,
            parameters: first.parameterDefinitions)
        try setMaximumFramesPerSlice(options.maximumFrames)
    }

    private let silentChannel: UnsafeMutablePointer<UnsafeMutablePointer<Float>>

    deinit {
        feeds.deallocate()
        handles.deallocate()
        silentChannel.deallocate()
    }

    /// The whole bus on both sides, at the rate the plugin was made for.
    public override func supports(_ format: StreamFormat, scope: AudioUnitScope, element: AudioUnitElement) -> Bool {
        format.isCanonical && format.validationProblems.isEmpty && format.sampleRate == sampleRate && element == 0
            && Int(format.channelsPerFrame) == instances.count * channelsPerInstance
    }

    // MARK: One control surface

    public override var parameterSource: AudioUnit? { instances[0] }

    public override func parameterWasScheduled(
        _ address: ParameterAddress, from start: Float?, to end: Float, duration: Int, bufferOffset: Int
    ) {
        for instance in instances {
            _ = try? instance.rampParameter(
                address.id, scope: address.scope, element: address.element, from: start, to: end, duration: duration,
                bufferOffset: bufferOffset)
        }
    }

    /// The first instance's: the instances are alike, and the chain is delayed once.
    public override var latency: Double { instances[0].latency }

    public override var tailTime: Double { instances[0].tailTime }

    public override var factoryPresets: [AudioUnitPreset] { instances[0].factoryPresets }

    /// Applies the preset to every instance, then takes the first's values as this unit's.
    public override func applyFactoryPreset(_ preset: AudioUnitPreset) throws(AudioError) {
        for instance in instances { try instance.setPresentPreset(preset) }
        adoptFirstValues()
    }

    public override var extraState: [String: String] { instances[0].extraState }

    public override func restoreExtraState(_ extra: [String: String]) throws(AudioError) {
        for instance in instances { try instance.restoreExtraState(extra) }
    }

    /// Every writable parameter set here to the first instance's value (and so, through
    /// `parameterWasScheduled`, on every instance): ClassInfo then saves what runs.
    private func adoptFirstValues() {
        for definition in parameterDefinitions where definition.info.flags.contains(.isWritable) && definition.scope == .global {
            if let value = try? instances[0].parameter(definition.id) {
                _ = try? setParameter(definition.id, to: value)
            }
        }
    }

    // MARK: Atom traffic on every instance

    public var world: LV2World { instances[0].world }
    public var plugin: LV2PluginDescription { instances[0].plugin }
    public var patchValues: [String: LV2PatchValue] { instances[0].patchValues }

    /// patch:Set on every instance (alike, so the first's check stands for all).
    public func setPatchParameter(_ uri: String, to value: LV2PatchValue) throws(AudioError) {
        for instance in instances { try instance.setPatchParameter(uri, to: value) }
    }

    /// patch:Get to the first instance only: the instances are alike, and it answers for all.
    public func requestPatchValues() throws(AudioError) {
        try instances[0].requestPatchValues()
    }

    /// The first instance's atom outputs; the others' are read and dropped so their rings never fill.
    @discardableResult
    public func drainAtomOutputs() -> [LV2Unit.AtomEvent] {
        for instance in instances.dropFirst() { instance.drainAtomOutputs() }
        return instances[0].drainAtomOutputs()
    }

    /// The message to every instance, at the same frame (a dual-mono synth voice plays on both).
    public func sendMIDI(_ bytes: [UInt8], at frameOffset: Int = 0) throws(AudioError) {
        for instance in instances { try instance.sendMIDI(bytes, at: frameOffset) }
    }

    /// Messages any instance logged since the last call. Not for the realtime thread.
    @discardableResult
    public func drainLog() -> [LV2Log.Message] { instances.flatMap { $0.drainLog() } }

    // MARK: Lifecycle and render

    public override func allocateRenderResources() throws(AudioError) {
        for index in instances.indices {
            let instance = instances[index]
            try instance.setMaximumFramesPerSlice(maximumFramesPerSlice)
            let callback = RenderCallback(
                function: { context, request in
                    let feed = context!.assumingMemoryBound(to: AudioBufferList.self).pointee
                    let request = request.assumingMemoryBound(to: RenderRequest.self)
                    request.pointee.buffers.copy(from: feed)
                    return 0
                },
                context: UnsafeMutableRawPointer(feeds + index))
            try instance.setRenderCallback(callback, input: 0)
            do {
                try instance.initialize()
            } catch {
                for started in instances[..<index] { started.uninitialize() }
                throw error
            }
        }
    }

    public override func deallocateRenderResources() {
        for instance in instances { instance.uninitialize() }
    }

    /// Each instance renders its channels of the slice. Realtime: no allocation, no ARC.
    public override func process(_ context: RenderContext) -> AudioError.Code {
        let input = context.input(0)
        let width = channelsPerInstance
        // The instances are not nodes of the graph: its transport reaches them through this one.
        let transport = hostCallbacks
        for index in 0..<instanceCount {
            feeds[index] = input.channels(from: index * width, count: width)
            var flags = RenderActionFlags()
            let status = handles[index]._withUnsafeGuaranteedRef {
                $0.hostCallbacks = transport
                return $0.render(
                    flags: &flags, timeStamp: context.timeStamp, bus: 0, frameCount: context.frameCount,
                    into: context.output.channels(from: index * width, count: width))
            }
            if status != .noError { return status }
        }
        return .noError
    }
}
