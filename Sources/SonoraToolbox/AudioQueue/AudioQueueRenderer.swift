import SonoraCore
import SonoraDSP
import Synchronization

/// The realtime side of an output queue: reads decoded frames from the queue's
/// `SampleRing` and applies volume, pan and metering; nothing else.
///
/// Why a render object the toolbox owns, not a unit in SonoraUnits: the queue's offline
/// render drives it directly on the caller's thread, and a live output (the I/O unit's
/// render callback, or a mixer input) calls the same `render(_:)`; the unit wrapper can be
/// added without changing it. Control reaches it only through lock-free `MessageQueue`s
/// (`commands`; `events`, stamped with the stream frame where they apply) and results leave
/// through atomics and a meter queue. `render` never allocates, locks, logs or blocks.
public final class AudioQueueRenderer: @unchecked Sendable {
    /// The render side's per-slice state, packed (`RenderHot`): first, so that the one line of
    /// this object a slice reads holds it, the ring and the 16-bit storage.
    private let hot: UnsafeMutableRawPointer
    let ring: SampleRing
    let channelCount: Int
    /// The ring's frames as 16-bit integers, interleaved (`channelCount` a frame, at the ring's
    /// frame indices, under the ring's cursors), for a queue of 16-bit integer PCM
    /// (`AudioQueue.int16RingFormat`); nil for any other. Used while `holdsInt16` is set: then
    /// the ring's float channels are not, the producer writes the program's 16-bit frames as
    /// they are (half the bytes of floats) and the render side converts them to float as it reads
    /// (`Float(sample) * (1 / 32768)`, exactly what decoding them to float in the ring gives).
    let int16Frames: UnsafeMutablePointer<Int16>?
    /// The fill (frames) at or below which a slice wakes the queue's thread: half the ring.
    /// The thread fills the ring to three quarters (the last quarter stays free for a
    /// reset's new frames), so it refills a quarter ring at a time while half a ring still
    /// plays (at the default 8192 frames and 48 kHz: a wake-up every 2048 frames, ~43 ms,
    /// with ~85 ms to spare). A decoded buffer goes back to the program once all its frames
    /// are in the ring, so a buffer's callback comes up to a quarter ring later than with a
    /// wake-up per slice. Below that fill (a ring the program keeps less than half full, the
    /// rate stage's lookahead) every slice wakes it, as before.
    let wakeLevel: Int
    let commands: MessageQueue<RenderCommand>
    let events: MessageQueue<StampedEvent>
    let meters: MessageQueue<MeterReading>

    /// The queue's thread, woken after frames were read so it refills the ring; only when the
    /// render side runs on its own clock (a device), not offline, where the caller's thread
    /// brings the queue's thread to a fixed point around each slice instead.
    /// Unmanaged, as `feeder`: whoever sets it keeps the worker alive while it may be woken.
    var worker: Unmanaged<Worker>?
    let wakesWorker = Atomic<Bool>(false)
    /// The output's feeder thread, woken instead of the queue's own while `wakesFeeder` is
    /// set (QueueFeeder: one thread refills every queue on an output). Set before the flag.
    /// Unmanaged, not `unowned(unsafe)`: a call through an `unowned(unsafe)` optional loads a
    /// strong reference, a retain and a release on the render thread every refill wake-up
    /// (`sonora-bench refcounts` counted them); `_withUnsafeGuaranteedRef` calls without.
    var feeder: Unmanaged<QueueFeeder>?
    /// Whether to wake `feeder` (set after it): in the packed state (`RenderHot`).
    var wakesFeeder: UnsafeMutablePointer<Atomic<Bool>> { RenderHot.wakesFeeder(hot) }

    /// Which storage holds the frames now (the producer's choice, AudioQueue+Int16Ring). It
    /// changes only while the ring holds no unread frame, before the producer writes more; the
    /// render side reads it after the cursors (acquiring) that show it frames, so it always
    /// reads frames in the form they were written.
    var holdsInt16: UnsafeMutablePointer<Atomic<Bool>> { RenderHot.holdsInt16(hot) }

