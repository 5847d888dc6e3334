import Dispatch
import Foundation
import SonoraCore
import SonoraDSP
import SonoraFile
import SonoraUnits

/// Core Audio's C-convention output callback: (user data, queue, buffer), the queue and the
/// buffer as unretained pointers (`AudioQueue.from`, `AudioQueueBuffer.from`).
public typealias AudioQueueOutputCallback = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer, UnsafeMutableRawPointer) -> Void

/// An output audio queue (AudioQueueNewOutput): the program enqueues buffers of packets in
/// `format`; the queue decodes them on its own thread into a ring its render side plays
/// from, and hands each buffer back through the callback once it is done with it.
///
/// Threads: the program's (any; the calls here), the queue's (a `Worker`: decoding, callbacks
/// unless a `DispatchQueue` is given, listeners), and the render side (`renderer`, realtime).
/// As an AudioQueueRef, a queue lives until `dispose(immediate:)`, however many references the
/// program drops. It plays offline (`setOfflineRenderFormat`, `offlineRender`) or live through an
/// I/O unit (`setOutputUnit`), whose I/O thread calls the same `renderer`.
public final class AudioQueue: @unchecked Sendable {
    /// Where the callback runs.
    public enum CallbackContext: @unchecked Sendable {
        /// The queue's own (normal-priority) thread.
        case queueThread
        /// The given dispatch queue (called synchronously from the queue's thread).
        case dispatchQueue(DispatchQueue)
    }

    /// The queue's name in messages ("queue 3 (ima4 8000 Hz)").
    public let name: String
    /// The format the program's buffers hold (kAudioQueueProperty_StreamDescription).
    public let format: StreamFormat
    /// The realtime side: a live output calls `renderer.render(_:)` once per I/O period.
    public internal(set) var renderer: AudioQueueRenderer

    let callback: (AudioQueue, AudioQueueBuffer) -> Void
    let callbackContext: CallbackContext
    let converter: AudioConverter
    /// The decoded form: interleaved Float32 at the stream's rate and channel count.
    let decodedFormat: StreamFormat
    var worker: Worker!
    /// The reference `dispose` gives up.
    var keepAlive: Unmanaged<AudioQueue>?

    // Program-side state, guarded by `lock` (never held across a callback, a decode or a wait).
    let lock = NSLock()
    var queued: [QueuedBuffer] = []
    var buffers: [ObjectIdentifier: AudioQueueBuffer] = [:]
    var lifecycle = Lifecycle.open
    var running = false
    /// Whether the queue's thread takes buffers (after prime or start, until a stop).
    var decoding = false
    var stopAfterQueued = false
    var resetRequested = false
    var resetting = false
    var offlineFormat: StreamFormat?
    /// The I/O unit a live queue plays through (`setOutputUnit`), and its render callback.
    var outputUnit: IOUnit?
    var outputTarget: QueueRenderTarget?
    var offlineConverter: AudioConverter?
    var volumeValue: Float = 1
    var volumeRampTime: Float = 0
    var panValue: Float = 0
    var meteringEnabled = false
    var latestLevels: [AudioQueueLevel]
    var magicCookieValue: [UInt8]?
    var cookieChanged = false
    var converterErrorValue: AudioError?
    var decodeBufferFrames = 8192
    var listeners: [Property: [(id: Int, body: (AudioQueue, Property) -> Void)]] = [:]
    var nextListenerID = 1
    /// The thread running a callback now (stop(immediate:) from a callback would wait on itself).
    var callbackThread: pthread_t?
    /// Commands to the render side come from several threads: pushed under `lock`.
    let renderLock = NSLock()

    // Queue-thread state (touched only by the worker's pass).
    var current: QueuedBuffer?
    var pendingDecoded: [Float] = []
    var pendingOffset = 0
    var decodedTotal = 0
    var writtenTotal = 0
    var streamBase = 0
    var endSent = false

    // Barrier between a program call and the queue's thread.
    let passDone = NSCondition()
    var passRequested = 0
    var passCompleted = 0

    enum Lifecycle { case open, disposalPending, invalidated }

