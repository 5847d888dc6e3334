import Dispatch
import Foundation
import SonoraCore
import SonoraHAL
import SonoraUnits

/// One device's output shared by audio queues: a hidden mixer (every attached queue is a
/// source) in front of one I/O unit. Queues reach it by device name (CurrentDevice: one
/// output per name, opened with the first queue, closed when the last one leaves) or are
/// given one (`AudioQueue.setOutput`), e.g. on a device the program opened itself.
/// Or the mix feeds a node input of the caller's graph instead of an I/O unit of its own
/// (`init(graph:node:input:sampleRate:channels:maximumQueues:)`, AudioQueueOutput+Graph).
///
/// Formats: the mixer runs at one rate and channel count (the device's, or for a device
/// opened by name the first queue's; the I/O unit converts to whatever the device grants).
/// A queue of another channel count is mapped (mono to every channel, extra channels
/// dropped); a queue of another sample rate converts to the mix rate on its own thread
/// (with its play rate, before its ring: AudioQueue+RingRate), so the mixer only adds.
///
/// The device runs from the first queue's start until the last queue leaves; stopped and
/// paused queues add silence meanwhile. While it runs, the output takes the device's events
/// (`takeEvents`) every 50 ms: a device that vanishes (the HAL's interruption) stops every
/// attached queue with the reason in `AudioQueue.stopReason`; an xrun or a re-open marks
/// their timelines discontinuous. (A queue on an I/O unit of its own watches that unit's
/// device itself, every 100 ms: AudioQueue+UnitWatch.)
///
/// Many queues on one device (e.g. 32): make one output (`init(device:maximumQueues:)`, or
/// let the first `setCurrentDevice` open it) and attach each queue; each renders one slice
/// per cycle into its own scratch and the mixer adds them. One thread, the output's feeder
/// (QueueFeeder), refills them all (decoding into their rings, their callbacks): one wake-up
/// per refill round instead of one context switch per queue.
public final class AudioQueueOutput: @unchecked Sendable {
    /// The I/O unit the mix plays through (nil: the mix feeds a caller's graph).
    public let unit: IOUnit?
    /// The caller's graph whose node input the mix feeds (AudioQueueOutput+Graph), if any.
    public let graph: AudioGraph?
    /// The device's name (CurrentDevice), or the driver of a device given as an object
    /// (a graph output: the node input it feeds).
    public let deviceName: String
    /// The mix's rate and channel count.
    public let sampleRate: Double
    public let channelCount: Int
    let mixer: AudioQueueMixer
    /// Frames each source renders at a time (the unit's largest slice).
    private(set) var sliceFrames = 64

    /// The one thread refilling the queues here (QueueFeeder), started with the first.
    let feeder = QueueFeeder()
    private let lock = NSLock()
    private var queues: [ObjectIdentifier: WeakQueue] = [:]
    private var watcher: DeviceWatchThread?
    /// Held through a look at the device (`checkDevice`): a watcher replaced while its old
    /// thread's look still runs never takes the device's events at the same time as the new one.
    private let lookLock = NSLock()
    /// Whether this output was made by `shared(named:)` (and is closed with its last queue).
    private var isShared = false

    struct WeakQueue { weak var queue: AudioQueue? }

    /// An output through `unit` (the caller's; not yet initialized, or initialized already
    /// for a mix at `sampleRate`/`channels`): the mixer becomes its input 0.
    public convenience init(unit: IOUnit, sampleRate: Double, channels: Int, maximumQueues: Int = 64) throws(AudioError) {
        try self.init(host: .unit(unit), sampleRate: sampleRate, channels: channels, maximumQueues: maximumQueues)
    }

    /// What pulls the mix: an I/O unit (input 0's render callback) or a node input of a graph.
    enum Host {
        case unit(IOUnit)
        case graph(AudioGraph, node: AudioGraph.Node, input: Int)
    }

