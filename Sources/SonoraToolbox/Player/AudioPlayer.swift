import Foundation
import SonoraCore
import SonoraFile
import SonoraHAL

/// Plays one file (AVAudioPlayer): any format the file layer reads, through an output
/// audio queue on the device's shared mixer, so many players play at once.
///
/// Threads: the calls here come from any thread, one at a time (`control`); the queue's
/// thread reads the file into buffers (`AudioQueueFileSource`) and calls the delegate;
/// the device's I/O thread only mixes what the queue decoded.
public final class AudioPlayer: @unchecked Sendable {
    /// The file played (for a player made from `Data`, the private copy it plays from).
    public let url: URL
    /// The file's format (its packets, as stored).
    public let format: StreamFormat
    public let numberOfChannels: Int
    /// The file's length in seconds (its valid frames: priming and remainder excluded).
    public let duration: TimeInterval
    /// Told when playback finishes, fails or is interrupted; on the queue's thread.
    public weak var delegate: (any AudioPlayerDelegate)?

    let file: AudioFile
    /// The device named at creation (nil when the program gave an output).
    let deviceName: String?
    let givenOutput: AudioQueueOutput?
    private let privateCopy: String?
    private let frameCount: Int

    /// Program calls, one at a time. Never taken by the queue's thread (its callbacks would
    /// otherwise deadlock a reset or stop that waits for them).
    private let control = NSLock()
    private var queue: AudioQueue?
    private var timeline: AudioQueueTimeline?
    private var buffers: [AudioQueueBuffer] = []
    private let feed = Feed()
    /// Whether a 16-bit file's frames stay 16-bit in the queue's ring (AudioQueue+Int16Ring);
    /// tests turn it off, before `prepareToPlay`, to compare with the float ring.
    var prefersInt16Ring = true

    /// Shared with the queue's thread (its IsRunning listener), under `state`.
    private let state = NSLock()
    private var playing = false
    /// The file frame the current source began at, and the queue time it began at.
    private var sourceStartFrame = 0
    private var sourceStartTime = 0.0
    /// Where a stopped or finished player resumes.
    private var restingFrame = 0
    /// The source ran out and the queue stopped: the next play begins a new one.
    private var needsNewSource = false
    /// Which queue the IsRunning listener speaks for: a stopped player's old queue is silent.
    private var generation = 0
    private var interruptedWhilePlaying = false
    /// The audio session governing the player and its queue (the process's, from creation).
    let session = AudioSession.current

    // Settings, kept here so they survive a stop (which disposes of the queue).
    private var loops = 0
    private var volumeValue: Float = 1
    private var panValue: Float = 0
    private var rateValue: Float = 1
    private var rateEnabled = false
    private var meteringEnabled = false
    private var meters: MeterPowers

    /// A player of the file at `url`, on the device named `device` (an ALSA PCM, `null`, …).
    public convenience init(contentsOf url: URL, device: String = "default") throws(AudioError) {
        try self.init(path: url.path, device: device, output: nil, privateCopy: nil)
    }

    /// A player of the file at `url` on a mixer output the program made (a device or unit of its own).
    public convenience init(contentsOf url: URL, output: AudioQueueOutput) throws(AudioError) {
        try self.init(path: url.path, device: nil, output: output, privateCopy: nil)
    }

    /// A player of a file held in memory (its bytes as on disk), on the device named `device`.
    public convenience init(data: Data, device: String = "default") throws(AudioError) {
        let copy = try Self.privateCopy(of: data)
        try self.init(path: copy, device: device, output: nil, privateCopy: copy)
    }

    /// As `init(data:device:)` on a mixer output the program made.
    public convenience init(data: Data, output: AudioQueueOutput) throws(AudioError) {
        let copy = try Self.privateCopy(of: data)
        try self.init(path: copy, device: nil, output: output, privateCopy: copy)
    }