    /// An entry in the queue: a buffer with what `enqueue` said about it, or a flush marker.
    struct QueuedBuffer {
        var buffer: AudioQueueBuffer?
        var bytes: [UInt8]
        var descriptions: [AudioStreamPacketDescription]
        var trimAtStart: Int
        var trimAtEnd: Int
        var startTime: Int?
        var events: [AudioQueueParameterEvent]
    }

    private static let counter = Counter()

    /// A new output queue for buffers in `format` (linear PCM, IMA4, or a format the file
    /// layer decodes: AAC, MP3, ALAC, FLAC, Opus), calling `callback` with each buffer the
    /// queue is done with. `decodeBufferFrames` is the ring between decoder and render side.
    public init(
        format: StreamFormat, callbackOn context: CallbackContext = .queueThread,
        callback: @escaping (AudioQueue, AudioQueueBuffer) -> Void
    ) throws(AudioError) {
        let number = Self.counter.next()
        name = "queue \(number) (\(format.formatID) \(Int(format.sampleRate)) Hz)"
        do {
            try format.validate()
        } catch {
            throw AudioError(.queueInvalidPropertyValue, "AudioQueue.init: \(name): \(error.message)")
        }
        let channels = Int(format.channelsPerFrame)
        decodedFormat = .linearPCM(sampleRate: format.sampleRate, channels: channels, sample: .float32)
        do {
            converter = try AudioConverter(from: format, to: decodedFormat)
        } catch {
            throw AudioError(.queueCodecNotFound, "AudioQueue.init: \(name): no decoder for \(format): \(error.message)")
        }
        self.format = format
        callbackContext = context
        self.callback = callback
        latestLevels = Array(repeating: AudioQueueLevel(average: 0, peak: 0), count: channels)
        renderer = try AudioQueueRenderer(channelCount: channels, ringFrames: decodeBufferFrames)
        worker = try Worker(
            name: "sonora-aqueue",
            perform: { [unowned(unsafe) self] job in self.fire(Property(rawValue: job.tag)) },
            afterJobs: { [unowned(unsafe) self] in self.serve() })
        try worker.start()
        renderer.worker = worker
        renderer.wakesWorker.store(true, ordering: .relaxed)
        // As an AudioQueueRef, the queue lives until `dispose`: its thread must never drop the
        // last reference (the queue's deinit would then run on the thread it has to join).
        keepAlive = Unmanaged.passRetained(self)
    }

    /// As `init(format:callbackOn:callback:)` with Core Audio's C callback and its user data.
    public convenience init(
        format: StreamFormat, callbackOn context: CallbackContext = .queueThread,
        callback: AudioQueueOutputCallback, userData: UnsafeMutableRawPointer?
    ) throws(AudioError) {
        nonisolated(unsafe) let userData = userData
        try self.init(format: format, callbackOn: context) { queue, buffer in
            callback(userData, queue.opaque, buffer.opaque)
        }
    }

    deinit {
        worker.stop()
    }

    /// The queue as an opaque pointer, for C-convention callbacks (not retained).
    public var opaque: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    /// The queue behind a pointer from `opaque`.
    public static func from(_ pointer: UnsafeMutableRawPointer) -> AudioQueue {
        Unmanaged<AudioQueue>.fromOpaque(pointer).takeUnretainedValue()
    }

    // MARK: Errors

    func error(_ code: AudioError.Code, _ call: String, _ message: String) -> AudioError {
        AudioError(code, "AudioQueue.\(call): \(name): \(message)")
    }

    /// Throws unless the queue is open (call with `lock` held).
    func requireOpen(_ call: String, playingOut: Bool = false) throws(AudioError) {
        switch lifecycle {
        case .open: return
        case .disposalPending:
            // What is queued still plays (offline: through offlineRender) before the queue goes.
            if playingOut { return }
            throw error(.queueDisposalPending, call, "the queue is being disposed of after its queued buffers")
        case .invalidated: throw error(.queueInvalidated, call, "the queue has been disposed of")
        }
    }

    func withLock<Result>(_ body: () throws(AudioError) -> Result) throws(AudioError) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    func push(_ command: RenderCommand) {
        renderLock.lock()
        defer { renderLock.unlock() }
        // 256 slots; the program side sends a handful per call, the render side drains each slice.
        while !renderer.commands.push(command) { usleep(100) }
    }

