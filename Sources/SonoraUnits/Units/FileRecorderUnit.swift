import SonoraCore
import SonoraDSP
import SonoraFile
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Records what passes through it to a file ('aufx'/'frec', Sonora's): the audio goes
/// on unchanged; on the realtime thread it is only copied into a lock-free ring, and the
/// writer (SonoraCore's `Worker`) is woken once `wakeInterval` of audio has collected; the
/// writer thread encodes it into the file.
///
/// No lost data: the writer rewrites the header's sizes about once a second, so a killed
/// process leaves a hidden partial that reads as all but the last second (the next
/// recorder of the same file recovers it to a visible name, a WAV with every whole frame
/// on disk: `staleRecordings`). A failed
/// write (a full disk) stops the recording at once, closes the file with what was
/// written under its name, and is published in `failure` for the control side to report;
/// the audio keeps flowing. `finish()` drains the ring and closes the file.
public final class FileRecorderUnit: AudioUnit, @unchecked Sendable {
    public static let componentDescription = AudioComponentDescription(type: .effect, subType: "frec", manufacturer: .sonora)

    /// Seconds of audio between header rewrites: what a killed recording's header does
    /// not cover (the recovery of its partial keeps every whole frame on disk).
    public static let headerInterval = 1.0

    /// Seconds of audio the ring collects before the writer is woken. A wake-up is a futex
    /// call on the rendering thread and a switch to the writer: every slice that is 188 a
    /// second at 256-frame periods, 750 at 64. What a SIGKILL loses is what sits in the
    /// ring, not on disk: at most this much plus one slice (or, if the rendering thread
    /// stalls first, the writer's own 0.25 s interval).
    public static let wakeInterval = 0.02

    public private(set) var path: String?
    private var fileType: AudioFileType = .wave
    private var fileFormat: StreamFormat?
    private var ring: SampleRing?
    private var writer: RecordingWriter?
    private var worker: Worker?
    /// What `process` uses, unretained (kept alive by `ring` and `worker`): no reference
    /// counting on the realtime thread.
    private var realtime: (ring: Unmanaged<SampleRing>, worker: Unmanaged<Worker>, wakeFrames: Int)?
    private let overruns = Atomic<Int>(0)
    /// Frames written to the ring since the writer was last woken (the rendering thread's only).
    private let framesSinceWake = Atomic<Int>(0)
    /// Partial files of this recording left by killed processes, dealt with when it started.
    public private(set) var staleRecordings: [StalePartialFile] = []

    public init() {
        super.init(description: Self.componentDescription, name: "FileRecorder", inputs: 1, outputs: 1)
    }

    deinit { _ = try? finish() }

    public override var canProcessInPlace: Bool { true }

    /// Sets the file to record into; `format` is the file's data format (default: 24-bit
    /// integer at the unit's rate and channels, or 32-bit float for CAF).
    public func setFile(_ path: String, type: AudioFileType? = nil, format: StreamFormat? = nil) throws(AudioError) {
        guard !isInitialized else { throw AudioError(.initialized, "\(name): set the file before initializing") }
        guard let type = type ?? AudioFileType(pathExtension: (path.split(separator: ".").last).map(String.init) ?? "") else {
            throw AudioError(.unsupportedFileType, "\(path): cannot tell the file type from the extension (use .wav, .aif, .caf, .flac)")
        }
        self.path = path
        fileType = type
        fileFormat = format
    }

    /// Frames the writer thread has written, and the frames lost because the ring was full.
    public var recordedFrames: Int { writer?.framesWritten.load(ordering: .relaxed) ?? finishedFrames }
    public var lostWrites: Int { overruns.load(ordering: .relaxed) }
    /// Times the writer thread has woken for this recording (tests: the rendering thread wakes it in batches).
    var writerWakeUps: Int { worker?.wakeUps ?? 0 }
    private var finishedFrames = 0
    private var finishedFailure: AudioError?

    /// The write error that stopped this recording (nil while it is fine). Set by the
    /// writer thread; read from any thread.
    public var failure: AudioError? { writer?.failure ?? finishedFailure }

    public override func allocateRenderResources() throws(AudioError) {
        guard let path else { return }
        let format = try streamFormat(scope: .input, element: 0)
        let channels = Int(format.channelsPerFrame)
        let dataFormat = fileFormat ?? (fileType == .caf
            ? StreamFormat.linearPCM(sampleRate: format.sampleRate, channels: channels, sample: .float32, interleaved: true)
            : StreamFormat.linearPCM(sampleRate: format.sampleRate, channels: channels, sample: .int24, interleaved: true, bigEndian: fileType == .aiff))
        staleRecordings = AudioFile.recoverStalePartials(of: path)
        let file = try AudioFile.create(path, type: fileType, format: dataFormat, erase: true)
        file.keepsWrittenAudioOnFailure = true
        let ring = try SampleRing(channelCount: channels, capacity: Int(format.sampleRate) * 2)
        // The file is handed to the writer, used only on the worker thread from now on.
        let writer = RecordingWriter(file: file, ring: ring, headerFrames: Int(format.sampleRate * Self.headerInterval))
        // A normal-priority thread: file writes may block, which the I/O thread must never.
        // The interval drains the ring even if the realtime side stops waking it.
        let worker = try Worker(name: "sonora-recorder", capacity: 4096, maximumJobSize: 64, interval: 0.25, afterJobs: { writer.drain() })
        try worker.start()
        self.ring = ring
        self.writer = writer
        self.worker = worker
        realtime = (Unmanaged.passUnretained(ring), Unmanaged.passUnretained(worker), max(1, Int(format.sampleRate * Self.wakeInterval)))
        framesSinceWake.store(0, ordering: .relaxed)
        finishedFailure = nil
        finishedFrames = 0
    }

    public override func deallocateRenderResources() {
        _ = try? finish()
    }

    /// Writes what is left and closes the file. Call after the last render. Throws the
    /// write error if one stopped the recording (the file then holds what was written).
    @discardableResult
    public func finish() throws(AudioError) -> Int {
        guard let worker, let writer else {
            if let finishedFailure { throw finishedFailure }
            return finishedFrames
        }
        realtime = nil
        worker.stop()  // runs the last drain
        writer.close()
        self.worker = nil
        self.writer = nil
        ring = nil
        finishedFrames = writer.framesWritten.load(ordering: .relaxed)
        finishedFailure = writer.failure
        if let finishedFailure { throw finishedFailure }
        return finishedFrames
    }

    public override func process(_ context: RenderContext) -> AudioError.Code {
        let input = context.input(0)
        context.output.copy(from: input)
        guard let realtime else { return .noError }
        let full = realtime.ring._withUnsafeGuaranteedRef { ring in
            let region = ring.writeRegion(maxFrames: context.frameCount)
            let full = region.frameCount < context.frameCount
            if full { overruns.wrappingAdd(1, ordering: .relaxed) }
            region.first.copy(from: input)
            if region.second.frameCount > 0 { region.second.copy(from: input.frames(from: region.first.frameCount, count: region.second.frameCount)) }
            try? ring.commitWrite(region.frameCount)
            return full
        }
        let collected = framesSinceWake.load(ordering: .relaxed) + context.frameCount
        if collected >= realtime.wakeFrames || full {
            framesSinceWake.store(0, ordering: .relaxed)
            realtime.worker._withUnsafeGuaranteedRef { $0.wake() }
        } else {
            framesSinceWake.store(collected, ordering: .relaxed)
        }
        return .noError
    }
}

/// The recorder's file side, run only on its worker thread (and by `close()` after the
/// thread has stopped): ring → file, header rewrites, the first write error kept.
private final class RecordingWriter: @unchecked Sendable {
    let file: AudioFile
    let ring: SampleRing
    let framesWritten = Atomic<Int>(0)
    /// Set (releasing) after `error` is written; `failure` reads it acquiring.
    private let failed = Atomic<Bool>(false)
    private var error: AudioError?
    private let headerFrames: Int
    private var framesAtLastHeader = 0
    private var closed = false

    init(file: AudioFile, ring: SampleRing, headerFrames: Int) {
        self.file = file
        self.ring = ring
        self.headerFrames = max(1, headerFrames)
    }

    var failure: AudioError? { failed.load(ordering: .acquiring) ? error : nil }

    func drain() {
        while true {
            let region = ring.readRegion(maxFrames: 4096)
            guard region.frameCount > 0 else { break }
            if !closed {
                do {
                    if region.first.frameCount > 0 { try file.writeFrames(from: region.first) }
                    if region.second.frameCount > 0 { try file.writeFrames(from: region.second) }
                    let written = framesWritten.wrappingAdd(region.frameCount, ordering: .relaxed).newValue
                    if written - framesAtLastHeader >= headerFrames {
                        try file.updateHeader()
                        framesAtLastHeader = written
                    }
                } catch {
                    fail(error)
                }
            }
            // After a failure the audio is let go: the ring must not fill and count overruns.
            try? ring.commitRead(region.frameCount)
        }
    }

    /// Stops at the first error: the file is closed at once with what was written.
    private func fail(_ error: AudioError) {
        framesWritten.store(file.frameCount, ordering: .relaxed)
        let kept = closeFile()
        var message = "\(file.path): recording stopped: \(error.message); "
        message += kept == nil ? "kept \(file.frameCount) frames" : "the file could not be closed: \(kept!.message)"
        self.error = AudioError(error.code, message)
        failed.store(true, ordering: .releasing)
    }

    /// Closes the file once; returns the error if closing failed.
    @discardableResult
    func closeFile() -> AudioError? {
        guard !closed else { return nil }
        closed = true
        do { try file.close() } catch { return error }
        return nil
    }

    /// After the worker has stopped.
    func close() {
        if let error = closeFile(), self.error == nil {
            self.error = error
            failed.store(true, ordering: .releasing)
        }
    }
}