    private init(path: String, device: String?, output: AudioQueueOutput?, privateCopy: String?) throws(AudioError) {
        let opened: AudioFile
        do {
            opened = try AudioFile.open(path)
        } catch {
            if let privateCopy { unlink(privateCopy) }
            throw AudioError(error.code, "AudioPlayer: \(privateCopy == nil ? "" : "data in memory: ")\(error.message)")
        }
        guard let packets = opened.packetCount, packets > 0, opened.maximumPacketSize != nil else {
            try? opened.close()
            if let privateCopy { unlink(privateCopy) }
            throw AudioError(.invalidFileData, "AudioPlayer: \(path): no audio frames to play")
        }
        file = opened
        url = URL(fileURLWithPath: path)
        format = opened.dataFormat
        numberOfChannels = Int(format.channelsPerFrame)
        frameCount = opened.frameCount
        duration = Double(opened.frameCount) / format.sampleRate
        deviceName = device
        givenOutput = output
        self.privateCopy = privateCopy
        meters = MeterPowers(channels: numberOfChannels)
        // The session pauses and resumes the player (its delegate is told), not its queue.
        session.register(self, kind: .player)
    }

    deinit {
        if let queue { try? queue.dispose(immediate: true) }
        try? file.close()
        if let privateCopy { unlink(privateCopy) }
    }

    /// The player's decode ring (kAudioQueueProperty_DecodeBufferSizeFrames): 32,768 frames, or
    /// 65,536 for a file whose frames stay 16-bit in the ring (AudioQueue+Int16Ring) — the same
    /// bytes, and the feeder wakes half as often (64 players, 2026-11-28: players ÷ 64 bus
    /// callbacks 0.91–0.99 against 0.90–1.11 at 32,768; 8,192 and 4,096 were worse, 1.19–1.78).
    static func decodeBufferFrames(for format: StreamFormat) -> Int {
        AudioQueue.int16RingFormat(format) ? 65536 : 32768
    }

    /// The bytes written to a new file only this player knows (removed when it goes).
    private static func privateCopy(of data: Data) throws(AudioError) -> String {
        guard !data.isEmpty else { throw AudioError(.invalidFileData, "AudioPlayer: data in memory: 0 bytes hold no audio") }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sonora-player-\(UUID().uuidString)").path
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw AudioError(.filePermission, "AudioPlayer: data in memory: cannot write a private copy at \(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        let written = data.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == data.count else {
            unlink(path)
            throw AudioError(.filePermission, "AudioPlayer: data in memory: wrote \(written) of \(data.count) bytes to \(path)")
        }
        return path
    }

    // MARK: Playing

    /// Opens the device and decodes ahead, so `play()` starts within a period (prepareToPlay).
    public func prepareToPlay() throws(AudioError) {
        control.lock()
        defer { control.unlock() }
        try prepare()
    }

    /// Plays from the current time (play); prepares first if needed.
    public func play() throws(AudioError) {
        try play(atDeviceSampleTime: nil)
    }

    /// Plays from the current time, beginning at `time` on the device's clock in seconds
    /// (play(atTime:), the same clock as `deviceCurrentTime`): two players given one time
    /// begin on the same sample.
    public func play(atTime time: TimeInterval) throws(AudioError) {
        guard time.isFinite, time >= 0 else { throw AudioError(.parameterError, "AudioPlayer.play(atTime:): \(time) s is not a time") }
        try play(atDeviceSampleTime: time)
    }

    private func play(atDeviceSampleTime seconds: TimeInterval?) throws(AudioError) {
        control.lock()
        defer { control.unlock() }
        try prepare()
        guard let queue else { return }
        if state.withLock({ needsNewSource }) {
            try queue.reset()
            try startSource(at: state.withLock { restingFrame }, resetClock: true)
            try queue.prime()
        }
        // Playing before the start: a short file's end may be announced before start returns.
        state.withLock { playing = true }
        do throws(AudioError) {
            if let seconds {
                let rate = queue.output?.sampleRate ?? queue.format.sampleRate
                try queue.start(atDeviceSampleTime: Int((seconds * rate).rounded()))
            } else {
                try queue.start()
            }
        } catch {
            state.withLock { playing = false }
            throw error
        }
    }

    /// Pauses, keeping the position and what is decoded (pause).
    public func pause() {
        control.lock()
        defer { control.unlock() }
        guard let queue, state.withLock({ playing }) else { return }
        try? queue.pause()
        state.withLock { playing = false }
    }

