import Dispatch
import Foundation
import SonoraCore
import SonoraDSP
import SonoraFile
import SonoraUnits

/// Core Audio's C-convention input callback (AudioQueueInputCallback): user data, the queue and
/// the buffer as unretained pointers (`AudioInputQueue.from`, `AudioQueueBuffer.from`), the
/// start time in sample frames, and the packet descriptions (count, and a pointer to that many
/// `AudioStreamPacketDescription`s — a Swift struct, so untyped here; 0 and nil for
/// constant-size packets), valid during the call.
public typealias AudioQueueInputCallback = @convention(c) (
    UnsafeMutableRawPointer?, UnsafeMutableRawPointer, UnsafeMutableRawPointer, Int, Int, UnsafeRawPointer?
) -> Void

/// An input (recording) audio queue (AudioQueueNewInput): the program enqueues empty buffers;
/// the queue fills each with packets in `format` — linear PCM, or IMA4 / ALAC encoded on the
/// queue's thread — and hands it back through the callback with the sample time of its first
/// frame and its packet descriptions (variable-size packets); the program writes it out and
/// re-enqueues it.
///
/// A sibling of the output `AudioQueue`, not a mode of it: the two share buffers, error codes
/// and the realtime rules, but their data flows the other way (a capture side writes a ring the
/// queue's thread encodes from, where the output queue decodes into a ring its render side
/// reads), and the callbacks differ (start time and descriptions come with a filled buffer).
///
/// Threads: the program's (the calls here), the queue's (a `Worker`: encoding, callbacks) and
/// the capture side (`capturer`, realtime). Offline, `offlineCapture` feeds frames on the
/// caller's thread and brings the queue's thread to a fixed point around each slice, so what
/// the callback sees depends only on the frames and buffers given.
public final class AudioInputQueue: @unchecked Sendable {
    /// The callback: the queue, the filled buffer, the sample time of its first frame (the
    /// input's sample time of the first frame recorded, plus the frames delivered since: a
    /// pause's gap is not counted), and its packet descriptions (empty for constant-size packets).
    public typealias Callback = (AudioInputQueue, AudioQueueBuffer, Int, [AudioStreamPacketDescription]) -> Void

    /// The queue's name in messages ("input queue 2 (alac 44100 Hz)").
    public let name: String
    /// The format the queue records in (kAudioQueueProperty_StreamDescription).
    public let format: StreamFormat
    /// The realtime side: an input calls `capturer.capture(_:)` with each period's frames.
    public let capturer: AudioInputQueueCapturer

    let callback: Callback
    let callbackContext: AudioQueue.CallbackContext
    /// Interleaved Float32 at the stream's rate and channels → `format` (nil: the same).
    let converter: AudioConverter?
    let captureFormat: StreamFormat
    var worker: Worker!

    // Program-side state, guarded by `lock` (never held across a callback or an encode).
    let lock = NSLock()
    var queued: [AudioQueueBuffer] = []
    var buffers: [ObjectIdentifier: AudioQueueBuffer] = [:]
    var disposed = false
    var running = false
    var paused = false
    /// The audio session governing the queue (the process's, from its creation).
    let session: AudioSession
    var drainRequested = false
    var stopAfterDrain = false
    /// A deferred stop (from the callback): IsRunning's listener fires once the drain is done.
    var announcesStop = false
    var discardRequested = false
    var meteringEnabled = false
    var latestLevels: [AudioQueueLevel]
    /// Each channel's highest peak since metering was turned on (`levelMeterPeakHold`).
    var heldPeaks: [Float] = []
    var encoderError: AudioError?
    /// The encoder's delay and last packet's padding, for the stream the last stop or flush ended.
    var lastPrimeInfo = AudioConverterPrimeInfo()
    var callbackThread: pthread_t?
    var listeners = QueueListeners<AudioInputQueue>()
    /// The worker's job ring has one producer: threads announcing changes take turns.
    let notifyLock = NSLock()
    /// The I/O unit a live queue records from (`setInputUnit`), and its input callback.
    var inputUnit: IOUnit?
    /// Watches `inputUnit`'s device while the queue records (AudioInputQueue+UnitWatch).
    var unitWatcher: DispatchSourceTimer?
    /// Why the queue stopped by itself (its device went away); cleared by a start.
    var stopReasonValue: AudioError?
    var inputTarget: QueueCaptureTarget?

