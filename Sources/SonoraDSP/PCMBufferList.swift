import SonoraCore

/// PCM bytes in any linear-PCM `StreamFormat` (Core Audio's AudioBufferList as
/// raw buffers): one buffer when interleaved, one per channel otherwise. What
/// the converter unit reads from and writes to at the graph's edge.
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

    /// Decodes `frames` frames starting at `offset` into canonical channels. Realtime-safe.
    public func decode(frames: Int, offset: Int, into list: AudioBufferList, sample: PCMSample) {
        let bytes = SampleConversion.byteCount(of: sample)
        let frameBytes = Int(format.bytesPerFrame)
        for channel in 0..<min(list.channelCount, Int(format.channelsPerFrame)) {
            let start = format.isInterleaved
                ? UnsafeRawPointer(buffers[0]) + offset * frameBytes + channel * bytes
                : UnsafeRawPointer(buffers[channel]) + offset * frameBytes
            SampleConversion.decode(
                start, sample: sample, bigEndian: format.isBigEndian, stride: frameBytes, into: list.samples(channel), count: frames)
        }
    }

    /// Encodes `frames` canonical frames into this list from frame `offset`. Realtime-safe.
    public func encode(_ list: AudioBufferList, frames: Int, offset: Int, sample: PCMSample) {
        let bytes = SampleConversion.byteCount(of: sample)
        let frameBytes = Int(format.bytesPerFrame)
        for channel in 0..<min(list.channelCount, Int(format.channelsPerFrame)) {
            let start = format.isInterleaved
                ? buffers[0] + offset * frameBytes + channel * bytes
                : buffers[channel] + offset * frameBytes
            SampleConversion.encode(
                list.samples(channel), count: frames, into: start, sample: sample, bigEndian: format.isBigEndian, stride: frameBytes)
        }
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