    init(host: Host, sampleRate: Double, channels: Int, maximumQueues: Int) throws(AudioError) {
        guard sampleRate > 0, channels > 0, maximumQueues > 0 else {
            throw AudioError(.queueInvalidPropertyValue, "AudioQueueOutput: \(sampleRate) Hz, \(channels) channels, \(maximumQueues) queues is not an output")
        }
        self.sampleRate = sampleRate
        channelCount = channels
        let mixer = AudioQueueMixer(capacity: maximumQueues, sampleRate: sampleRate)
        self.mixer = mixer
        switch host {
        case .unit(let unit):
            self.unit = unit
            graph = nil
            deviceName = unit.deviceName
            do throws(AudioError) {
                // Playback on (a recorder on the same unit may have turned it off: IOUnitUsers).
                try IOUnitUsers.shared.claim(.playback, of: unit, by: self) { unit throws(AudioError) in
                    if !unit.isInitialized {
                        try unit.setStreamFormat(.canonical(sampleRate: sampleRate, channels: channels), scope: .input, element: IOUnit.outputElement)
                    }
                    try unit.setRenderCallback(mixer, input: IOUnit.outputElement)
                }
            } catch {
                throw AudioError(.queueInvalidDevice, "AudioQueueOutput: \(unit.name) on '\(unit.deviceName)': \(error.message)")
            }
            sliceFrames = max(unit.maximumFramesPerSlice, 64)
        case .graph(let graph, let node, let input):
            unit = nil
            self.graph = graph
            deviceName = "\(graph.name(node)) input \(input)"
            sliceFrames = try Self.feed(graph, node: node, input: input, from: mixer, sampleRate: sampleRate, channels: channels)
        }
    }

    /// An output on `device` (open; the caller keeps it), at the device's rate and playback
    /// channels.
    public convenience init(device: any AudioDevice, maximumQueues: Int = 64) throws(AudioError) {
        guard device.format.outputChannels > 0 else {
            throw AudioError(.queueInvalidDevice, "AudioQueueOutput: device '\(device.driver)' has no playback")
        }
        let unit = IOUnit()
        try unit.setDevice(device)
        try self.init(unit: unit, sampleRate: Double(device.format.sampleRate), channels: device.format.outputChannels, maximumQueues: maximumQueues)
    }

    deinit {
        watcher?.cancel()
        // Gives up its playback claim: a recorder on the same unit goes on with capture alone.
        if let unit {
            IOUnitUsers.shared.release(.playback, of: unit, by: self) { unit throws(AudioError) in try unit.setRenderCallback(nil, input: IOUnit.outputElement) }
        }
        feeder.stop()
    }

    /// Queues attached now.
    public var queueCount: Int { mixer.sourceCount }
    /// Whether the device (or the caller's graph) is running.
    public var isRunning: Bool { unit?.isRunning ?? graph?.isRunning ?? false }
    /// Times the device's sample time jumped while rendering (xruns' skipped frames, re-opens).
    public var discontinuities: Int { mixer.clock.discontinuities }
    /// What the device measured (cycles, xruns, load …), nil before it is open.
    public var deviceStatistics: DeviceStatistics? { unit?.device?.statistics }

    // MARK: Shared outputs (CurrentDevice)

    private static let registryLock = NSLock()
    nonisolated(unsafe) private static var registry: [String: AudioQueueOutput] = [:]

    /// The shared output for the device called `name`, if a queue uses it now.
    public static func shared(named name: String) -> AudioQueueOutput? {
        registryLock.lock()
        defer { registryLock.unlock() }
        return registry[name]
    }

    /// The shared output for `name`, opened (at `sampleRate` and `channels`) if no queue uses
    /// it yet. The caller attaches a queue right after (under the registry lock's protection
    /// from `releaseIfUnused`, which only closes outputs without queues).
    static func acquire(named name: String, sampleRate: Double, channels: Int, configuration: AudioDeviceConfiguration) throws(AudioError) -> AudioQueueOutput {
        registryLock.lock()
        defer { registryLock.unlock() }
        if let existing = registry[name] {
            existing.pending += 1
            return existing
        }
        let unit = IOUnit()
        unit.deviceConfiguration = configuration
        do {
            try unit.setDevice(named: name)
        } catch {
            throw AudioError(.queueInvalidDevice, "AudioQueueOutput: '\(name)': \(error.message)")
        }
        let output = try AudioQueueOutput(unit: unit, sampleRate: sampleRate, channels: channels)
        output.isShared = true
        output.pending = 1
        registry[name] = output
        return output
    }

    /// Queues between `acquire` and `attach` (so the output is not closed under them).
    private var pending = 0