    func pushEvent(_ event: StampedEvent) {
        while !renderer.events.push(event) { usleep(100) }
    }

    // MARK: Buffers

    /// A new buffer of `byteCapacity` bytes (AudioQueueAllocateBufferWithPacketDescriptions);
    /// `packetDescriptionCapacity` > 0 for formats with variable-size packets.
    public func allocateBuffer(byteCapacity: Int, packetDescriptionCapacity: Int = 0) throws(AudioError) -> AudioQueueBuffer {
        try withLock { () throws(AudioError) -> AudioQueueBuffer in
            try requireOpen("allocateBuffer")
            guard byteCapacity > 0, byteCapacity <= 1 << 26, packetDescriptionCapacity >= 0, packetDescriptionCapacity <= 1 << 20 else {
                throw error(.queueInvalidParameter, "allocateBuffer", "capacity \(byteCapacity) bytes / \(packetDescriptionCapacity) descriptions is outside 1…64 MiB / 0…1M")
            }
            let buffer = AudioQueueBuffer(owner: ObjectIdentifier(self), byteCapacity: byteCapacity, packetDescriptionCapacity: packetDescriptionCapacity)
            buffers[ObjectIdentifier(buffer)] = buffer
            return buffer
        }
    }

    /// Frees a buffer the queue does not hold (AudioQueueFreeBuffer).
    public func freeBuffer(_ buffer: AudioQueueBuffer) throws(AudioError) {
        try withLock { () throws(AudioError) in
            try requireOpen("freeBuffer")
            try requireMine(buffer, "freeBuffer")
            guard buffer.state != .enqueued else {
                throw error(.queueBufferInQueue, "freeBuffer", "the buffer is enqueued; stop or reset the queue first")
            }
            buffer.state = .freed
            buffers[ObjectIdentifier(buffer)] = nil
        }
    }

    func requireMine(_ buffer: AudioQueueBuffer, _ call: String) throws(AudioError) {
        guard buffer.owner == ObjectIdentifier(self), buffer.state != .freed, buffers[ObjectIdentifier(buffer)] != nil else {
            throw error(.queueInvalidBuffer, call, buffer.state == .freed ? "the buffer was freed" : "the buffer belongs to another queue")
        }
    }

    /// Enqueues a filled buffer (AudioQueueEnqueueBuffer / …WithParameters): `packetDescriptions`
    /// for variable-size packets; frames to trim from the decoded start and end; a start time in
    /// the queue's sample time (silence until then); parameter events that apply from its first frame.
    public func enqueue(
        _ buffer: AudioQueueBuffer, packetDescriptions: [AudioStreamPacketDescription] = [],
        trimFramesAtStart: Int = 0, trimFramesAtEnd: Int = 0, startTime: Int? = nil,
        parameterEvents: [AudioQueueParameterEvent] = []
    ) throws(AudioError) {
        let call = "enqueue"
        try withLock { () throws(AudioError) in
            try requireOpen(call)
            try requireMine(buffer, call)
            if resetting { throw error(.queueEnqueueDuringReset, call, "buffers cannot be enqueued while the queue stops or resets") }
            guard buffer.state != .enqueued else { throw error(.queueBufferEnqueuedTwice, call, "the buffer is already in the queue") }
            guard buffer.byteSize > 0 else { throw error(.queueBufferEmpty, call, "the buffer holds no bytes (set byteSize)") }
            guard buffer.byteSize <= buffer.byteCapacity else {
                throw error(.queueInvalidBuffer, call, "byteSize \(buffer.byteSize) exceeds the capacity \(buffer.byteCapacity)")
            }
            guard trimFramesAtStart >= 0, trimFramesAtEnd >= 0 else {
                throw error(.queueInvalidParameter, call, "trim frames \(trimFramesAtStart)/\(trimFramesAtEnd) must not be negative")
            }
            if let startTime, startTime < 0 { throw error(.queueInvalidParameter, call, "start time \(startTime) is negative") }
            try checkPackets(buffer, packetDescriptions, call)
            if format.isLinearPCM, trimFramesAtStart + trimFramesAtEnd > buffer.byteSize / Int(format.bytesPerFrame) {
                throw error(.queueInvalidParameter, call, "trimming \(trimFramesAtStart) + \(trimFramesAtEnd) frames from a \(buffer.byteSize / Int(format.bytesPerFrame))-frame buffer")
            }
            for event in parameterEvents { try check(event.parameter, event.value, call) }
            buffer.state = .enqueued
            queued.append(QueuedBuffer(
                buffer: buffer, bytes: buffer.bytes, descriptions: packetDescriptions,
                trimAtStart: trimFramesAtStart, trimAtEnd: trimFramesAtEnd, startTime: startTime, events: parameterEvents))
        }
        worker.wake()
    }

