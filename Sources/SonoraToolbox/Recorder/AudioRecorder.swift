import Foundation
import SonoraCore
import SonoraFile
import SonoraUnits

/// Records to a file (AVAudioRecorder): an input queue on the device's capture side, its
/// buffers written through `AudioQueueFileRecording` — the file hidden under a partial name
/// until it is complete, its header brought up to date every second, so a recorder killed
/// mid-recording leaves a playable file of all but the last second at most.
///
/// The file's type comes from the URL's extension: caf, wav, aif/aiff, aifc, flac.
/// A file already at the URL is replaced only when the new recording completes, as
/// AVAudioRecorder replaces it.
public final class AudioRecorder: @unchecked Sendable {
    public let url: URL
    public let settings: AudioRecorderSettings
    /// What the queue records (from `settings`).
    public let format: StreamFormat
    public let fileType: AudioFileType
    public weak var delegate: (any AudioRecorderDelegate)?

    private let deviceName: String?
    private let givenUnit: IOUnit?
    /// Program calls, one at a time; never taken by the queue's thread.
    private let control = NSLock()
    private var queue: AudioInputQueue?
    private var recording: AudioQueueFileRecording?
    private let sink = Sink()

    private let state = NSLock()
    private var recordingNow = false
    private var meteringEnabled = false
    private var meters: MeterPowers
    private var interruptedWhileRecording = false
    /// The audio session governing the recorder and its queue (the process's, from creation).
    let session = AudioSession.current

    /// A recorder of `url` with `settings`, capturing from the device named `device`.
    public convenience init(url: URL, settings: AudioRecorderSettings, device: String = "default") throws(AudioError) {
        try self.init(url: url, settings: settings, device: device, unit: nil)
    }

    /// A recorder capturing from an I/O unit the program made (its element 1, not initialized yet).
    public convenience init(url: URL, settings: AudioRecorderSettings, inputUnit: IOUnit) throws(AudioError) {
        try self.init(url: url, settings: settings, device: nil, unit: inputUnit)
    }

    private init(url: URL, settings: AudioRecorderSettings, device: String?, unit: IOUnit?) throws(AudioError) {
        let fileType: AudioFileType
        switch url.pathExtension.lowercased() {
        case "caf": fileType = .caf
        case "wav", "wave": fileType = .wave
        case "aif", "aiff": fileType = settings.formatID == .linearPCM ? .aiff : .aifc
        case "aifc": fileType = .aifc
        case "flac": fileType = .flac
        default:
            throw AudioError(.unsupportedFileType, "AudioRecorder: \(url.path): the extension '\(url.pathExtension)' names no file type a recorder writes (caf, wav, aif, aifc, flac)")
        }
        let format: StreamFormat
        do {
            format = try settings.streamFormat()
        } catch {
            throw AudioError(error.code, "AudioRecorder: \(url.lastPathComponent): \(error.message)")
        }
        if fileType == .flac && !format.isLinearPCM {
            throw AudioError(.unsupportedDataFormat, "AudioRecorder: \(url.lastPathComponent): a FLAC file is encoded from linear PCM settings, not \(format.formatID)")
        }
        if fileType == .wave && format.formatID == .appleLossless {
            throw AudioError(.unsupportedDataFormat, "AudioRecorder: \(url.lastPathComponent): a WAV file cannot hold ALAC (use .caf)")
        }
        self.url = url
        self.settings = settings
        self.format = format
        self.fileType = fileType
        deviceName = device
        givenUnit = unit
        meters = MeterPowers(channels: Int(format.channelsPerFrame))
        // The session pauses and resumes the recorder (its delegate is told), not its queue.
        session.register(self, kind: .recorder)
    }

    deinit {
        if let queue { try? queue.dispose() }
        if let recording { try? recording.finish(primeInfo: AudioConverterPrimeInfo()) }
    }

    // MARK: Recording

    /// Creates the file (under its hidden partial name) and opens the capture (prepareToRecord).
    public func prepareToRecord() throws(AudioError) {
        control.lock()
        defer { control.unlock() }
        try prepare(frameLimit: nil)
    }

