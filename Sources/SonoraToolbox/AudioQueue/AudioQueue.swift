import Dispatch
import Foundation
import SonoraCore
import SonoraDSP
import SonoraFile
import SonoraUnits
import Synchronization

/// Core Audio's C-convention output callback: (user data, queue, buffer), the queue and the
/// buffer as unretained pointers (`AudioQueue.from`, `AudioQueueBuffer.from`).
public typealias AudioQueueOutputCallback = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer, UnsafeMutableRawPointer) -> Void

/// An output audio queue (AudioQueueNewOutput): the program enqueues buffers of packets in
/// `format`; the queue decodes them on its own thread into a ring its render side plays
/// from, and hands each buffer back through the callback once it is done with it.
///
/// Threads: the program's (any; the calls here), the queue's (a `Worker`: decoding, callbacks
/// unless a `DispatchQueue` is given, listeners — on a shared output, decoding and callbacks
/// run on the output's feeder thread instead: AudioQueue+Feeder), and the render side
/// (`renderer`, realtime).
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
    /// Paused by `pause` (until the next start): a running queue that does not play.
    var paused = false
    /// The audio session governing the queue (the process's, from its creation).
    let session: AudioSession
    /// Whether the queue's thread takes buffers (after prime or start, until a stop).
    var decoding = false
    var stopAfterQueued = false
    var resetRequested = false
    var resetting = false
    var offlineFormat: StreamFormat?
    /// The I/O unit a live queue plays through (`setOutputUnit`), and its render callback.
    var outputUnit: IOUnit?
    var outputTarget: QueueRenderTarget?
    /// Watches the device of `outputUnit` while the queue plays on it (AudioQueue+UnitWatch).
    var unitWatcher: DispatchSourceTimer?
    /// The shared output (hidden mixer) a live queue plays through, and why it last stopped on its own.
    var attachment: OutputAttachment?
    /// The shared output's feeder thread refilling this queue, if any (AudioQueue+Feeder).
    var feeder: QueueFeeder?
    var stopReasonValue: AudioError?
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
    /// Whether a ring with 16-bit storage holds 16-bit frames when it can (AudioQueue+Int16Ring);
    /// tests turn it off to compare with the float ring. Set before the queue decodes.
    let prefersInt16Ring = Atomic<Bool>(true)
    var channelLayoutValue: AudioChannelLayout?
    /// Play rate (kAudioQueueParam_PlayRate) and whether it applies (kAudioQueueProperty_EnableTimePitch).
    var playRateValue: Float = 1
    var timePitchEnabled = false
    /// Frames the current offline slice asks for (the rate stage converts at least that far ahead).
    var offlineSliceFrames = 0
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
    /// A linear PCM buffer's bytes (in the buffer itself, held by `current`) converted straight into the ring
    /// from frame `pendingPCMFrame` to `pendingPCMEnd` (AudioQueue+DirectPCM).
    var pendingPCM: UnsafeRawPointer?
    var pendingPCMFrame = 0
    var pendingPCMEnd = 0
    var decodedTotal = 0
    var writtenTotal = 0
    var streamBase = 0
    var endSent = false
    /// The stream frame the render side drops the ring to after a reset; until it has, the
    /// worker may write into the ring's reserved quarter.
    var discardThrough = 0
    /// Play-rate conversion between decoder and ring, while time-pitch is enabled.
    var rateStage: QueueRateStage?
    /// Stop after queued: the end waits for the rate stage to feed its last frames.
    var endDraining = false
    /// The render side's largest step between two passes (live), for the rate stage's lookahead.
    var consumedSeen = 0
    var largestRenderStep = 0

    // Barrier between a program call and the queue's thread.
    let passDone = NSCondition()
    /// Held by the queue's thread while it runs passes, and by a control call that replaces
    /// what the passes read (the renderer, in `setDecodeBufferSizeFrames`): a barrier alone
    /// does not keep a pass from starting right after it (a wake-up already pending).
    let passLock = NSLock()
    /// Held while the render side is replaced (`setDecodeBufferSizeFrames`, inside `passLock`)
    /// and while an output target is made from it and published (`setOutput`,
    /// `setCurrentDevice`, `setOutputUnit`), so that calls on two threads cannot leave the
    /// output mixing a replaced renderer, or the replacement without the output's feeder. Not
    /// `passLock`: a buffer callback (inside a pass) may join an output; never held while
    /// waiting for a pass or calling the program.
    let rendererLock = NSLock()
    var passRequested = 0
    var passCompleted = 0

    enum Lifecycle { case open, disposalPending, invalidated }

    /// An entry in the queue: a buffer with what `enqueue` said about it, or a flush marker.
    struct QueuedBuffer {
        var buffer: AudioQueueBuffer?
        /// The buffer's bytes as enqueued; empty for a linear PCM buffer read in place
        /// (`byteCount` of them at `buffer.audioData`, which the program leaves alone while the
        /// queue holds the buffer): see `contents`.
        var bytes: [UInt8]
        var byteCount = 0
        var descriptions: [AudioStreamPacketDescription]
        var trimAtStart: Int
        var trimAtEnd: Int
        var startTime: Int?
        var events: [AudioQueueParameterEvent]
    }

    private static let counter = QueueNameCounter()

    /// A new output queue for buffers in `format` (linear PCM, IMA4, or a format the file
    /// layer decodes: AAC, MP3, ALAC, FLAC, Opus), calling `callback` with each buffer the
    /// queue is done with. `decodeBufferFrames` is the ring between decoder and render side.
    public init(
        format: StreamFormat, callbackOn context: CallbackContext = .queueThread,
        callback: @escaping (AudioQueue, AudioQueueBuffer) -> Void
    ) throws(AudioError) {
        let number = Self.counter.next()
        session = AudioSession.current
        name = "queue \(number) (\(format.formatID) \(Int(format.sampleRate)) Hz)"
        let channels = Int(format.channelsPerFrame)
        decodedFormat = try Self.floatForm(of: format, name: name)
        converter = try Self.converter(from: format, to: decodedFormat, name: name, codec: "decoder")
        self.format = format
        callbackContext = context
        self.callback = callback
        latestLevels = Array(repeating: AudioQueueLevel(average: 0, peak: 0), count: channels)
        renderer = try AudioQueueRenderer(channelCount: channels, ringFrames: decodeBufferFrames, int16Storage: Self.int16RingFormat(format))
        worker = try Worker(
            name: "sonora-aqueue",
            perform: { [unowned(unsafe) self] job in self.fire(Property(rawValue: job.tag)) },
            afterJobs: { [unowned(unsafe) self] in self.serve() })
        try worker.start()
        renderer.worker = Unmanaged.passUnretained(worker)
        renderer.wakesWorker.store(true, ordering: .relaxed)
        // As an AudioQueueRef, the queue lives until `dispose`: its thread must never drop the
        // last reference (the queue's deinit would then run on the thread it has to join).
        keepAlive = Unmanaged.passRetained(self)
        session.register(self, kind: .queue)
    }

    /// Whether the queue plays now (running, not paused): what an interruption pauses.
    var isPlayingForSession: Bool { (try? withLock { running && !paused }) ?? false }

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
        unitWatcher?.cancel()
        leaveOutput()
        worker.stop()
    }

    /// The queue as an opaque pointer, for C-convention callbacks (not retained).
    public var opaque: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    /// The queue behind a pointer from `opaque`.
    public static func from(_ pointer: UnsafeMutableRawPointer) -> AudioQueue {
        Unmanaged<AudioQueue>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// Offline render and the render side's replacement take turns under this lock.
    let offlineRenderLock = NSLock()
    /// A zero-frame output for `applyOfflineCommands`.
    lazy var idleOutput: OwnedAudioBufferList = try! OwnedAudioBufferList(channelCount: renderer.channelCount, frameCapacity: 1)

    // MARK: Errors

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

    func push(_ command: RenderCommand) {
        renderLock.lock()
        defer { renderLock.unlock() }
        // 256 slots; the program side sends a handful per call, the render side drains each slice.
        while !renderer.send(command) { usleep(100) }
    }

    func pushEvent(_ event: StampedEvent) {
        while !renderer.send(event) { usleep(100) }
    }
}
