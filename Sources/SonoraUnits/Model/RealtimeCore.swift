import SonoraCore
import SonoraDSP
import Synchronization

/// What feeds an input element, as the realtime thread sees it: plain values,
/// no references it would have to retain.
enum InputSource: BitwiseCopyable {
    case none
    case connection(Unmanaged<AudioUnit>, bus: Int)
    case callback(RenderCallback)
}

/// A parameter change for the realtime thread: at `frameOffset` into the next
/// render, jump to `endValue` (duration 0) or ramp from `startValue` to `endValue`.
struct ParameterEvent: BitwiseCopyable {
    var slot: Int32
    var frameOffset: Int32
    var duration: Int32
    var startValue: Float
    var endValue: Float
    var hasStartValue: Bool
}

/// Control → realtime commands of one unit.
enum RealtimeCommand: BitwiseCopyable {
    case parameter(ParameterEvent)
    case setInput(element: Int32, source: InputSource)
    case setNotify(index: Int32, callback: RenderCallback?)
    case setBypass(Bool)
    case setCachesOutput(Bool)
    case reset
}

/// Everything the render path of one unit touches, reachable through raw
/// pointers only. Allocated at `initialize()`, freed at `uninitialize()`;
/// `RealtimeResources` owns the memory.
struct RealtimeCore {
    var maximumFrames: Int
    var inputCount: Int
    var inputLists: UnsafeMutablePointer<AudioBufferList>
    /// The unit's own input buffers (`inputLists` may point elsewhere for one in-place render).
    var ownedInputLists: UnsafeMutablePointer<AudioBufferList>
    var inputSources: UnsafeMutablePointer<InputSource>
    var slotCount: Int
    var ramps: UnsafeMutablePointer<LinearRamp>
    static let scratchCount = 4
    var scratch: UnsafeMutablePointer<Float>
    var nextScratch: Int
    static let eventCapacity = 512
    var events: UnsafeMutablePointer<ParameterEvent>
    var eventCount: Int
    var commands: Unmanaged<MessageQueue<RealtimeCommand>>
    static let notifyCapacity = 8
    var notify: UnsafeMutablePointer<RenderCallback?>
    var notifyCount: Int
    /// False while no parameter ramp runs, so renders skip looking for one.
    var rampsActive: Bool
    var bypass: Bool
    var lastPulledSampleTime: Double
    var lastPulledFrames: Int
    /// Commands taken from the queue so far (read by the control side to free retired objects).
    var commandsApplied: UnsafeMutablePointer<Atomic<Int>>
    var lastError: UnsafeMutablePointer<Atomic<Int32>>
    /// Values the realtime side publishes for read-only (meter) parameters, as Float bit patterns.
    var published: UnsafeMutablePointer<Atomic<UInt32>>
    var sampleRate: Double
    var outputCount: Int
    var outputChannels: UnsafeMutablePointer<Int>

    // Crossfades when an input's source changes while rendering: the old source
    // keeps being pulled into `fadeLists` and faded out over `crossfadeFrames`.
    var crossfadeFrames: Int
    var fadeSources: UnsafeMutablePointer<InputSource>
    var fadeLists: UnsafeMutablePointer<AudioBufferList>
    var fadePositions: UnsafeMutablePointer<Int>

    // Fan-out: a unit feeding several inputs renders once per time stamp and
    // serves the other pulls from its output cache.
    var cachesOutput: Bool
    var outputCaches: UnsafeMutablePointer<AudioBufferList>
    var cachedSampleTimes: UnsafeMutablePointer<Double>
    var cachedFrames: UnsafeMutablePointer<Int>
}

/// Owns the memory `RealtimeCore` points into (on the control side).
final class RealtimeResources {
    let core: UnsafeMutablePointer<RealtimeCore>
    let inputBuffers: [OwnedAudioBufferList]
    let fadeBuffers: [OwnedAudioBufferList]
    let outputCacheBuffers: [OwnedAudioBufferList]
    let commands: MessageQueue<RealtimeCommand>

