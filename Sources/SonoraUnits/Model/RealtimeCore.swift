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

/// A unit's own control → realtime message (`AudioUnit.receive(_:)`): a value and an
/// unretained object the control side keeps alive (retire it when it is replaced).
struct RealtimeMessage: BitwiseCopyable {
    var value: Double
    var object: UnsafeMutableRawPointer?
}

/// Control → realtime commands of one unit.
enum RealtimeCommand: BitwiseCopyable {
    case message(RealtimeMessage)
    case parameter(ParameterEvent)
    case setInput(element: Int32, source: InputSource)
    case setNotify(index: Int32, callback: RenderCallback?)
    case setBypass(Bool)
    case setCachesOutput(Bool)
    case reset
}

/// Everything the render path of one unit touches, reachable through raw
/// pointers only. Allocated at `initialize()`, freed at `uninitialize()`;
/// `RealtimeResources` owns the memory. (The few fields `RenderContext`'s inlinable
/// accessors read are usable from inline.)
@usableFromInline
struct RealtimeCore {
    // The first 64 bytes (the core starts its block, 64-aligned): what a steady (lean) render
    // of the unit reads, so a graph of a thousand units touches one line of each core.
    @usableFromInline var inputCount: Int
    @usableFromInline var inputLists: UnsafeMutablePointer<AudioBufferList>
    /// The unit's own input buffers (`inputLists` may point elsewhere for one in-place render).
    var ownedInputLists: UnsafeMutablePointer<AudioBufferList>
    var inputSources: UnsafeMutablePointer<InputSource>
    var ramps: UnsafeMutablePointer<LinearRamp>
    var nextScratch: Int
    var lastPulledSampleTime: Double
    var cachesOutput: Bool
    /// False while no parameter ramp runs, so renders skip looking for one.
    var rampsActive: Bool
    @usableFromInline var bypass: Bool
    /// The unit's `canProcessInPlace` and `pullsInputsItself`, read once at `initialize()`
    /// (they are fixed per unit), so a render makes no virtual call to learn them.
    var processesInPlace = false
    var pullsOwnInputs = false
    /// Inputs with a crossfade running (a `fadeSources` entry that is not `.none`): 0 lets
    /// a render skip looking at each input's fade. Two bytes, to stay on this line; counted
    /// with wrapping arithmetic (only whether it is 0 is read: exact unless 65,536 inputs of
    /// one unit fade at once).
    var fadingInputs: UInt16 = 0

    // The second line: the rest of what `AudioUnit.render` reads in the steady state (its
    // argument checks, the command check, `isSteady`, the pull check), so a direct render —
    // a host rendering one unit, as the LV2 bench does — touches two lines of the core, not
    // four (issue 22, `lv2h8`).
    var maximumFrames: Int
    var outputCount: Int
    var outputChannels: UnsafeMutablePointer<Int>
    /// Commands the control side has pushed (it counts after each push), and the
    /// realtime side has taken: equal counts mean the queue need not be looked at.
    var commandsSent: UnsafeMutablePointer<Atomic<Int>>
    var commandsTaken: Int
    var eventCount: Int
    var notifyCount: Int
    var lastPulledFrames: Int

    var slotCount: Int
    static let scratchCount = 4
    var scratch: UnsafeMutablePointer<Float>
    static let eventCapacity = 512
    var events: UnsafeMutablePointer<ParameterEvent>
    var commands: Unmanaged<MessageQueue<RealtimeCommand>>
    static let notifyCapacity = 8
    var notify: UnsafeMutablePointer<RenderCallback?>
    /// Commands taken from the queue so far (read by the control side to free retired objects).
    var commandsApplied: UnsafeMutablePointer<Atomic<Int>>
    var lastError: UnsafeMutablePointer<Atomic<Int32>>
    /// Values the realtime side publishes for read-only (meter) parameters, as Float bit patterns.
    @usableFromInline var published: UnsafeMutablePointer<Atomic<UInt32>>
    var sampleRate: Double

    // Crossfades when an input's source changes while rendering: the old source
    // keeps being pulled into `fadeLists` and faded out over `crossfadeFrames`.
    var crossfadeFrames: Int
    var fadeSources: UnsafeMutablePointer<InputSource>
    var fadeLists: UnsafeMutablePointer<AudioBufferList>
    var fadePositions: UnsafeMutablePointer<Int>

    // Fan-out: a unit feeding several inputs renders once per time stamp and
    // serves the other pulls from its output cache (`cachesOutput`, on the first line).
    var outputCaches: UnsafeMutablePointer<AudioBufferList>
    var cachedSampleTimes: UnsafeMutablePointer<Double>
    var cachedFrames: UnsafeMutablePointer<Int>

