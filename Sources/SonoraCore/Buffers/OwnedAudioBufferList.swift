/// Owns non-interleaved Float32 channel buffers, each 64-byte aligned (one cache
/// line, and the widest SIMD load) and zeroed (unless asked not to), and hands out
/// `AudioBufferList` views.
///
/// Allocate these at `initialize()` time; the render path uses only `list`.
public final class OwnedAudioBufferList: @unchecked Sendable {
    public static let alignment = 64

    public let channelCount: Int
    public let frameCapacity: Int
    /// Floats between the starts of two channels (capacity rounded up to the alignment).
    public let channelStride: Int
    @usableFromInline let storage: UnsafeMutablePointer<Float>
    @usableFromInline let channelPointers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>

    /// `zeroed: false` leaves the samples unwritten, so the pages of a large list that may never
    /// be used (a ring's float storage while it holds 16-bit frames) take no memory until written;
    /// the owner writes every sample before reading it.
    public init(channelCount: Int, frameCapacity: Int, zeroed: Bool = true) throws(AudioError) {
        guard channelCount > 0, frameCapacity > 0 else {
            throw AudioError(
                .parameterError,
                "a buffer list needs at least one channel and one frame, not \(channelCount) × \(frameCapacity)")
        }
        let floatsPerLine = Self.alignment / MemoryLayout<Float>.stride
        let perChannel = (frameCapacity + floatsPerLine - 1) / floatsPerLine * floatsPerLine
        let (total, overflow) = perChannel.multipliedReportingOverflow(by: channelCount * MemoryLayout<Float>.stride)
        guard !overflow, total <= 1 << 40 else {
            throw AudioError(.memoryFull, "\(channelCount) channels × \(frameCapacity) frames is too large")
        }
        self.channelCount = channelCount
        self.frameCapacity = frameCapacity
        self.channelStride = perChannel
        let stride = perChannel * channelCount
        let raw = UnsafeMutableRawPointer.allocate(
            byteCount: stride * MemoryLayout<Float>.stride, alignment: Self.alignment)
        storage = zeroed ? raw.initializeMemory(as: Float.self, repeating: 0, count: stride) : raw.bindMemory(to: Float.self, capacity: stride)
        channelPointers = .allocate(capacity: channelCount)
        for channel in 0..<channelCount {
            (channelPointers + channel).initialize(to: storage + channel * channelStride)
        }
    }

    deinit {
        channelPointers.deallocate()
        UnsafeMutableRawPointer(storage).deallocate()
    }

    /// A view of all `frameCapacity` frames.
    @inlinable
    public var list: AudioBufferList {
        AudioBufferList(channels: channelPointers, channelCount: channelCount, frameCount: frameCapacity)
    }

    /// A view of the first `frameCount` frames.
    @inlinable
    public func list(frameCount: Int) -> AudioBufferList {
        precondition(frameCount >= 0 && frameCount <= frameCapacity, "frameCount exceeds capacity")
        return AudioBufferList(channels: channelPointers, channelCount: channelCount, frameCount: frameCount)
    }
}