    // Queue-thread state.
    var takenFrames = 0
    var pendingBytes: [UInt8] = []
    var pendingPackets = AudioConverterPackets()
    var pendingPacketIndex = 0
    var current: AudioQueueBuffer?
    var currentDescriptions: [AudioStreamPacketDescription] = []
    var currentStart = 0
    /// Frames in the packets handed to buffers so far (the next buffer's start time).
    var deliveredFrames = 0
    /// `takenFrames` when the current encoded stream began.
    var streamStartFrames = 0

    let passDone = NSCondition()
    var passRequested = 0
    var passCompleted = 0

    private static let counter = QueueNameCounter()

    /// A new input queue recording in `format` (linear PCM, IMA4 or ALAC), calling `callback`
    /// with each filled buffer. `ringFrames` is the ring between capture side and encoder.
    public init(
        format: StreamFormat, ringFrames: Int = 16384, callbackOn context: AudioQueue.CallbackContext = .queueThread,
        callback: @escaping Callback
    ) throws(AudioError) {
        name = "input queue \(Self.counter.next()) (\(format.formatID) \(Int(format.sampleRate)) Hz)"
        session = AudioSession.current
        captureFormat = try Self.floatForm(of: format, name: name)
        guard ringFrames >= 64 && ringFrames <= 1 << 20 else {
            throw AudioError(.queueInvalidParameter, "AudioInputQueue.init: \(name): ring of \(ringFrames) frames is outside 64…1048576")
        }
        let channels = Int(format.channelsPerFrame)
        converter = format == captureFormat ? nil : try Self.converter(from: captureFormat, to: format, name: name, codec: "encoder")
        self.format = format
        callbackContext = context
        self.callback = callback
        latestLevels = Array(repeating: AudioQueueLevel(average: 0, peak: 0), count: channels)
        capturer = try AudioInputQueueCapturer(channelCount: channels, sampleRate: format.sampleRate, ringFrames: ringFrames)
        worker = try Worker(
            name: "sonora-aqinput",
            perform: { [unowned(unsafe) self] job in self.fire(AudioQueue.Property(rawValue: job.tag)) },
            afterJobs: { [unowned(unsafe) self] in self.serve() })
        try worker.start()
        capturer.worker = Unmanaged.passUnretained(worker)
        session.register(self, kind: .inputQueue)
    }

    /// Whether the queue records now (running, not paused): what an interruption pauses.
    var isRecordingForSession: Bool { (try? withLock { running && !paused }) ?? false }

    /// As `init(format:ringFrames:callbackOn:callback:)` with Core Audio's C callback and its user data.
    public convenience init(
        format: StreamFormat, callbackOn context: AudioQueue.CallbackContext = .queueThread,
        callback: AudioQueueInputCallback, userData: UnsafeMutableRawPointer?
    ) throws(AudioError) {
        nonisolated(unsafe) let userData = userData
        try self.init(format: format, callbackOn: context) { queue, buffer, startTime, descriptions in
            descriptions.withUnsafeBufferPointer {
                callback(userData, queue.opaque, buffer.opaque, startTime, $0.count, $0.count > 0 ? UnsafeRawPointer($0.baseAddress) : nil)
            }
        }
    }

    deinit {
        unitWatcher?.cancel()
        worker.stop()
    }

    /// The queue as an opaque pointer, for C-convention callbacks (not retained).
    public var opaque: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    /// The queue behind a pointer from `opaque`.
    public static func from(_ pointer: UnsafeMutableRawPointer) -> AudioInputQueue {
        Unmanaged<AudioInputQueue>.fromOpaque(pointer).takeUnretainedValue()
    }

    // MARK: Errors

    /// Throws once the queue is disposed of (call with `lock` held).
    func requireOpen(_ call: String) throws(AudioError) {
        if disposed { throw error(.queueInvalidated, call, "the queue has been disposed of") }
    }

    func push(_ command: CaptureCommand) {
        while !capturer.commands.push(command) { usleep(100) }
    }

    // MARK: Buffers

    /// A new buffer of `byteCapacity` bytes; `packetDescriptionCapacity` > 0 for formats with
    /// variable-size packets (ALAC), where the queue describes each packet it writes.
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