    // Published to the control side (the first two in the packed state: stored every slice).
    private var playedFrames: UnsafeMutablePointer<Atomic<Int>> { RenderHot.playedFrames(hot) }
    private var timelineFrames: UnsafeMutablePointer<Atomic<Int>> { RenderHot.timelineFrames(hot) }
    private let underrunCount = Atomic<Int>(0)
    private let discontinuity = Atomic<Bool>(false)
    private let endReached = Atomic<Bool>(false)
    private let endSampleTime = Atomic<Int>(0)
    /// The device sample time of the queue's sample time 0 (set at each start; pauses move it).
    private let origin = Atomic<Int>(0)
    private let startedOnce = Atomic<Bool>(false)

    /// Commands and events pushed so far (`send`): the render side pops a queue only when its
    /// count moved. With many queues on one device, popping two empty queues per slice read
    /// two cursor lines of each queue that were cache misses (perf: more than the mixing).
    private var commandsSent: UnsafeMutablePointer<Atomic<Int>> { RenderHot.commandsSent(hot) }
    private var eventsSent: UnsafeMutablePointer<Atomic<Int>> { RenderHot.eventsSent(hot) }

    // Render-thread state (touched only inside `render`), in the packed state (`RenderHot`).
    private var state: RunState {
        get { RenderHot.state(hot).pointee.state }
        set { RenderHot.state(hot).pointee.state = newValue }
    }
    private var commandsSeen: Int {
        get { RenderHot.state(hot).pointee.commandsSeen }
        set { RenderHot.state(hot).pointee.commandsSeen = newValue }
    }
    private var eventsTaken: Int {
        get { RenderHot.state(hot).pointee.eventsTaken }
        set { RenderHot.state(hot).pointee.eventsTaken = newValue }
    }
    private var startDeviceTime: Int {
        get { RenderHot.state(hot).pointee.startDeviceTime }
        set { RenderHot.state(hot).pointee.startDeviceTime = newValue }
    }
    private var deviceTime: Int {
        get { RenderHot.state(hot).pointee.deviceTime }
        set { RenderHot.state(hot).pointee.deviceTime = newValue }
    }
    private var position: Int {
        get { RenderHot.state(hot).pointee.position }
        set { RenderHot.state(hot).pointee.position = newValue }
    }
    private var endOfStream: Int {
        get { RenderHot.state(hot).pointee.endOfStream }
        set { RenderHot.state(hot).pointee.endOfStream = newValue }
    }
    /// While draining: the device time at which the stream's last frame has left the device.
    private var drainEnd: Int {
        get { RenderHot.state(hot).pointee.drainEnd }
        set { RenderHot.state(hot).pointee.drainEnd = newValue }
    }
    private var heldEvent: StampedEvent? {
        get { RenderHot.state(hot).pointee.heldEvent }
        set { RenderHot.state(hot).pointee.heldEvent = newValue }
    }
    private var volume: LinearRamp {
        get { RenderHot.state(hot).pointee.volume }
        set { RenderHot.state(hot).pointee.volume = newValue }
    }
    private var leftGain: LinearRamp {
        get { RenderHot.state(hot).pointee.leftGain }
        set { RenderHot.state(hot).pointee.leftGain = newValue }
    }
    private var rightGain: LinearRamp {
        get { RenderHot.state(hot).pointee.rightGain }
        set { RenderHot.state(hot).pointee.rightGain = newValue }
    }
    private var metering: Bool {
        get { RenderHot.state(hot).pointee.metering }
        set { RenderHot.state(hot).pointee.metering = newValue }
    }

    /// `draining`: a stop-after-queued stream has ended on a live output; silence until the
    /// device has played what it holds, then `stopped` (the end reached).
    enum RunState { case stopped, running, paused, draining }

    init(channelCount: Int, ringFrames: Int, int16Storage: Bool = false) throws(AudioError) {
        hot = RenderHot.make()
        self.channelCount = channelCount
        // With 16-bit storage the float channels are used only if a rate stage comes: left
        // unwritten, their pages take no memory until then (nor do the 16-bit ones before use).
        ring = try SampleRing(channelCount: channelCount, capacity: ringFrames, zeroed: !int16Storage)
        wakeLevel = ring.capacity / 2
        if int16Storage {
            int16Frames = UnsafeMutablePointer<Int16>.allocate(capacity: ring.capacity * channelCount)
        } else {
            int16Frames = nil
        }
        commands = try MessageQueue(capacity: 256)
        events = try MessageQueue(capacity: 1024)
        meters = try MessageQueue(capacity: 1024)
    }

