/// PCM bytes in any linear-PCM `StreamFormat` (Core Audio's AudioBufferList as
/// raw buffers): one buffer when interleaved, one per channel otherwise. What
/// the converter unit reads from and writes to at the graph's edge, and what
/// ExtAudioFile and AudioConverter take (so callers need no DSP import). Sample
/// conversion to and from canonical channels is SonoraDSP's (`decode`/`encode`).
@frozen
public struct PCMBufferList: @unchecked Sendable, BitwiseCopyable {
    public let format: StreamFormat
    public let buffers: UnsafePointer<UnsafeMutableRawPointer>
    public let frameCount: Int

    public init(format: StreamFormat, buffers: UnsafePointer<UnsafeMutableRawPointer>, frameCount: Int) {
        self.format = format
        self.buffers = buffers
        self.frameCount = frameCount
    }
}

/// Owns the byte buffers of a `PCMBufferList` (allocate off the realtime thread).
public final class OwnedPCMBufferList: @unchecked Sendable {
    public let format: StreamFormat
    public let frameCapacity: Int
    private let pointers: UnsafeMutablePointer<UnsafeMutableRawPointer>
    private let count: Int

    public init(format: StreamFormat, frameCapacity: Int) throws(AudioError) {
        try format.validate()
        guard format.pcmSample != nil else {
            throw AudioError(.formatNotSupported, "\(format) is not a PCM format Sonora converts")
        }
        self.format = format
        self.frameCapacity = frameCapacity
        count = format.bufferCount
        pointers = .allocate(capacity: count)
        for index in 0..<count {
            let bytes = max(1, frameCapacity * Int(format.bytesPerFrame))
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 64)
            buffer.initializeMemory(as: UInt8.self, repeating: 0, count: bytes)
            (pointers + index).initialize(to: buffer)
        }
    }

    deinit {
        for index in 0..<count { pointers[index].deallocate() }
        pointers.deallocate()
    }

    public func list(frameCount: Int) -> PCMBufferList {
        PCMBufferList(format: format, buffers: pointers, frameCount: min(frameCount, frameCapacity))
    }

    /// The bytes of buffer `index` (`frameCapacity` frames).
    public func bytes(_ index: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: pointers[index], count: frameCapacity * Int(format.bytesPerFrame))
    }
}