    /// Stops and gives up the device and what was prepared; the current time stays (stop).
    public func stop() {
        control.lock()
        defer { control.unlock() }
        guard let queue else { return }
        let resting = currentFrame()
        state.withLock {
            restingFrame = resting
            playing = false
            generation += 1
        }
        feed.halt()
        try? queue.dispose(immediate: true)
        self.queue = nil
        timeline = nil
        buffers = []
    }

    /// Whether the player is playing (isPlaying).
    public var isPlaying: Bool { state.withLock { playing } }

    /// The position in the file in seconds (currentTime); setting it seeks to that sample,
    /// also while playing.
    public var currentTime: TimeInterval {
        get {
            control.lock()
            defer { control.unlock() }
            return Double(currentFrame()) / format.sampleRate
        }
        set { try? seek(to: newValue) }
    }

    /// Seeks to `time` seconds into the file (clamped to it), playing on if playing.
    public func seek(to time: TimeInterval) throws(AudioError) {
        guard time.isFinite else { throw AudioError(.parameterError, "AudioPlayer.currentTime: \(time) s is not a time") }
        control.lock()
        defer { control.unlock() }
        let frame = min(max(Int((time * format.sampleRate).rounded()), 0), max(frameCount - 1, 0))
        guard let queue else {
            state.withLock { restingFrame = frame }
            return
        }
        let wasPlaying = state.withLock { playing }
        // Paused, the timeline stands still: the new source's frames count from exactly here.
        if wasPlaying { try queue.pause() }
        feed.halt()
        try queue.reset()
        try startSource(at: frame, resetClock: false)
        try queue.prime()
        if wasPlaying { try queue.start() }
    }

    /// The device's clock in seconds (deviceCurrentTime); 0 before the device runs.
    public var deviceCurrentTime: TimeInterval {
        control.lock()
        defer { control.unlock() }
        guard let queue, let time = try? queue.deviceCurrentTime() else { return 0 }
        return time.sampleTime / (queue.output?.sampleRate ?? queue.format.sampleRate)
    }

    /// Times the file plays again after the first (numberOfLoops): −1 until stopped; gapless.
    public var numberOfLoops: Int {
        get { state.withLock { loops } }
        set {
            let value = max(newValue, -1)
            state.withLock { loops = value }
            feed.setLoops(value)
        }
    }

    // MARK: Preparing

    private func prepare() throws(AudioError) {
        guard queue == nil else { return }
        let queue = try session.governing { () throws(AudioError) in
            try AudioQueue(format: format) { [feed] queue, buffer in feed.fill(queue, buffer) }
        }
        session.unregister(queue)
        queue.prefersInt16Ring.store(prefersInt16Ring, ordering: .relaxed)
        do {
            if let cookie = file.magicCookie, !format.isLinearPCM, format.formatID != .appleIMA4 { try queue.setMagicCookie(cookie) }
            // A file is there to read ahead: a ring four times the queue's default wakes the
            // queue's thread (on a shared output: the output's feeder) a quarter as often; 0.7 s
            // at 48 kHz (a 16-bit ring: eight times, 1.4 s, in the same bytes; `decodeBufferFrames`).
            try queue.setDecodeBufferSizeFrames(Self.decodeBufferFrames(for: format))
            if let givenOutput { try queue.setOutput(givenOutput) } else { try queue.setCurrentDevice(deviceName) }
            try applySettings(to: queue)
            let current = state.withLock { generation }
            try queue.addPropertyListener(.isRunning) { [weak self] queue, _ in self?.runningChanged(queue, generation: current) }
            // A packet the decoder refused: said at once (its frames are skipped; the end then reports failure).
            try queue.addPropertyListener(.converterError) { [weak self] queue, _ in
                guard let self, let error = queue.converterError else { return }
                self.delegate?.audioPlayerDecodeErrorDidOccur(self, error: error)
            }
            let source = try AudioQueueFileSource(files: [file], numberOfLoops: 0)
            buffers = try (0..<3).map { _ throws(AudioError) in
                try queue.allocateBuffer(byteCapacity: source.bufferByteCapacity, packetDescriptionCapacity: source.packetDescriptionCapacity)
            }
            self.queue = queue
            timeline = try queue.createTimeline()
            try startSource(at: state.withLock { restingFrame }, resetClock: true)
            try queue.prime()
        } catch {
            self.queue = nil
            timeline = nil
            buffers = []
            try? queue.dispose(immediate: true)
            throw AudioError(error.code, "AudioPlayer.prepareToPlay: \(url.lastPathComponent): \(error.message)")
        }
    }