    deinit {
        int16Frames?.deallocate()
        RenderHot.free(hot)
    }

    /// Stream frames read from the ring so far (the worker's view of what has played).
    var consumedFrames: Int { playedFrames.pointee.load(ordering: .acquiring) }
    /// The queue's sample time (frames played since start, underrun silence included).
    var sampleTime: Int { timelineFrames.pointee.load(ordering: .relaxed) }
    /// Slices that found the ring empty while running.
    public var underruns: Int { underrunCount.load(ordering: .relaxed) }

    func takeDiscontinuity() -> Bool { discontinuity.exchange(false, ordering: .relaxed) }
    /// Marks the queue's time as discontinuous (the device was re-opened or dropped time).
    func markDiscontinuity() { discontinuity.store(true, ordering: .relaxed) }
    /// The device sample time at which the queue's sample time 0 played (nil before a start).
    var originDeviceTime: Int? {
        startedOnce.load(ordering: .acquiring) ? origin.load(ordering: .relaxed) : nil
    }
    /// Whether the render side reached the end of a stop-after-queued stream (cleared by reading);
    /// with the sample time at which it stopped.
    func takeEndReached() -> Int? {
        guard endReached.exchange(false, ordering: .acquiring) else { return nil }
        return endSampleTime.load(ordering: .relaxed)
    }

    /// Renders `output.frameCount` frames of the queue (silence while stopped, paused, before
    /// the start time, after the end and in an underrun). Realtime-safe. Offline (no device
    /// clock): device time is the frames rendered so far.
    public func render(_ output: AudioBufferList) {
        render(output, clock: nil)
    }

    /// As `render(_:)` on a live output: device time is `clock`'s (a start at a host time
    /// converts with it); a jump in it (an xrun's skipped frames, a re-opened device) while
    /// running marks the timeline discontinuous. Realtime-safe.
    func render(_ output: AudioBufferList, clock: RenderClock?) {
        _ = render(output, clock: clock, adding: false)
    }

    /// As a mixer source: adds the queue's frames to `mix` straight from the ring (gains applied
    /// to the ring's frames in place, before they are released), with no scratch copy — the
    /// sum is the same bit for bit. A mono queue goes to every channel; a queue's channels
    /// beyond the mix's are dropped. False (nothing rendered, nothing added) while metering,
    /// which measures the queue's own slice: the caller then renders into a scratch instead.
    /// Realtime-safe.
    /// `scratch` (at least the queue's channels): where frames held as 16-bit integers are
    /// converted to float before the gains, a piece at a time; the mixer's, one for all sources.
    func add(into mix: AudioBufferList, clock: RenderClock, scratch: AudioBufferList) -> Bool {
        render(mix, clock: clock, adding: true, scratch: scratch)
    }

