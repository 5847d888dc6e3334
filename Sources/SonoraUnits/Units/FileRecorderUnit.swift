import SonoraCore
import SonoraDSP
import SonoraFile
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Records what passes through it to a file ('aufx'/'frec', Sonora's): the audio goes
/// on unchanged; on the realtime thread it is only copied into a lock-free ring, and a
/// writer thread encodes it into the file. `finish()` drains the ring and closes the file
/// (which appears, complete, only then — AudioFile writes to a temporary name first).
public final class FileRecorderUnit: AudioUnit, @unchecked Sendable {
    public static let componentDescription = AudioComponentDescription(type: .effect, subType: "frec", manufacturer: .sonora)

    public private(set) var path: String?
    private var fileType: AudioFileType = .wave
    private var fileFormat: StreamFormat?
    private var ring: SampleRing?
    private var writer: RealtimeThread?
    private let stopping = Atomic<Bool>(false)
    private let writerDone = Atomic<Bool>(true)
    private let overruns = Atomic<Int>(0)
    private let framesWritten = Atomic<Int>(0)
    private var writeError: AudioError?

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
    public var recordedFrames: Int { framesWritten.load(ordering: .relaxed) }
    public var lostWrites: Int { overruns.load(ordering: .relaxed) }

    public override func allocateRenderResources() throws(AudioError) {
        guard let path else { return }
        let format = try streamFormat(scope: .input, element: 0)
        let channels = Int(format.channelsPerFrame)
        let dataFormat = fileFormat ?? (fileType == .caf
            ? StreamFormat.linearPCM(sampleRate: format.sampleRate, channels: channels, sample: .float32, interleaved: true)
            : StreamFormat.linearPCM(sampleRate: format.sampleRate, channels: channels, sample: .int24, interleaved: true, bigEndian: fileType == .aiff))
        let file = try AudioFile.create(path, type: fileType, format: dataFormat, erase: true)
        let ring = try SampleRing(channelCount: channels, capacity: Int(format.sampleRate) * 2)
        self.ring = ring
        stopping.store(false, ordering: .relaxed)
        writerDone.store(false, ordering: .relaxed)
        writeError = nil
        // A normal-priority thread: file writes may block, which the I/O thread must never.
        // The file is handed to the writer thread and used only there from now on.
        let handOff = UncheckedFile(file: file)
        writer = try RealtimeThread(RealtimeThreadOptions(name: "sonora-recorder", priority: nil, flushDenormals: false)) { [self] in
            self.drain(ring: ring, file: handOff.file, channels: channels)
        }
    }

    public override func deallocateRenderResources() {
        _ = try? finish()
    }

    /// Writes what is left and closes the file. Call after the last render.
    @discardableResult
    public func finish() throws(AudioError) -> Int {
        guard writer != nil else { return framesWritten.load(ordering: .relaxed) }
        stopping.store(true, ordering: .releasing)
        writer?.join()
        writer = nil
        ring = nil
        if let writeError { throw writeError }
        return framesWritten.load(ordering: .relaxed)
    }

    private func drain(ring: SampleRing, file: AudioFile, channels: Int) {
        defer { writerDone.store(true, ordering: .releasing) }
        do {
            while true {
                let finishing = stopping.load(ordering: .acquiring)
                let region = ring.readRegion(maxFrames: 4096)
                if region.frameCount == 0 {
                    if finishing { break }
                    usleep(5000)
                    continue
                }
                if region.first.frameCount > 0 { try file.writeFrames(from: region.first) }
                if region.second.frameCount > 0 { try file.writeFrames(from: region.second) }
                try ring.commitRead(region.frameCount)
                framesWritten.wrappingAdd(region.frameCount, ordering: .relaxed)
            }
            try file.close()
        } catch {
            writeError = error
            try? file.close()
        }
    }

    public override func process(_ context: RenderContext) -> AudioError.Code {
        let input = context.input(0)
        context.output.copy(from: input)
        guard let ring else { return .noError }
        let region = ring.writeRegion(maxFrames: context.frameCount)
        if region.frameCount < context.frameCount { overruns.wrappingAdd(1, ordering: .relaxed) }
        region.first.copy(from: input)
        if region.second.frameCount > 0 { region.second.copy(from: input.frames(from: region.first.frameCount, count: region.second.frameCount)) }
        try? ring.commitWrite(region.frameCount)
        return .noError
    }
}

/// An AudioFile moved to one other thread, which alone uses it afterwards.
private struct UncheckedFile: @unchecked Sendable {
    let file: AudioFile
}