    private func applySettings(to queue: AudioQueue) throws(AudioError) {
        let (volume, pan, rate, rateOn, metering) = state.withLock { (volumeValue, panValue, rateValue, rateEnabled, meteringEnabled) }
        try queue.setParameter(.volume, volume)
        if numberOfChannels == 2 { try queue.setParameter(.pan, pan) }
        if rateOn {
            try queue.setTimePitchEnabled(true)
            try queue.setParameter(.playRate, rate)
        }
        try queue.setLevelMeteringEnabled(metering)
    }

    /// A new file source from `frame` into every buffer (all of them back from the queue).
    private func startSource(at frame: Int, resetClock: Bool) throws(AudioError) {
        guard let queue else { return }
        let source = try AudioQueueFileSource(files: [file], startFrame: frame, numberOfLoops: state.withLock { loops })
        let clock = resetClock ? 0 : (timeline?.currentTime().sampleTime ?? 0)
        state.withLock {
            sourceStartFrame = frame
            sourceStartTime = clock
            needsNewSource = false
        }
        feed.use(source)
        for buffer in buffers { source.fill(queue, buffer) }
        if let failure = source.failure { throw failure }
    }

    // MARK: Position

    /// The file frame playing now: where the source began, plus what the queue played since
    /// (its timeline counts device frames: × the rate), wrapped at each repetition.
    private func currentFrame() -> Int {
        let (start, clock, resting, isFresh, rate) = state.withLock {
            (sourceStartFrame, sourceStartTime, restingFrame, needsNewSource, rateEnabled ? rateValue : 1)
        }
        guard let timeline, !isFresh else { return resting }
        let played = Int(((timeline.currentTime().sampleTime - clock) * Double(rate)).rounded())
        if let passStart = feed.passStartFrames().last(where: { $0 <= played }) {
            return min(played - passStart, max(frameCount - 1, 0))
        }
        return min(start + played, frameCount)
    }

    // MARK: The end

    /// IsRunning went true or false (the queue's thread): false without a stop asked for is
    /// the end of the file (or a failure).
    private func runningChanged(_ queue: AudioQueue, generation listening: Int) {
        guard !queue.isRunning else { return }
        let finished = state.withLock { () -> Bool in
            guard listening == generation, playing else { return false }
            playing = false
            needsNewSource = true
            restingFrame = 0
            return true
        }
        guard finished else { return }
        // A read failure ends the file early; a decoding failure was reported when it happened.
        if let failure = feed.failure { delegate?.audioPlayerDecodeErrorDidOccur(self, error: failure) }
        delegate?.audioPlayerDidFinishPlaying(self, successfully: feed.failure == nil && queue.converterError == nil)
    }

    // MARK: Interruptions (the audio session calls these)

    /// The session interrupted: a playing player pauses and tells its delegate.
    public func beginInterruption() {
        let wasPlaying = isPlaying
        if wasPlaying { pause() }
        state.withLock { interruptedWhilePlaying = wasPlaying }
        delegate?.audioPlayerBeginInterruption(self)
    }

    /// The interruption ended: with `shouldResume`, a player paused by it plays on.
    public func endInterruption(shouldResume: Bool) {
        let resume = state.withLock { () -> Bool in
            defer { interruptedWhilePlaying = false }
            return interruptedWhilePlaying && shouldResume
        }
        if resume { try? play() }
        delegate?.audioPlayerEndInterruption(self, shouldResume: shouldResume)
    }

    /// Device periods that found no decoded frames while playing (each played silence), since prepared.
    public var underruns: Int { preparedQueue?.underruns ?? 0 }