    private func render(_ output: AudioBufferList, clock: RenderClock?, adding: Bool, scratch: AudioBufferList? = nil) -> Bool {
        let frames = output.frameCount
        if let clock {
            if state == .running && (clock.discontinuous || clock.sampleTime != deviceTime) {
                discontinuity.store(true, ordering: .relaxed)
            }
            deviceTime = clock.sampleTime
        }
        let sent = commandsSent.pointee.load(ordering: .acquiring)
        if sent != commandsSeen {
            commandsSeen = sent
            applyCommands(clock: clock)
        }
        if adding && metering { return false }
        var done = 0
        var ended = false
        if state == .draining && deviceTime >= drainEnd {
            // The device has played out the stream's last frame: now the end is reached.
            state = .stopped
            endReached.store(true, ordering: .releasing)
            ended = true
        }
        if state == .running && startDeviceTime > deviceTime {
            done = min(frames, startDeviceTime - deviceTime)
        }
        while done < frames && state == .running {
            if position >= endOfStream {
                endOfStream = .max
                endSampleTime.store(timelineFrames.pointee.load(ordering: .relaxed), ordering: .relaxed)
                if let clock, clock.latencyFrames > 0 {
                    // Live: the last frame is still in the device's buffer. Silence from here;
                    // the end is reached (IsRunning false, the unit stops) once it has left.
                    state = .draining
                    drainEnd = deviceTime + done + clock.latencyFrames
                } else {
                    state = .stopped
                    endReached.store(true, ordering: .releasing)
                    ended = true
                }
                break
            }
            var limit = min(frames - done, endOfStream - position)
            if let event = nextEvent() {
                if event.frame <= position {
                    apply(event)
                    heldEvent = nil
                    continue
                }
                limit = min(limit, event.frame - position)
            }
            let region = ring.readRegion(maxFrames: limit)
            let chunk = region.frameCount
            if chunk == 0 {
                // Underrun: the rest of the slice is silence, and the timeline says time was lost.
                underrunCount.wrappingAdd(1, ordering: .relaxed)
                discontinuity.store(true, ordering: .relaxed)
                timelineFrames.pointee.wrappingAdd(frames - done, ordering: .relaxed)
                if !adding { clear(output, from: done, count: frames - done) }
                done = frames
                break
            }
            if let int16Frames, holdsInt16.pointee.load(ordering: .relaxed) {
                // Read after the cursors' acquiring load that showed these frames (see `holdsInt16`).
                if adding, let scratch {
                    addInt16(int16Frames, region.first, to: output, at: done, scratch: scratch)
                    if region.second.frameCount > 0 {
                        addInt16(int16Frames, region.second, to: output, at: done + region.first.frameCount, scratch: scratch)
                    }
                } else {
                    convertInt16(int16Frames, region.first, into: output, at: done)
                    if region.second.frameCount > 0 {
                        convertInt16(int16Frames, region.second, into: output, at: done + region.first.frameCount)
                    }
                    applyGains(output, from: done, count: chunk)
                }
            } else if adding {
                applyGains(region.first, from: 0, count: region.first.frameCount)
                add(region.first, to: output, at: done)
                if region.second.frameCount > 0 {
                    applyGains(region.second, from: 0, count: region.second.frameCount)
                    add(region.second, to: output, at: done + region.first.frameCount)
                }
            } else {
                copy(region.first, to: output, at: done)
                if region.second.frameCount > 0 { copy(region.second, to: output, at: done + region.first.frameCount) }
                applyGains(output, from: done, count: chunk)
            }
            try? ring.commitRead(chunk)
            position += chunk
            playedFrames.pointee.store(position, ordering: .releasing)
            timelineFrames.pointee.wrappingAdd(chunk, ordering: .relaxed)
            done += chunk
        }
        if done < frames && !adding { clear(output, from: done, count: frames - done) }
        if metering && !adding { measure(output) }
        // The queue's thread has work worth a wake-up (a context switch each): the end reached
        // (IsRunning to announce), or a refill — frames were read and the ring is down to
        // `wakeLevel`. Waking after every slice cost more than the rendering itself. The fill
        // is asked without loading the producer's cursor while the consumer's copy of it shows
        // more than the level (perf, 64 players: that load, a miss every slice, was a third of
        // `render`'s samples).
        if ended || (done > 0 && !ring.readableFrames(exceed: wakeLevel)) {
            if wakesFeeder.pointee.load(ordering: .acquiring) {
                feeder?._withUnsafeGuaranteedRef { $0.wake() }
            } else if wakesWorker.load(ordering: .relaxed) {
                worker?._withUnsafeGuaranteedRef { $0.wake() }
            }
        }
        deviceTime += frames
        return true
    }

    // MARK: Prefetch (the mixer, ahead of a slice)

    /// The lines a slice reads before its frames, for the mixer's table (`AudioQueueMixer`,
    /// control side): this object's first (the packed state's and the ring's addresses), the
    /// packed state, the ring object, its consumer cursors and its channel table. Every one
    /// lives as long as the renderer. With many queues on a device each source's lines have
    /// left the cache since the last slice, and waiting for them one source after another was
    /// most of the I/O thread's time (perf, 64 players); loaded all at once, the misses overlap.
    var prefetchAddresses: [UInt] {
        let consumer = ring.consumerLines
        return [UInt(bitPattern: Unmanaged.passUnretained(self).toOpaque()),
                UInt(bitPattern: hot),
                UInt(bitPattern: Unmanaged.passUnretained(ring).toOpaque()),
                UInt(bitPattern: consumer.cursors),
                UInt(bitPattern: consumer.channels)]
    }