    /// Gives the queue an empty buffer to fill (AudioQueueEnqueueBuffer on an input queue).
    public func enqueue(_ buffer: AudioQueueBuffer) throws(AudioError) {
        let call = "enqueue"
        try withLock { () throws(AudioError) in
            try requireOpen(call)
            guard buffer.owner == ObjectIdentifier(self), buffer.state != .freed, buffers[ObjectIdentifier(buffer)] != nil else {
                throw error(.queueInvalidBuffer, call, buffer.state == .freed ? "the buffer was freed" : "the buffer belongs to another queue")
            }
            guard buffer.state != .enqueued else { throw error(.queueBufferEnqueuedTwice, call, "the buffer is already in the queue") }
            if format.bytesPerPacket == 0 && buffer.packetDescriptionCapacity == 0 {
                throw error(.queueInvalidBuffer, call, "\(format.formatID) has variable-size packets: allocate the buffer with a packet description capacity")
            }
            let smallest = format.isLinearPCM ? Int(format.bytesPerFrame) : Int(format.bytesPerPacket)
            guard buffer.byteCapacity >= smallest else {
                throw error(.queueInvalidBuffer, call, "\(buffer.byteCapacity) bytes cannot hold one \(smallest)-byte packet")
            }
            buffer.byteSize = 0
            buffer.state = .enqueued
            queued.append(buffer)
        }
        worker.wake()
    }

    // MARK: Control

    /// Starts (or resumes after `pause`) recording (AudioQueueStart); `deviceSampleTime` is the
    /// input's sample time of the first frame to keep (offline: frames given to `offlineCapture`
    /// since the queue was made; live: the I/O unit's input time stamps), nil for now.
    public func start(atDeviceSampleTime deviceSampleTime: Int? = nil) throws(AudioError) {
        if let deviceSampleTime, deviceSampleTime < 0 {
            throw error(.queueInvalidParameter, "start", "start time \(deviceSampleTime) is negative")
        }
        try start(.start(at: deviceSampleTime ?? -1))
    }

    /// Starts (or resumes) recording at a host time (AudioQueueStart with a host time stamp):
    /// the first frame kept is the one the input captured at `hostTime`, found from the host
    /// times the I/O unit stamps its input with (nothing is kept until a slice says).
    public func start(atHostTime hostTime: HostTime) throws(AudioError) {
        guard hostTime.rawValue > 0 else { throw error(.queueInvalidParameter, "start", "host time 0 is no time") }
        try start(.startAtHost(hostTime.rawValue))
    }

    private func start(_ command: CaptureCommand) throws(AudioError) {
        let wasRunning = try withLock { () throws(AudioError) -> Bool in
            try requireOpen("start")
            defer {
                running = true
                paused = false
                stopReasonValue = nil
            }
            return running && !paused
        }
        push(command)
        if !wasRunning { notify(.isRunning) }
        // Registered as a user even when a player on the same unit started it already.
        if let unit = try withLock({ () throws(AudioError) in inputUnit }) {
            do throws(AudioError) {
                try IOUnitUsers.shared.start(unit, by: self)
            } catch {
                _ = try? withLock { running = false }
                push(.stop)
                notify(.isRunning)
                throw self.error(.queueCannotStart, "start", "\(unit.name) did not start: \(error.message)")
            }
        }
        watchInputUnit()
    }

    /// Stops capturing, keeping what is captured and queued (AudioQueuePause); `start` resumes.
    public func pause() throws(AudioError) {
        try withLock { () throws(AudioError) in
            try requireOpen("pause")
            guard running else { throw error(.queueInvalidRunState, "pause", "the queue is not running") }
            paused = true
        }
        push(.stop)
        if let unit = (try? withLock { inputUnit }) ?? nil { IOUnitUsers.shared.stop(unit, by: self) }
    }

