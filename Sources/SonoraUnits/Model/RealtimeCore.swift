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
    case reset
}

/// Everything the render path of one unit touches, reachable through raw
/// pointers only. Allocated at `initialize()`, freed at `uninitialize()`;
/// `RealtimeResources` owns the memory.
struct RealtimeCore {
    var maximumFrames: Int
    var inputCount: Int
    var inputLists: UnsafeMutablePointer<AudioBufferList>
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
}

/// Owns the memory `RealtimeCore` points into (on the control side).
final class RealtimeResources {
    let core: UnsafeMutablePointer<RealtimeCore>
    let inputBuffers: [OwnedAudioBufferList]
    let commands: MessageQueue<RealtimeCommand>

    init(
        inputChannels: [Int], outputChannels: [Int], sampleRate: Double, maximumFrames: Int, initialValues: [Float],
        commandCapacity: Int
    ) throws(AudioError) {
        inputBuffers = try inputChannels.map { channels throws(AudioError) in
            try OwnedAudioBufferList(channelCount: max(channels, 1), frameCapacity: maximumFrames)
        }
        commands = try MessageQueue(capacity: commandCapacity)
        let inputLists = UnsafeMutablePointer<AudioBufferList>.allocate(capacity: max(inputBuffers.count, 1))
        for (index, buffer) in inputBuffers.enumerated() { (inputLists + index).initialize(to: buffer.list) }
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
        for (slot, value) in initialValues.enumerated() { (published + slot).initialize(to: Atomic(value.bitPattern)) }
        let channels = UnsafeMutablePointer<Int>.allocate(capacity: max(outputChannels.count, 1))
        for (index, count) in outputChannels.enumerated() { (channels + index).initialize(to: count) }
        core = .allocate(capacity: 1)
        core.initialize(
            to: RealtimeCore(
                maximumFrames: maximumFrames, inputCount: inputBuffers.count, inputLists: inputLists,
                inputSources: sources, slotCount: initialValues.count, ramps: ramps, scratch: scratch, nextScratch: 0,
                events: events, eventCount: 0, commands: Unmanaged.passUnretained(commands), notify: notify,
                bypass: false, lastPulledSampleTime: -1, lastPulledFrames: 0, commandsApplied: counters,
                lastError: lastError, published: published, sampleRate: sampleRate, outputCount: outputChannels.count,
                outputChannels: channels))
    }

    deinit {
        let core = core.pointee
        core.inputLists.deallocate()
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
        self.core.deallocate()
    }
}