    /// Loads every cache line of the next `frames` frames the slice will read from the ring
    /// (each channel's), for the same reason; after the mixer loaded the lines of
    /// `prefetchAddresses`, so the cursors are already in the cache. Realtime-safe: loads only.
    @inline(__always)
    func touchFrames(_ frames: Int) -> UInt32 {
        guard state == .running else { return 0 }
        let region = ring.readRegion(maxFrames: frames)
        if let int16Frames, holdsInt16.pointee.load(ordering: .relaxed) {
            return touchInt16(int16Frames, region.first) ^ touchInt16(int16Frames, region.second)
        }
        return Self.touch(region.first) ^ Self.touch(region.second)
    }

    /// One load per 64-byte line of `part`'s frames in the 16-bit storage (and its last one).
    @inline(__always)
    private func touchInt16(_ storage: UnsafeMutablePointer<Int16>, _ part: AudioBufferList) -> UInt32 {
        let count = part.frameCount &* channelCount
        guard count > 0 else { return 0 }
        let samples = UnsafeRawPointer(storage + part.frameOffset &* channelCount)
        var sink: UInt32 = 0
        var offset = 0
        while offset < count {
            sink ^= UInt32(samples.load(fromByteOffset: offset &* 2, as: UInt16.self))
            offset &+= 32
        }
        return sink ^ UInt32(samples.load(fromByteOffset: (count &- 1) &* 2, as: UInt16.self))
    }

    /// One load per 64-byte line of each channel of `part` (and its last sample).
    @inline(__always)
    private static func touch(_ part: AudioBufferList) -> UInt32 {
        let count = part.frameCount
        guard count > 0 else { return 0 }
        var sink: UInt32 = 0
        for channel in 0..<part.channelCount {
            let samples = UnsafeRawPointer(part.samples(channel))
            var offset = 0
            while offset < count {
                sink ^= samples.load(fromByteOffset: offset &* 4, as: UInt32.self)
                offset &+= 16
            }
            sink ^= samples.load(fromByteOffset: (count &- 1) &* 4, as: UInt32.self)
        }
        return sink
    }

    /// `clock`: the live output's for the slice being rendered (nil offline).
    private func applyCommands(clock: RenderClock?) {
        while let command = commands.pop() {
            switch command {
            case .start(let at, let resetTimeline):
                if resetTimeline { resetTimelineNow() }
                startDeviceTime = at < 0 ? deviceTime : at
                begin()
            case .startAtHostTime(let hostTime, let resetTimeline):
                // Converted here, with this slice's time stamp, when the control side had no
                // clock reading yet (the device had not run): queues started before the
                // device's first cycle all convert with that cycle's stamp.
                if resetTimeline { resetTimelineNow() }
                if let clock {
                    startDeviceTime = clock.device._withUnsafeGuaranteedRef {
                        $0.renderSideStartSample(forHostTime: hostTime, clock: clock)
                    }
                } else {
                    startDeviceTime = deviceTime
                }
                begin()
            case .pause:
                if state == .running { state = .paused }
            case .stop:
                state = .stopped
                endOfStream = .max
            case .discard(let through, let written):
                // Drops what the worker wrote before a stop or reset: the ring's frames up to
                // stream frame `written`. Frames decoded but never written count as dropped
                // too: the worker writes on from stream frame `through`, and what it has
                // written since (after the old frames in the ring) stays.
                let drop = min(max(written - position, 0), ring.readableFrames)
                try? ring.commitRead(drop)
                position = max(position + drop, through)
                // An end mark sent before the reset (stop after queued, once the whole stream
                // was decoded into the ring) ends the stream that was dropped, not the one the
                // worker writes from `through`: kept, it lies at or before the new position and
                // the next slice would end the new stream at once, playing nothing. The worker
                // sends the new stream's end itself (its `endSent` is cleared with the reset).
                endOfStream = .max
                playedFrames.pointee.store(position, ordering: .releasing)
                while let event = nextEvent(), event.frame < through { heldEvent = nil }
            case .endOfStream(let frame):
                endOfStream = frame
            case .volume(let target, let rampFrames):
                volume.ramp(to: target, frames: rampFrames)
            case .pan(let left, let right, let rampFrames):
                leftGain.ramp(to: left, frames: rampFrames)
                rightGain.ramp(to: right, frames: rampFrames)
            case .metering(let on):
                metering = on
            }
        }
    }