    init(
        inputChannels: [Int], outputChannels: [Int], sampleRate: Double, maximumFrames: Int, initialValues: [Float],
        commandCapacity: Int
    ) throws(AudioError) {
        inputBuffers = try inputChannels.map { channels throws(AudioError) in
            try OwnedAudioBufferList(channelCount: max(channels, 1), frameCapacity: maximumFrames)
        }
        fadeBuffers = try inputChannels.map { channels throws(AudioError) in
            try OwnedAudioBufferList(channelCount: max(channels, 1), frameCapacity: maximumFrames)
        }
        outputCacheBuffers = try outputChannels.map { channels throws(AudioError) in
            try OwnedAudioBufferList(channelCount: max(channels, 1), frameCapacity: maximumFrames)
        }
        commands = try MessageQueue(capacity: commandCapacity)
        let inputSlots = max(inputBuffers.count, 1)
        let fadeSources = UnsafeMutablePointer<InputSource>.allocate(capacity: inputSlots)
        fadeSources.initialize(repeating: .none, count: inputSlots)
        let fadeLists = UnsafeMutablePointer<AudioBufferList>.allocate(capacity: inputSlots)
        for (index, buffer) in fadeBuffers.enumerated() { (fadeLists + index).initialize(to: buffer.list) }
        let fadePositions = UnsafeMutablePointer<Int>.allocate(capacity: inputSlots)
        fadePositions.initialize(repeating: 0, count: inputSlots)
        let outputSlots = max(outputCacheBuffers.count, 1)
        let outputCaches = UnsafeMutablePointer<AudioBufferList>.allocate(capacity: outputSlots)
        for (index, buffer) in outputCacheBuffers.enumerated() { (outputCaches + index).initialize(to: buffer.list) }
        let cachedSampleTimes = UnsafeMutablePointer<Double>.allocate(capacity: outputSlots)
        cachedSampleTimes.initialize(repeating: -1, count: outputSlots)
        let cachedFrames = UnsafeMutablePointer<Int>.allocate(capacity: outputSlots)
        cachedFrames.initialize(repeating: 0, count: outputSlots)
        let inputLists = UnsafeMutablePointer<AudioBufferList>.allocate(capacity: max(inputBuffers.count, 1))
        for (index, buffer) in inputBuffers.enumerated() { (inputLists + index).initialize(to: buffer.list) }
        let ownedInputLists = UnsafeMutablePointer<AudioBufferList>.allocate(capacity: max(inputBuffers.count, 1))
        for (index, buffer) in inputBuffers.enumerated() { (ownedInputLists + index).initialize(to: buffer.list) }
        let sources = UnsafeMutablePointer<InputSource>.allocate(capacity: max(inputBuffers.count, 1))
        sources.initialize(repeating: .none, count: max(inputBuffers.count, 1))
        let ramps = UnsafeMutablePointer<LinearRamp>.allocate(capacity: max(initialValues.count, 1))
        for (slot, value) in initialValues.enumerated() { (ramps + slot).initialize(to: LinearRamp(value: value)) }
        let scratch = UnsafeMutablePointer<Float>.allocate(capacity: RealtimeCore.scratchCount * maximumFrames)
        scratch.initialize(repeating: 0, count: RealtimeCore.scratchCount * maximumFrames)
        let events = UnsafeMutablePointer<ParameterEvent>.allocate(capacity: RealtimeCore.eventCapacity)
        let notify = UnsafeMutablePointer<RenderCallback?>.allocate(capacity: RealtimeCore.notifyCapacity)
        notify.initialize(repeating: nil, count: RealtimeCore.notifyCapacity)
        let counters = UnsafeMutablePointer<Atomic<Int>>.allocate(capacity: 1)
        counters.initialize(to: Atomic(0))
        let lastError = UnsafeMutablePointer<Atomic<Int32>>.allocate(capacity: 1)
        lastError.initialize(to: Atomic(0))
        let published = UnsafeMutablePointer<Atomic<UInt32>>.allocate(capacity: max(initialValues.count, 1))
        for slot in 0..<initialValues.count { (published + slot).initialize(to: Atomic(0)) }
        let channels = UnsafeMutablePointer<Int>.allocate(capacity: max(outputChannels.count, 1))
        for (index, count) in outputChannels.enumerated() { (channels + index).initialize(to: count) }
        core = .allocate(capacity: 1)
        core.initialize(
            to: RealtimeCore(
                maximumFrames: maximumFrames, inputCount: inputBuffers.count, inputLists: inputLists,
                ownedInputLists: ownedInputLists,
                inputSources: sources, slotCount: initialValues.count, ramps: ramps, scratch: scratch, nextScratch: 0,
                events: events, eventCount: 0, commands: Unmanaged.passUnretained(commands), notify: notify,
                notifyCount: 0, rampsActive: false, bypass: false, lastPulledSampleTime: -1, lastPulledFrames: 0, commandsApplied: counters,
                lastError: lastError, published: published, sampleRate: sampleRate, outputCount: outputChannels.count,
                outputChannels: channels, crossfadeFrames: 64, fadeSources: fadeSources, fadeLists: fadeLists,
                fadePositions: fadePositions, cachesOutput: false, outputCaches: outputCaches,
                cachedSampleTimes: cachedSampleTimes, cachedFrames: cachedFrames))
    }

    deinit {
        let core = core.pointee
        core.inputLists.deallocate()
        core.ownedInputLists.deallocate()
        core.inputSources.deallocate()
        core.ramps.deallocate()
        core.scratch.deallocate()
        core.events.deallocate()
        core.notify.deallocate()
        core.commandsApplied.deinitialize(count: 1)
        core.commandsApplied.deallocate()
        core.lastError.deinitialize(count: 1)
        core.lastError.deallocate()
        core.outputChannels.deallocate()
        core.published.deinitialize(count: core.slotCount)
        core.published.deallocate()
        core.fadeSources.deallocate()
        core.fadeLists.deallocate()
        core.fadePositions.deallocate()
        core.outputCaches.deallocate()
        core.cachedSampleTimes.deallocate()
        core.cachedFrames.deallocate()
        self.core.deallocate()
    }
}