    private func checkPackets(_ buffer: AudioQueueBuffer, _ descriptions: [AudioStreamPacketDescription], _ call: String) throws(AudioError) {
        if format.bytesPerPacket > 0 {
            guard buffer.byteSize % Int(format.bytesPerPacket) == 0 else {
                throw error(.queueInvalidBuffer, call, "\(buffer.byteSize) bytes is not a whole number of \(format.bytesPerPacket)-byte packets")
            }
            return
        }
        guard !descriptions.isEmpty else {
            throw error(.queueInvalidBuffer, call, "\(format.formatID) has variable-size packets: give their descriptions")
        }
        guard descriptions.count <= buffer.packetDescriptionCapacity else {
            throw error(.queueInvalidBuffer, call, "\(descriptions.count) packet descriptions exceed the buffer's capacity of \(buffer.packetDescriptionCapacity)")
        }
        for (index, description) in descriptions.enumerated()
        where description.startOffset < 0 || Int(description.startOffset) + Int(description.dataByteSize) > buffer.byteSize {
            throw error(.queueInvalidBuffer, call, "packet \(index) (\(description.startOffset)+\(description.dataByteSize)) lies outside the buffer's \(buffer.byteSize) bytes")
        }
    }

    // MARK: Control

    /// Decodes ahead (AudioQueuePrime) and returns the frames ready to play.
    @discardableResult
    public func prime(frames: Int = 0) throws(AudioError) -> Int {
        try withLock { () throws(AudioError) in
            try requireOpen("prime")
            decoding = true
        }
        barrier()
        let ready = renderer.ring.readableFrames
        return frames > 0 ? min(frames, ready) : ready
    }

    /// Starts (or resumes after `pause`) playing (AudioQueueStart); `deviceSampleTime` is the
    /// output's sample time to begin at (offline: frames of `offlineRender` since the format was
    /// set), nil for now.
    public func start(atDeviceSampleTime deviceSampleTime: Int? = nil) throws(AudioError) {
        let call = "start"
        let resuming = try withLock { () throws(AudioError) -> Bool in
            try requireOpen(call)
            guard offlineFormat != nil || outputUnit != nil else {
                throw error(.queueCannotStart, call, "no output: give an I/O unit (setOutputUnit) or an offline render format")
            }
            if let deviceSampleTime, deviceSampleTime < 0 {
                throw error(.queueInvalidParameter, call, "start time \(deviceSampleTime) is negative")
            }
            let resuming = running
            running = true
            decoding = true
            return resuming
        }
        push(.start(at: deviceSampleTime ?? -1, resetTimeline: !resuming))
        if let unit = try withLock({ () throws(AudioError) in offlineFormat == nil ? outputUnit : nil }) {
            do throws(AudioError) {
                try unit.start()
            } catch {
                _ = try? withLock { running = false }
                throw self.error(.queueCannotStart, call, "\(unit.name) did not start: \(error.message)")
            }
        }
        if !resuming { notify(.isRunning) }
    }

    /// Pauses without losing what is queued (AudioQueuePause); `start` resumes.
    public func pause() throws(AudioError) {
        try withLock { () throws(AudioError) in
            try requireOpen("pause")
            guard running else { throw error(.queueInvalidRunState, "pause", "the queue is not running") }
        }
        push(.pause)
    }