    /// A start after a stop: a new timeline, from 0 and continuous (time lost before it —
    /// e.g. while a stop was still on its way here — is no loss of the new one).
    private func resetTimelineNow() {
        timelineFrames.pointee.store(0, ordering: .relaxed)
        discontinuity.store(false, ordering: .relaxed)
    }

    private func begin() {
        state = .running
        origin.store(max(startDeviceTime, deviceTime) - timelineFrames.pointee.load(ordering: .relaxed), ordering: .relaxed)
        startedOnce.store(true, ordering: .releasing)
    }

    private func nextEvent() -> StampedEvent? {
        if heldEvent == nil && eventsSent.pointee.load(ordering: .acquiring) != eventsTaken, let event = events.pop() {
            heldEvent = event
            eventsTaken &+= 1
        }
        return heldEvent
    }

    /// Sends a command to the render side (one producer at a time); false when the queue is full.
    func send(_ command: RenderCommand) -> Bool {
        guard commands.push(command) else { return false }
        commandsSent.pointee.wrappingAdd(1, ordering: .releasing)
        return true
    }

    /// Sends a stamped event to the render side (the queue's thread); false when the queue is full.
    func send(_ event: StampedEvent) -> Bool {
        guard events.push(event) else { return false }
        eventsSent.pointee.wrappingAdd(1, ordering: .releasing)
        return true
    }

    private func apply(_ event: StampedEvent) {
        switch event.kind {
        case .volume: volume.ramp(to: event.value, frames: event.rampFrames)
        case .left: leftGain.ramp(to: event.value, frames: event.rampFrames)
        case .right: rightGain.ramp(to: event.value, frames: event.rampFrames)
        }
    }

    /// `part`'s frames (a ring region: its frame offset and count) from the 16-bit storage into
    /// `output`'s float channels from frame `offset`, as the float ring holds them.
    private func convertInt16(_ storage: UnsafeMutablePointer<Int16>, _ part: AudioBufferList, into output: AudioBufferList, at offset: Int) {
        let count = part.frameCount
        guard count > 0 else { return }
        let source = UnsafeRawPointer(storage + part.frameOffset &* channelCount)
        if channelCount == 2 && output.channelCount >= 2 {
            AudioQueue.decodeInt16(source, channels: 2, into: output.frames(from: offset, count: count))
        } else if channelCount == 1 {
            AudioQueue.decodeInt16(source, channels: 1, into: output.frames(from: offset, count: count).channels(prefix: 1))
        } else {
            // A stereo queue on a mono output: its first channel (as `copy`).
            SampleConversion.decode(source, sample: .int16, bigEndian: false, stride: 2 * channelCount, into: output.samples(0) + offset, count: count)
        }
    }

    /// As the float ring's adding path (gains on the frames, then added to the mix), through
    /// `scratch`: `part`'s 16-bit frames converted a piece at a time, the gains applied there
    /// (the ramps step per frame, so pieces give the same values), then added at `offset`.
    private func addInt16(_ storage: UnsafeMutablePointer<Int16>, _ part: AudioBufferList, to mix: AudioBufferList, at offset: Int, scratch: AudioBufferList) {
        let capacity = scratch.frameCount
        guard capacity > 0 else { return }
        let list = scratch.channels(prefix: channelCount)
        var done = 0
        while done < part.frameCount {
            let count = min(capacity, part.frameCount - done)
            let piece = list.frames(from: 0, count: count)
            convertInt16(storage, part.frames(from: done, count: count), into: piece, at: 0)
            applyGains(piece, from: 0, count: count)
            add(piece, to: mix, at: offset + done)
            done += count
        }
    }

    private func copy(_ source: AudioBufferList, to output: AudioBufferList, at offset: Int) {
        for channel in 0..<min(channelCount, output.channelCount) {
            copySamples(from: UnsafePointer(source.samples(channel)), to: output.samples(channel) + offset, count: source.frameCount)
        }
    }