    /// Stops (AudioQueueStop). Immediately: capture stops and frames not yet in a buffer are
    /// dropped; the buffer being filled comes back with what it holds. Otherwise: everything
    /// captured is encoded (the encoder drained) and delivered first. Either way the callbacks
    /// are done when this returns, and IsRunning goes false with its listener.
    ///
    /// From inside the callback (the queue's thread, which cannot wait for itself): `immediate`
    /// throws 'invalid run state', as on the output queue; otherwise the stop is deferred, as
    /// Core Audio's asynchronous stop: capture stops now, the rest is delivered after the
    /// callback returns, then IsRunning goes false with its listener.
    public func stop(immediate: Bool) throws(AudioError) {
        let call = "stop"
        let insideCallback = try withLock { () throws(AudioError) -> Bool in
            try requireOpen(call)
            guard let thread = callbackThread, pthread_equal(thread, pthread_self()) != 0 else { return false }
            if immediate {
                throw error(.queueInvalidRunState, call, "stop(immediate: true) cannot wait for the queue's callback from inside that callback; use stop(immediate: false)")
            }
            return true
        }
        push(.stop)
        stopWatchingInputUnit()
        if let unit = (try? withLock { inputUnit }) ?? nil { IOUnitUsers.shared.stop(unit, by: self) }
        if insideCallback {
            // The device is stopped; the queue's thread drains the ring after this callback.
            try withLock { () throws(AudioError) in
                running = false
                paused = false
                drainRequested = true
                stopAfterDrain = true
                announcesStop = true
            }
            worker.wake()
            return
        }
        barrier()  // the capture side's last frames are in the ring (the device is stopped)
        let wasRunning = try withLock { () throws(AudioError) -> Bool in
            defer {
                running = false
                paused = false
                if immediate { discardRequested = true }
                drainRequested = true
                stopAfterDrain = true
            }
            return running
        }
        barrier()
        if wasRunning { notify(.isRunning) }
        try throwEncoderError(call)
    }

    /// Encodes everything captured, drains the encoder and delivers the buffer being filled
    /// (AudioQueueFlush); a running queue goes on recording into the next buffers.
    public func flush() throws(AudioError) {
        try withLock { () throws(AudioError) in
            try requireOpen("flush")
            drainRequested = true
        }
        barrier()
        try throwEncoderError("flush")
    }

    /// Disposes of the queue (AudioQueueDispose): capture stops, buffers are freed, calls fail
    /// afterwards. `immediate: false` first stops as `stop(immediate: false)` does: what was
    /// captured is encoded and every buffer in flight is handed back through the callback.
    public func dispose(immediate: Bool) throws(AudioError) {
        if !immediate {
            let live = try withLock { () throws(AudioError) -> Bool in
                try requireOpen("dispose")
                return running || current != nil || capturer.ring.approximateFillLevel > 0
            }
            if live { try stop(immediate: false) }
        }
        try dispose()
    }

    /// Disposes of the queue at once (`dispose(immediate: true)`): what is captured but not
    /// delivered is dropped, the buffer being filled comes back with what it holds.
    public func dispose() throws(AudioError) {
        stopWatchingInputUnit()
        let wasRunning = try withLock { () throws(AudioError) -> Bool in
            try requireOpen("dispose")
            if let thread = callbackThread, pthread_equal(thread, pthread_self()) != 0 {
                throw error(.queueInvalidRunState, "dispose", "dispose cannot wait for the queue's callback from inside that callback")
            }
            defer {
                running = false
                discardRequested = true
            }
            return running
        }
        push(.stop)
        if let unit = try withLock({ () throws(AudioError) in inputUnit }) {
            IOUnitUsers.shared.release(.capture, of: unit, by: self) { unit throws(AudioError) in try unit.setInputCallback(nil) }
        }
        barrier()
        try withLock { () throws(AudioError) in
            disposed = true
            inputUnit = nil
            inputTarget = nil
            for buffer in buffers.values { buffer.state = .freed }
            buffers.removeAll()
            queued.removeAll()
        }
        if wasRunning { fire(.isRunning) }  // the queue's thread is about to stop: on this one
        worker.stop()
    }

    /// Whether the queue is recording (kAudioQueueProperty_IsRunning).
    public var isRunning: Bool { (try? withLock { running }) ?? false }

    private func throwEncoderError(_ call: String) throws(AudioError) {
        if let failure = try withLock({ () throws(AudioError) -> AudioError? in
            defer { encoderError = nil }
            return encoderError
        }) {
            throw error(failure.code, call, "encoding failed: \(failure.message)")
        }
    }

    // MARK: Properties

    /// kAudioQueueProperty_MagicCookie: the encoder's cookie, for the file the packets go to (nil for PCM and IMA4).
    public var magicCookie: [UInt8]? {
        get throws(AudioError) {
            guard let converter, !format.isLinearPCM, format.formatID != .appleIMA4 else { return nil }
            do {
                return try converter.compressionMagicCookie
            } catch {
                throw self.error(.queueInvalidProperty, "magicCookie", error.message)
            }
        }
    }