    private func prepare(frameLimit: Int?) throws(AudioError) {
        guard queue == nil else { return }
        let queue = try session.governing { () throws(AudioError) in
            try AudioInputQueue(format: format) { [sink] queue, buffer, _, descriptions in sink.write(queue, buffer, descriptions) }
        }
        session.unregister(queue)
        do throws(AudioError) {
            let unit: IOUnit
            if let givenUnit {
                unit = givenUnit
            } else {
                unit = IOUnit()
                unit.deviceConfiguration.inputChannels = Int(format.channelsPerFrame)
                unit.deviceConfiguration.outputChannels = 0
                try unit.setDevice(named: deviceName ?? "default")
            }
            try queue.setInputUnit(unit)
            try queue.setLevelMeteringEnabled(state.withLock { meteringEnabled })
            // The device went away: the queue delivered what it captured and stopped; complete the file.
            try queue.addPropertyListener(.isRunning) { [weak self] queue, _ in
                guard !queue.isRunning, queue.stopReason != nil else { return }
                self?.limitReached()
            }
            let recording = try AudioQueueFileRecording(
                path: url.path, type: fileType, queue: queue, frameLimit: frameLimit, erase: true,
                compressionLevel: fileType == .flac ? settings.encoderQuality?.compressionLevel : nil)
            sink.use(recording) { [weak self] in self?.limitReached() }
            try recording.enqueueBuffers(on: queue)
            self.queue = queue
            self.recording = recording
        } catch {
            try? queue.dispose()
            throw AudioError(error.code, "AudioRecorder.prepareToRecord: \(url.lastPathComponent): \(error.message)")
        }
    }

    /// Records (record), or resumes after `pause`; prepares first if needed.
    public func record() throws(AudioError) {
        try record(at: nil, frameLimit: nil)
    }

    /// Records from `time` on the input device's clock, in seconds (record(atTime:)).
    public func record(atTime time: TimeInterval) throws(AudioError) {
        guard time.isFinite, time >= 0 else { throw AudioError(.parameterError, "AudioRecorder.record(atTime:): \(time) s is not a time") }
        try record(at: time, frameLimit: nil)
    }

    /// Records `duration` seconds, then stops by itself (record(forDuration:)); the delegate hears of the end.
    public func record(forDuration duration: TimeInterval) throws(AudioError) {
        guard duration.isFinite, duration > 0 else { throw AudioError(.parameterError, "AudioRecorder.record(forDuration:): \(duration) s") }
        try record(at: nil, frameLimit: Int((duration * format.sampleRate).rounded()))
    }

    private func record(at time: TimeInterval?, frameLimit: Int?) throws(AudioError) {
        control.lock()
        defer { control.unlock() }
        if let frameLimit, queue != nil, !(recording?.frames == 0) {
            throw AudioError(.parameterError, "AudioRecorder.record(forDuration:): \(url.lastPathComponent) is already recording; a duration is given at the start")
        }
        if let frameLimit, let queue, recording?.frames == 0 {
            // Prepared without a limit: the file is still empty, so make it again with one.
            try? queue.dispose()
            self.queue = nil
            try? recording?.finish(primeInfo: AudioConverterPrimeInfo())
            recording = nil
            try prepare(frameLimit: frameLimit)
        } else {
            try prepare(frameLimit: frameLimit)
        }
        guard let queue else { return }
        state.withLock { recordingNow = true }
        do throws(AudioError) {
            if let time {
                try queue.start(atDeviceSampleTime: Int((time * format.sampleRate).rounded()))
            } else {
                try queue.start()
            }
        } catch {
            state.withLock { recordingNow = false }
            throw AudioError(error.code, "AudioRecorder.record: \(url.lastPathComponent): \(error.message)")
        }
    }

    /// Pauses, keeping the file open (pause); `record()` resumes into the same file.
    public func pause() {
        control.lock()
        defer { control.unlock() }
        guard let queue, state.withLock({ recordingNow }) else { return }
        try? queue.pause()
        state.withLock { recordingNow = false }
    }

    /// Stops and completes the file (stop): the delegate hears of it before this returns.
    public func stop() {
        control.lock()
        let finished = finishRecording()
        control.unlock()
        report(finished)
    }

    /// Whether the recorder is recording (isRecording).
    public var isRecording: Bool { state.withLock { recordingNow } }

    /// Seconds recorded so far (currentTime); 0 once stopped.
    public var currentTime: TimeInterval {
        control.lock()
        defer { control.unlock() }
        guard let recording else { return 0 }
        return Double(recording.frames) / format.sampleRate
    }