    /// Closes a shared output nobody uses any more (after a queue left it or failed to join).
    static func releaseIfUnused(_ output: AudioQueueOutput, acquired: Bool) {
        registryLock.lock()
        if acquired { output.pending -= 1 }
        let close = output.isShared && output.pending == 0 && output.queueCount == 0 && registry[output.deviceName] === output
        if close { registry[output.deviceName] = nil }
        registryLock.unlock()
        if close { output.close() }
    }

    private func close() {
        watcher?.cancel()
        watcher = nil
        if let unit {
            IOUnitUsers.shared.release(.playback, of: unit, by: self) { unit throws(AudioError) in try unit.setRenderCallback(nil, input: IOUnit.outputElement) }
        }
        feeder.stop()
    }

    // MARK: Queues

    /// Adds a queue's render side to the mix (control side).
    func attach(_ queue: AudioQueue, target: QueueRenderTarget) throws(AudioError) {
        try target.prepareScratch(frames: sliceFrames)
        guard mixer.add(target) else {
            throw AudioError(.queueInvalidDevice, "AudioQueue.setOutput: \(queue.name): the output on '\(deviceName)' already mixes \(mixer.capacity) queues")
        }
        lock.lock()
        queues[ObjectIdentifier(queue)] = WeakQueue(queue: queue)
        lock.unlock()
    }

    /// Takes a queue out of the mix; the device stops when the last queue has left.
    func detach(_ queue: AudioQueue, target: QueueRenderTarget) {
        mixer.remove(target)
        // Under the lock with `startDevice`: a queue joining now either keeps the device
        // running or starts it again after this stop.
        lock.lock()
        defer { lock.unlock() }
        queues[ObjectIdentifier(queue)] = nil
        if queues.isEmpty {
            watcher?.cancel()
            watcher = nil
            if let unit { IOUnitUsers.shared.stop(unit, by: self) }
        }
    }

    /// Starts the device if it is not running (a queue's start), and watches it.
    func startDevice() throws(AudioError) {
        // A graph output: the graph's owner runs it (or renders it offline).
        guard let unit else { return }
        lock.lock()
        defer { lock.unlock() }
        if !unit.isRunning { mixer.clock.reset() }
        try IOUnitUsers.shared.start(unit, by: self)
        if watcher == nil {
            // Every 50 ms (was 10): with 64 players on a device the looks' wake-ups cost a tenth
            // of their CPU (perf); the render side marks its own timeline at a jump in device
            // time the moment it sees one. On a thread of its own, one wake-up a look (a
            // dispatch timer woke two threads: DeviceWatchThread).
            watcher = DeviceWatchThread(name: "sonora-devwatch", interval: 0.05) { [weak self] in self?.checkDevice() }
        }
    }

    /// What the device reported since the last look (control side): an interruption (the
    /// device vanished) stops every attached queue; dropped time marks their timelines.
    func checkDevice() {
        lookLock.lock()
        defer { lookLock.unlock() }
        feeder.checkStalled()
        guard let unit, unit.device != nil else { return }
        var vanished: DeviceEvent?
        var droppedTime = false
        /// What the queues' sessions hear of (interruptions, re-opens, resumes), in order.
        var forSession: [DeviceEvent] = []
        for event in IOUnitUsers.shared.takeEvents(of: unit, for: self) {
            switch event {
            case .interruptionBegan: vanished = vanished ?? event
            case .xrun, .resumed, .interruptionEnded: droppedTime = true
            case .renderError, .formatChanged: break
            }
            switch event {
            case .interruptionBegan, .interruptionEnded, .resumed: forSession.append(event)
            case .xrun, .renderError, .formatChanged: break
            }
        }
        guard vanished != nil || droppedTime else { return }
        lock.lock()
        let attached = queues.values.compactMap(\.queue)
        lock.unlock()
        if droppedTime { mixer.sources.forEach { $0.markDiscontinuity() } }
        if let vanished {
            let reason = AudioError(.queueInvalidDevice, "the device '\(deviceName)' went away: \(vanished)")
            // A queue whose session makes the loss an interruption is paused by it instead.
            for queue in attached where !queue.session.handlesDeviceLoss { queue.stopBecauseOutputFailed(reason) }
        }
        // Then each session of the queues here (one per process, unless a test scopes its own).
        var sessions: [ObjectIdentifier: AudioSession] = [:]
        for queue in attached { sessions[ObjectIdentifier(queue.session)] = queue.session }
        for session in sessions.values {
            for event in forSession { session.deviceReported(event, device: deviceName) }
        }
    }
}