    // MARK: Settings

    /// The queue the settings go to now, if prepared.
    var preparedQueue: AudioQueue? {
        control.lock()
        defer { control.unlock() }
        return queue
    }

    func setting<Value>(_ keyPath: ReferenceWritableKeyPath<AudioPlayer, Value>, _ value: Value, apply: (AudioQueue) throws(AudioError) -> Void) throws(AudioError) {
        state.withLock { self[keyPath: keyPath] = value }
        if let queue = preparedQueue { try apply(queue) }
    }

    /// Volume, 0 … 1 (volume); changes ramp without zipper noise.
    public var volume: Float {
        get { state.withLock { volumeValue } }
        set { try? setVolume(newValue, fadeDuration: 0) }
    }

    /// Sets the volume, fading to it over `fadeDuration` seconds (setVolume(_:fadeDuration:)).
    public func setVolume(_ volume: Float, fadeDuration: TimeInterval) throws(AudioError) {
        let value = min(max(volume, 0), 1)
        try setting(\.volumeValue, value) { (queue) throws(AudioError) in
            try queue.setParameter(.volumeRampTime, Float(min(max(fadeDuration, 0), 10)))
            try queue.setParameter(.volume, value)
        }
    }

    /// Pan, −1 (left) … 1 (right), equal power (pan); stereo files only.
    public var pan: Float {
        get { state.withLock { panValue } }
        set {
            let value = min(max(newValue, -1), 1)
            try? setting(\.panValue, value) { (queue) throws(AudioError) in
                if numberOfChannels == 2 { try queue.setParameter(.pan, value) }
            }
        }
    }

    /// Whether `rate` applies (enableRate); set before `prepareToPlay`, as AVAudioPlayer asks.
    public var enableRate: Bool {
        get { state.withLock { rateEnabled } }
        set { state.withLock { rateEnabled = newValue } }
    }

    /// Play rate, 0.5 … 2 (rate); the pitch follows, as with AVAudioPlayer's rate.
    public var rate: Float {
        get { state.withLock { rateValue } }
        set {
            let value = min(max(newValue, 0.5), 2)
            try? setting(\.rateValue, value) { (queue) throws(AudioError) in
                if enableRate { try queue.setParameter(.playRate, value) }
            }
        }
    }

    // MARK: Metering

    /// Whether the meters run (isMeteringEnabled).
    public var isMeteringEnabled: Bool {
        get { state.withLock { meteringEnabled } }
        set { try? setting(\.meteringEnabled, newValue) { (queue) throws(AudioError) in try queue.setLevelMeteringEnabled(newValue) } }
    }

    /// Reads the meters (updateMeters): the levels of the last rendered slice.
    public func updateMeters() {
        guard let queue = preparedQueue, let read = try? queue.currentLevelMeterDB() else { return }
        state.withLock { meters.update(read) }
    }

    /// The average (RMS) power of `channel` in dBFS at the last `updateMeters`, −160 … 0.
    public func averagePower(forChannel channel: Int) -> Float {
        state.withLock { meters.average(channel) }
    }

    /// The peak power of `channel` in dBFS at the last `updateMeters`, −160 … 0.
    public func peakPower(forChannel channel: Int) -> Float {
        state.withLock { meters.peak(channel) }
    }

}

/// The current file source, as the queue's callback sees it; swapped on a seek or a new start.
private final class Feed: @unchecked Sendable {
    private let lock = NSLock()
    private var source: AudioQueueFileSource?

    func use(_ source: AudioQueueFileSource) { lock.withLock { self.source = source } }

    /// Buffers that come back from now on stay idle (a reset or stop is under way).
    func halt() {
        lock.withLock {
            source?.halt()
            source = nil
        }
    }

    func fill(_ queue: AudioQueue, _ buffer: AudioQueueBuffer) {
        lock.withLock { source }?.fill(queue, buffer)
    }

    func setLoops(_ loops: Int) { lock.withLock { source }?.numberOfLoops = loops }
    func passStartFrames() -> [Int] { lock.withLock { source }?.passStartFrames ?? [] }
    var failure: AudioError? { lock.withLock { source }?.failure }
}