    /// Adds `source` (the queue's channels) to `mix` from frame `offset`: channel to channel, a
    /// mono queue to every channel, as `QueueRenderTarget.mix` adds its scratch.
    private func add(_ source: AudioBufferList, to mix: AudioBufferList, at offset: Int) {
        for channel in 0..<mix.channelCount {
            let from = channelCount == 1 ? 0 : channel
            guard from < channelCount else { break }
            Mixing.add(UnsafePointer(source.samples(from)), into: mix.samples(channel) + offset, count: source.frameCount, gain: 1)
        }
    }

    private func clear(_ output: AudioBufferList, from offset: Int, count: Int) {
        for channel in 0..<output.channelCount {
            (output.samples(channel) + offset).update(repeating: 0, count: count)
        }
    }

    /// Volume on every channel, then pan on the first two; each ramp per sample (no zipper).
    private func applyGains(_ output: AudioBufferList, from offset: Int, count: Int) {
        let channels = min(channelCount, output.channelCount)
        let volumeAtStart = volume
        for channel in 0..<channels {
            volume = volumeAtStart
            volume.applyGain(to: output.samples(channel) + offset, count: count)
        }
        if channels == 2 {
            leftGain.applyGain(to: output.samples(0) + offset, count: count)
            rightGain.applyGain(to: output.samples(1) + offset, count: count)
        }
    }

    /// Average (RMS) and peak of each channel over the slice.
    private func measure(_ output: AudioBufferList) {
        let count = output.frameCount
        guard count > 0 else { return }
        for channel in 0..<output.channelCount {
            let samples = output.samples(channel)
            var sum: Double = 0
            var peak: Float = 0
            for index in 0..<count {
                let sample = samples[index]
                sum += Double(sample) * Double(sample)
                peak = max(peak, abs(sample))
            }
            meters.push(MeterReading(channel: channel, average: Float((sum / Double(count)).squareRoot()), peak: peak))
        }
    }
}

/// A control message to the render side.
enum RenderCommand: BitwiseCopyable {
    /// Play from device time `at` (−1: now); `resetTimeline` after a stop, not after a pause.
    case start(at: Int, resetTimeline: Bool)
    /// Play from the device sample time this host time (ns) converts to with the slice's clock.
    case startAtHostTime(UInt64, resetTimeline: Bool)
    case pause
    case stop
    /// Drop the ring's frames up to stream frame `written` (what was written before the
    /// reset); the stream continues at stream frame `through`.
    case discard(through: Int, written: Int)
    /// The stream ends at this stream frame (stop after the queued buffers).
    case endOfStream(Int)
    case volume(Float, rampFrames: Int)
    case pan(left: Float, right: Float, rampFrames: Int)
    case metering(Bool)
}

/// A parameter change that applies at a stream frame (a buffer's parameter event).
struct StampedEvent: BitwiseCopyable {
    enum Kind: BitwiseCopyable { case volume, left, right }
    var frame: Int
    var kind: Kind
    var value: Float
    var rampFrames: Int
}

/// One channel's level over one render slice, linear.
struct MeterReading: BitwiseCopyable {
    var channel: Int
    var average: Float
    var peak: Float
}

/// What a live output tells the render side about the slice: the device sample time of its
/// first frame and the host time at which that frame is heard (the I/O cycle's stamp).
struct RenderClock: BitwiseCopyable {
    var sampleTime: Int
    var hostTime: UInt64
    /// Nanoseconds per frame at the device's actual rate (nominal rate × rate scalar).
    var nanosecondsPerFrame: Double
    /// Whether the output saw time lost or re-anchored before this slice.
    var discontinuous: Bool
    /// Frames the device holds after this slice (its playback buffer): how long after being
    /// rendered a frame has left the device.
    var latencyFrames: Int
    /// The output's clock (it resolves start host times once for every queue on the device).
    var device: Unmanaged<AudioQueueDeviceClock>

    /// The device sample time heard at `host` (rounded to the nearest frame).
    func sampleTime(forHostTime host: UInt64) -> Int {
        let nanoseconds = Double(Int64(bitPattern: host &- hostTime))
        return sampleTime + Int((nanoseconds / nanosecondsPerFrame).rounded())
    }
}