    /// kAudioConverterPrimeInfo of the queue's encoder for the stream the last `stop` or `flush`
    /// ended: frames of delay before the capture (leading) and of padding after it in the last
    /// packet (trailing), for the file's packet table. Zero for PCM.
    public var encoderPrimeInfo: AudioConverterPrimeInfo { (try? withLock { lastPrimeInfo }) ?? AudioConverterPrimeInfo() }

    /// kAudioQueueProperty_EnableLevelMetering.
    public var isLevelMeteringEnabled: Bool { (try? withLock { meteringEnabled }) ?? false }

    public func setLevelMeteringEnabled(_ enabled: Bool) throws(AudioError) {
        let changed = try withLock { () throws(AudioError) -> Bool in
            try requireOpen("setLevelMeteringEnabled")
            defer { meteringEnabled = enabled }
            if enabled && !meteringEnabled { heldPeaks = Array(repeating: 0, count: latestLevels.count) }
            return meteringEnabled != enabled
        }
        push(.metering(enabled))
        if changed { notify(.enableLevelMetering) }
    }

    /// kAudioQueueProperty_CurrentLevelMeterDB: the same in dBFS.
    public func currentLevelMeterDB() throws(AudioError) -> [AudioQueueLevel] {
        try currentLevelMeter().map {
            AudioQueueLevel(average: Decibels.fromLinear($0.average), peak: Decibels.fromLinear($0.peak))
        }
    }

    /// kAudioQueueProperty_CurrentLevelMeter: each channel's level over the last captured slice.
    public func currentLevelMeter() throws(AudioError) -> [AudioQueueLevel] {
        try meterReading("currentLevelMeter") { $0.latestLevels }
    }

    /// Each channel's highest peak (linear) since metering was turned on, over every captured
    /// slice (not only those `currentLevelMeter` was asked about): a recording's peak.
    public func levelMeterPeakHold() throws(AudioError) -> [Float] {
        try meterReading("levelMeterPeakHold") { $0.heldPeaks }
    }

    /// `value` of the meters brought up to date, under the lock, while metering is on.
    private func meterReading<Value>(_ call: String, _ value: (AudioInputQueue) -> Value) throws(AudioError) -> Value {
        try withLock { () throws(AudioError) -> Value in
            try requireOpen(call)
            guard meteringEnabled else { throw error(.queueInvalidProperty, call, "level metering is off (setLevelMeteringEnabled(true))") }
            drainMeterReadings()
            return value(self)
        }
    }

    /// The capture side's readings into the latest levels and the held peaks (call with `lock` held).
    private func drainMeterReadings() {
        while let reading = capturer.meters.pop() {
            guard reading.channel < latestLevels.count else { continue }
            latestLevels[reading.channel] = AudioQueueLevel(average: reading.average, peak: reading.peak)
            if reading.channel < heldPeaks.count { heldPeaks[reading.channel] = max(heldPeaks[reading.channel], reading.peak) }
        }
    }

    // MARK: Offline capture

    /// Feeds `frames` (interleaved Float32, the queue's channel count) to the capture side on
    /// this thread, in slices of at most `sliceFrames`, with the queue's thread at a fixed point
    /// around each: deterministic. Frames beyond the ring's room (no buffers enqueued) are
    /// dropped and counted in `capturer.overruns`, as a device would drop them.
    public func offlineCapture(frames samples: [Float], sliceFrames: Int = 512) throws(AudioError) {
        let call = "offlineCapture"
        let channels = capturer.channelCount
        guard samples.count % channels == 0 else {
            throw error(.queueInvalidParameter, call, "\(samples.count) samples is not a whole number of \(channels)-channel frames")
        }
        guard sliceFrames > 0 && sliceFrames <= capturer.ring.capacity else {
            throw error(.queueInvalidParameter, call, "slices of \(sliceFrames) frames is outside 1…\(capturer.ring.capacity)")
        }
        try withLock { () throws(AudioError) in try requireOpen(call) }
        let storage = try OwnedAudioBufferList(channelCount: channels, frameCapacity: sliceFrames)
        let total = samples.count / channels
        var offset = 0
        while offset < total {
            let count = min(sliceFrames, total - offset)
            let list = storage.list(frameCount: count)
            for channel in 0..<channels {
                let destination = list.samples(channel)
                for frame in 0..<count { destination[frame] = samples[(offset + frame) * channels + channel] }
            }
            barrier()
            capturer.capture(list)
            barrier()
            offset += count
        }
        try throwEncoderError(call)
    }

    /// Runs one pass of the queue's thread to its fixed point and waits for it.
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