    /// Set while a render plan runs the head that pulls its inputs itself (the I/O unit):
    /// its inputs are already rendered by the plan's steps, so `RenderContext.pullInput`
    /// hands out the bound input instead of pulling again.
    var pullsServedFromInputs = false

    /// True when a render of this unit needs none of the per-render machinery beyond its
    /// kernel: no parameter event pending, no ramp running, no render notification, not
    /// bypassed, no crossfade. The render then calls `process` once for the whole cycle
    /// (the lean path), which is what the slice loop would do in that state. The fields
    /// read are written only by the realtime side (commands arrive through the queue).
    @inline(__always)
    var isSteady: Bool {
        eventCount == 0 && !rampsActive && notifyCount == 0 && !bypass && fadingInputs == 0
    }
}

/// Owns the memory `RealtimeCore` points into (on the control side).
final class RealtimeResources {
    let core: UnsafeMutablePointer<RealtimeCore>
    let inputBuffers: [OwnedAudioBufferList]
    let fadeBuffers: [OwnedAudioBufferList]
    let outputCacheBuffers: [OwnedAudioBufferList]
    let commands: MessageQueue<RealtimeCommand>
    /// The unit's shape as allocated, for the control side (a render plan's compile): reading
    /// it from the core while the realtime side writes the core is an access race to Swift
    /// (a write through `pointee` is a formal access of the whole core).
    let inputCount: Int
    let outputChannels: [Int]
    let maximumFrames: Int
    /// `outputChannels[0]` (0 without outputs), stored inline: a compile of a graph of
    /// thousands of units reads it without touching the array's storage.
    let firstOutputChannels: Int
    let outputCount: Int
    /// One block for everything every render touches — the core and its small
    /// per-element arrays — so a unit's hot state is a few adjacent cache lines.
    private let hot: UnsafeMutableRawPointer
    /// One block for what only some renders touch (events, notifications, fades, caches, meters).
    private let cold: UnsafeMutableRawPointer

    /// Lays out typed arrays one after another in a single allocation.
    private struct Layout {
        var size = 0
        var alignment = 64
        mutating func reserve<T: ~Copyable>(_ type: T.Type, _ count: Int) -> Int {
            let align = MemoryLayout<T>.alignment
            size = (size + align - 1) / align * align
            let offset = size
            size += MemoryLayout<T>.stride * max(count, 1)
            alignment = max(alignment, align)
            return offset
        }
    }

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
        inputCount = inputChannels.count
        self.outputChannels = outputChannels
        self.maximumFrames = maximumFrames
        firstOutputChannels = outputChannels.first ?? 0
        outputCount = outputChannels.count
        let inputs = inputBuffers.count
        let outputs = outputChannels.count
        let slots = initialValues.count

        var hotLayout = Layout()
        let coreAt = hotLayout.reserve(RealtimeCore.self, 1)
        let channelsAt = hotLayout.reserve(Int.self, outputs)
        let inputListsAt = hotLayout.reserve(AudioBufferList.self, inputs)
        let ownedInputListsAt = hotLayout.reserve(AudioBufferList.self, inputs)
        let sourcesAt = hotLayout.reserve(InputSource.self, inputs)
        let fadeSourcesAt = hotLayout.reserve(InputSource.self, inputs)
        let rampsAt = hotLayout.reserve(LinearRamp.self, slots)
        // Written by the control side: on a line of its own.
        hotLayout.size = (hotLayout.size + 63) / 64 * 64
        let sentAt = hotLayout.reserve(Atomic<Int>.self, 1)
        hot = .allocate(byteCount: hotLayout.size, alignment: hotLayout.alignment)

        var coldLayout = Layout()
        let scratchAt = coldLayout.reserve(Float.self, RealtimeCore.scratchCount * maximumFrames)
        let eventsAt = coldLayout.reserve(ParameterEvent.self, RealtimeCore.eventCapacity)
        let notifyAt = coldLayout.reserve(RenderCallback?.self, RealtimeCore.notifyCapacity)
        let fadeListsAt = coldLayout.reserve(AudioBufferList.self, inputs)
        let fadePositionsAt = coldLayout.reserve(Int.self, inputs)
        let cachesAt = coldLayout.reserve(AudioBufferList.self, outputs)
        let cachedTimesAt = coldLayout.reserve(Double.self, outputs)
        let cachedFramesAt = coldLayout.reserve(Int.self, outputs)
        let publishedAt = coldLayout.reserve(Atomic<UInt32>.self, slots)
        let appliedAt = coldLayout.reserve(Atomic<Int>.self, 1)
        let lastErrorAt = coldLayout.reserve(Atomic<Int32>.self, 1)
        cold = .allocate(byteCount: coldLayout.size, alignment: coldLayout.alignment)