    /// Deletes the recorded file (deleteRecording); only while not recording.
    public func deleteRecording() throws(AudioError) {
        control.lock()
        defer { control.unlock() }
        guard queue == nil else {
            throw AudioError(.cannotDoInCurrentContext, "AudioRecorder.deleteRecording: \(url.lastPathComponent) is still being recorded; stop first")
        }
        guard unlink(url.path) == 0 else {
            throw AudioError(errno == ENOENT ? .fileNotFound : .filePermission, "AudioRecorder.deleteRecording: \(url.path): \(String(cString: strerror(errno)))")
        }
    }

    /// The input queue while prepared (the tests bring its thread to a fixed point).
    var preparedQueue: AudioInputQueue? { control.withLock { queue } }

    // MARK: The end

    /// The outcome of a finished recording, for the delegate.
    private struct Finished {
        var failure: AudioError?
    }

    /// Stops the queue and completes the file (call with `control` held); nil if not recording.
    private func finishRecording() -> Finished? {
        guard let queue, let recording else { return nil }
        state.withLock { recordingNow = false }
        try? queue.stop(immediate: false)
        let prime = queue.encoderPrimeInfo
        try? queue.dispose()
        self.queue = nil
        self.recording = nil
        do {
            try recording.finish(primeInfo: prime)
            // Complete, but cut short by the device: not a success.
            return Finished(failure: queue.stopReason)
        } catch {
            return Finished(failure: error)
        }
    }

    private func report(_ finished: Finished?) {
        guard let finished else { return }
        if let failure = finished.failure { delegate?.audioRecorderEncodeErrorDidOccur(self, error: failure) }
        delegate?.audioRecorderDidFinishRecording(self, successfully: finished.failure == nil)
    }

    /// The duration was reached, a write failed (the queue's thread, inside its callback) or
    /// the device went away: stopping waits for the queue's thread, so it happens on another.
    private func limitReached() {
        DispatchQueue.global().async { [weak self] in
            guard let self else { return }
            self.control.lock()
            let finished = self.finishRecording()
            self.control.unlock()
            self.report(finished)
        }
    }

    // MARK: Interruptions (the audio session calls these)

    /// The session interrupted: a recording recorder pauses and tells its delegate.
    public func beginInterruption() {
        let wasRecording = isRecording
        if wasRecording { pause() }
        state.withLock { interruptedWhileRecording = wasRecording }
        delegate?.audioRecorderBeginInterruption(self)
    }

    /// The interruption ended: with `shouldResume`, a recorder paused by it records on.
    public func endInterruption(shouldResume: Bool) {
        let resume = state.withLock { () -> Bool in
            defer { interruptedWhileRecording = false }
            return interruptedWhileRecording && shouldResume
        }
        if resume { try? record() }
        delegate?.audioRecorderEndInterruption(self, shouldResume: shouldResume)
    }

    // MARK: Metering

    /// Whether the meters run (isMeteringEnabled).
    public var isMeteringEnabled: Bool {
        get { state.withLock { meteringEnabled } }
        set {
            state.withLock { meteringEnabled = newValue }
            control.lock()
            defer { control.unlock() }
            try? queue?.setLevelMeteringEnabled(newValue)
        }
    }

    /// Reads the meters (updateMeters).
    public func updateMeters() {
        control.lock()
        let read = try? queue?.currentLevelMeterDB()
        control.unlock()
        if let read { state.withLock { meters.update(read) } }
    }

    /// The average power of `channel` in dBFS at the last `updateMeters`, −160 … 0.
    public func averagePower(forChannel channel: Int) -> Float {
        state.withLock { meters.average(channel) }
    }

    /// The peak power of `channel` in dBFS at the last `updateMeters`, −160 … 0.
    public func peakPower(forChannel channel: Int) -> Float {
        state.withLock { meters.peak(channel) }
    }

}

/// The queue's callback reaches the recording once it exists, and says when it has ended.
private final class Sink: @unchecked Sendable {
    private let lock = NSLock()
    private var recording: AudioQueueFileRecording?
    private var ended: (@Sendable () -> Void)?

    func use(_ recording: AudioQueueFileRecording, ended: @escaping @Sendable () -> Void) {
        lock.withLock {
            self.recording = recording
            self.ended = ended
        }
    }

    func write(_ queue: AudioInputQueue, _ buffer: AudioQueueBuffer, _ descriptions: [AudioStreamPacketDescription]) {
        guard let (recording, ended) = lock.withLock({ self.recording.map { ($0, self.ended) } }) else { return }
        let before = recording.hasEnded
        recording.write(queue, buffer, descriptions)
        if !before && recording.hasEnded { ended?() }
    }
}
