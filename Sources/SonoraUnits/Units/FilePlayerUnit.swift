import SonoraCore
import SonoraDSP
import SonoraFile

/// Plays an audio file ('augn'/'afpl', Core Audio's AudioFilePlayer in spirit): the
/// file is decoded, converted to the unit's rate and channel count, and held in memory
/// when it is set, so rendering only copies (realtime-safe). Loops when asked; silence
/// after the end otherwise. Files up to `maximumSeconds` long.
public final class FilePlayerUnit: AudioUnit, @unchecked Sendable {
    public static let componentDescription = AudioComponentDescription(type: .generator, subType: "afpl", manufacturer: .apple)
    public static let maximumSeconds = 600.0

    public private(set) var path: String?
    public private(set) var frameCount = 0
    public var loops = false
    /// Owns the decoded file; the render reads it through `sampleList`.
    private var samples: OwnedAudioBufferList?
    /// A view of `samples` (bits: no reference), set with it before the unit initializes.
    /// The render binds this, not `samples`: binding the optional class property retained
    /// and released the storage once a render on the I/O thread (`sonora-bench refcounts`,
    /// the appliance's I/O thread with a player node).
    @exclusivity(unchecked) private var sampleList: AudioBufferList?
    /// Read and advanced on the realtime thread only.
    @exclusivity(unchecked) private var position = 0

    public init() {
        super.init(description: Self.componentDescription, name: "FilePlayer", inputs: 0, outputs: 1)
    }

    /// Loads `path`, converted to the output format (set the format first).
    public func setFile(_ path: String) throws(AudioError) {
        guard !isInitialized else { throw AudioError(.initialized, "\(name): set the file before initializing") }
        let format = try streamFormat(scope: .output, element: 0)
        let file = try ExtAudioFile.open(path)
        defer { try? file.close() }
        let seconds = Double(file.frameLength) / file.file.dataFormat.sampleRate
        guard seconds <= Self.maximumSeconds else {
            throw AudioError(.invalidFile, "\(path): \(Int(seconds)) s is longer than the player holds (\(Int(Self.maximumSeconds)) s)")
        }
        let client = StreamFormat.canonical(sampleRate: format.sampleRate, channels: Int(format.channelsPerFrame))
        try file.setClientFormat(client)
        let capacity = Int((seconds * format.sampleRate).rounded(.up)) + 64
        let storage = try OwnedAudioBufferList(channelCount: Int(format.channelsPerFrame), frameCapacity: max(1, capacity))
        let block = 4096
        let staging = try OwnedPCMBufferList(format: client, frameCapacity: block)
        var done = 0
        while done < capacity {
            let got = try file.read(into: staging.list(frameCount: block), frameCount: min(block, capacity - done))
            if got == 0 { break }
            let list = storage.list.frames(from: done, count: got)
            staging.list(frameCount: got).decode(frames: got, offset: 0, into: list, sample: .float32)
            done += got
        }
        samples = storage
        sampleList = storage.list
        frameCount = done
        self.path = path
    }

    public override func resetRenderState() { position = 0 }

    public override func process(_ context: RenderContext) -> AudioError.Code {
        let output = context.output
        guard let samples = sampleList, frameCount > 0 else { output.clear(); return .noError }
        var done = 0
        let frames = context.frameCount
        while done < frames {
            if position >= frameCount {
                if loops { position = 0 } else { break }
            }
            let chunk = min(frames - done, frameCount - position)
            for channel in 0..<output.channelCount {
                (output.samples(channel) + done).update(from: samples.samples(min(channel, samples.channelCount - 1)) + position, count: chunk)
            }
            done += chunk
            position += chunk
        }
        if done < frames {
            for channel in 0..<output.channelCount { (output.samples(channel) + done).update(repeating: 0, count: frames - done) }
        }
        return .noError
    }

    /// True once a non-looping player has played the whole file.
    public var hasFinished: Bool { !loops && position >= frameCount }
}