        func array<T: ~Copyable>(_ block: UnsafeMutableRawPointer, _ offset: Int, _ type: T.Type) -> UnsafeMutablePointer<T> {
            (block + offset).bindMemory(to: T.self, capacity: 1)
        }
        let channels = array(hot, channelsAt, Int.self)
        for (index, count) in outputChannels.enumerated() { (channels + index).initialize(to: count) }
        let inputLists = array(hot, inputListsAt, AudioBufferList.self)
        let ownedInputLists = array(hot, ownedInputListsAt, AudioBufferList.self)
        for (index, buffer) in inputBuffers.enumerated() {
            (inputLists + index).initialize(to: buffer.list)
            (ownedInputLists + index).initialize(to: buffer.list)
        }
        let sources = array(hot, sourcesAt, InputSource.self)
        sources.initialize(repeating: .none, count: max(inputs, 1))
        let fadeSources = array(hot, fadeSourcesAt, InputSource.self)
        fadeSources.initialize(repeating: .none, count: max(inputs, 1))
        let ramps = array(hot, rampsAt, LinearRamp.self)
        for (slot, value) in initialValues.enumerated() { (ramps + slot).initialize(to: LinearRamp(value: value)) }
        let sent = array(hot, sentAt, Atomic<Int>.self)
        sent.initialize(to: Atomic(0))

        let scratch = array(cold, scratchAt, Float.self)
        scratch.initialize(repeating: 0, count: RealtimeCore.scratchCount * maximumFrames)
        let events = array(cold, eventsAt, ParameterEvent.self)
        let notify = array(cold, notifyAt, RenderCallback?.self)
        notify.initialize(repeating: nil, count: RealtimeCore.notifyCapacity)
        let fadeLists = array(cold, fadeListsAt, AudioBufferList.self)
        for (index, buffer) in fadeBuffers.enumerated() { (fadeLists + index).initialize(to: buffer.list) }
        let fadePositions = array(cold, fadePositionsAt, Int.self)
        fadePositions.initialize(repeating: 0, count: max(inputs, 1))
        let outputCaches = array(cold, cachesAt, AudioBufferList.self)
        for (index, buffer) in outputCacheBuffers.enumerated() { (outputCaches + index).initialize(to: buffer.list) }
        let cachedSampleTimes = array(cold, cachedTimesAt, Double.self)
        cachedSampleTimes.initialize(repeating: -1, count: max(outputs, 1))
        let cachedFrames = array(cold, cachedFramesAt, Int.self)
        cachedFrames.initialize(repeating: 0, count: max(outputs, 1))
        let published = array(cold, publishedAt, Atomic<UInt32>.self)
        for slot in 0..<slots { (published + slot).initialize(to: Atomic(0)) }
        let applied = array(cold, appliedAt, Atomic<Int>.self)
        applied.initialize(to: Atomic(0))
        let lastError = array(cold, lastErrorAt, Atomic<Int32>.self)
        lastError.initialize(to: Atomic(0))

        core = array(hot, coreAt, RealtimeCore.self)
        core.initialize(
            to: RealtimeCore(
                inputCount: inputs, inputLists: inputLists, ownedInputLists: ownedInputLists, inputSources: sources, ramps: ramps, nextScratch: 0, lastPulledSampleTime: -1, cachesOutput: false, rampsActive: false, bypass: false, maximumFrames: maximumFrames, outputCount: outputs, outputChannels: channels, commandsSent: sent, commandsTaken: 0, eventCount: 0, notifyCount: 0, lastPulledFrames: 0, slotCount: slots, scratch: scratch, events: events, commands: Unmanaged.passUnretained(commands), notify: notify, commandsApplied: applied, lastError: lastError, published: published, sampleRate: sampleRate, crossfadeFrames: 64, fadeSources: fadeSources, fadeLists: fadeLists, fadePositions: fadePositions, outputCaches: outputCaches, cachedSampleTimes: cachedSampleTimes, cachedFrames: cachedFrames))
    }

    deinit {
        // Everything in the blocks is trivial (atomics of integers included): no deinitialization needed.
        hot.deallocate()
        cold.deallocate()
    }
}