    /// Stops (AudioQueueStop). Immediately: the queue halts now and every buffer comes back
    /// through the callback before this returns. Otherwise: the queued buffers play out, then
    /// IsRunning goes false (with its listener) right after the last frame.
    public func stop(immediate: Bool) throws(AudioError) {
        try withLock { () throws(AudioError) in try requireOpen("stop") }
        if immediate {
            try resetQueue("stop", stopping: true)
        } else {
            try withLock { () throws(AudioError) in stopAfterQueued = true }
            worker.wake()
        }
    }

    /// Decodes everything queued and drains the decoder (AudioQueueFlush), so the stream's
    /// last frames are in the ring (a codec holds some back until told the stream ended).
    public func flush() throws(AudioError) {
        try withLock { () throws(AudioError) in
            try requireOpen("flush")
            queued.append(QueuedBuffer(buffer: nil, bytes: [], descriptions: [], trimAtStart: 0, trimAtEnd: 0, startTime: nil, events: []))
        }
        barrier()
    }

    /// Drops what is queued and decoded, hands every buffer back, resets the decoder; a
    /// running queue keeps running (AudioQueueReset).
    public func reset() throws(AudioError) {
        try withLock { () throws(AudioError) in try requireOpen("reset") }
        try resetQueue("reset", stopping: false)
    }

    /// Disposes of the queue (AudioQueueDispose): immediately (as `stop(immediate: true)`), or
    /// after the queued buffers have played (calls then fail with 'disposal pending').
    public func dispose(immediate: Bool) throws(AudioError) {
        let playing = try withLock { () throws(AudioError) -> Bool in
            try requireOpen("dispose")
            return running
        }
        // A stopped queue has nothing to play out: a deferred dispose is then an immediate one.
        if immediate || !playing {
            try resetQueue("dispose", stopping: true)
            try withLock { () throws(AudioError) in
                lifecycle = .invalidated
                buffers.removeAll()
            }
            worker.stop()
            releaseKeepAlive()
        } else {
            try withLock { () throws(AudioError) in
                lifecycle = .disposalPending
                stopAfterQueued = true
            }
            worker.wake()
        }
    }

    /// Gives up the queue's own reference (after its thread has stopped).
    func releaseKeepAlive() {
        let reference = try? withLock { () -> Unmanaged<AudioQueue>? in
            defer { keepAlive = nil }
            return keepAlive
        }
        reference?.release()
    }

    private func resetQueue(_ call: String, stopping: Bool) throws(AudioError) {
        try withLock { () throws(AudioError) in
            if let thread = callbackThread, pthread_equal(thread, pthread_self()) != 0 {
                throw error(.queueInvalidRunState, call, "\(call) cannot wait for the queue's callback from inside that callback; use stop(immediate: false)")
            }
            resetRequested = true
        }
        barrier()
        let wasRunning = try withLock { () throws(AudioError) -> Bool in
            let wasRunning = running
            if stopping {
                running = false
                decoding = false
            }
            return wasRunning
        }
        if stopping {
            push(.stop)
            // The device stops too: silence now, and no period renders the queue meanwhile.
            (try? withLock { outputUnit })??.stop()
        }
        applyOfflineCommands()
        if stopping && wasRunning { notify(.isRunning) }
    }

    /// Offline, no render thread drains the commands: apply them now (under the render lock).
    func applyOfflineCommands() {
        guard (try? withLock { offlineFormat != nil }) == true else { return }
        offlineRenderLock.lock()
        defer { offlineRenderLock.unlock() }
        renderer.render(idleOutput.list(frameCount: 0))
    }

    let offlineRenderLock = NSLock()
    /// A zero-frame output for `applyOfflineCommands`.
    lazy var idleOutput: OwnedAudioBufferList = try! OwnedAudioBufferList(channelCount: renderer.channelCount, frameCapacity: 1)

    /// Runs one pass of the queue's thread (to its fixed point) and waits for it.
    func barrier() {
        passDone.lock()
        passRequested += 1
        let wanted = passRequested
        passDone.unlock()
        worker.wake()
        passDone.lock()
        while passCompleted < wanted { passDone.wait() }
        passDone.unlock()
    }
}

/// Names queues in messages.
private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func next() -> Int {
        lock.lock()
        defer { lock.unlock() }
        value += 1
        return value
    }
}
