/// A borrowed view of non-interleaved Float32 audio: one pointer per channel and a
/// frame count — what a render call receives and fills.
///
/// It holds raw pointers only, so passing it costs no reference counting and no
/// copy of the samples. It is valid only while the storage it views is alive
/// (an `OwnedAudioBufferList`, a device's mmap area, a ring region), exactly as
/// Core Audio's `AudioBufferList` is.
@frozen
public struct AudioBufferList: @unchecked Sendable, BitwiseCopyable {
    @usableFromInline let channelPointers: UnsafePointer<UnsafeMutablePointer<Float>>
    /// Number of channels (one buffer each).
    public let channelCount: Int
    /// Frames the view covers, starting at `frameOffset` into each channel.
    public let frameCount: Int
    /// Offset of the view's first frame into the underlying channel storage.
    public let frameOffset: Int

    /// Views `frameCount` frames of the channel buffers `channels[0..<channelCount]`.
    @inlinable
    public init(
        channels: UnsafePointer<UnsafeMutablePointer<Float>>, channelCount: Int,
        frameCount: Int, frameOffset: Int = 0
    ) {
        self.channelPointers = channels
        self.channelCount = channelCount
        self.frameCount = frameCount
        self.frameOffset = frameOffset
    }

    /// The samples of one channel.
    @inlinable
    public subscript(channel: Int) -> UnsafeMutableBufferPointer<Float> {
        precondition(channel >= 0 && channel < channelCount, "channel out of range")
        return UnsafeMutableBufferPointer(start: channelPointers[channel] + frameOffset, count: frameCount)
    }

    /// The first sample of one channel.
    @inlinable
    public func samples(_ channel: Int) -> UnsafeMutablePointer<Float> {
        channelPointers[channel] + frameOffset
    }

    /// A view of `count` frames starting `offset` frames into this one (no copy).
    @inlinable
    public func frames(from offset: Int, count: Int) -> AudioBufferList {
        precondition(offset >= 0 && count >= 0 && offset + count <= frameCount, "frame range out of bounds")
        return AudioBufferList(
            channels: channelPointers, channelCount: channelCount, frameCount: count,
            frameOffset: frameOffset + offset)
    }

    /// The first `count` channels of this view (zero is allowed: a list with no channels).
    @inlinable
    public func channels(prefix count: Int) -> AudioBufferList {
        precondition(count >= 0 && count <= channelCount, "channel count out of range")
        return AudioBufferList(channels: channelPointers, channelCount: count, frameCount: frameCount, frameOffset: frameOffset)
    }

    /// `count` channels starting at channel `first` (no copy): one instance's share of a
    /// wider bus when linked plugin instances each take a few of its channels.
    @inlinable
    public func channels(from first: Int, count: Int) -> AudioBufferList {
        precondition(first >= 0 && count >= 0 && first + count <= channelCount, "channel range out of bounds")
        return AudioBufferList(
            channels: channelPointers + first, channelCount: count, frameCount: frameCount, frameOffset: frameOffset)
    }

    /// Sets every sample to zero.
    @inlinable
    public func clear() {
        for channel in 0..<channelCount {
            samples(channel).update(repeating: 0, count: frameCount)
        }
    }

    /// Copies `min(frameCount, source.frameCount)` frames of each shared channel from `source`.
    @inlinable
    public func copy(from source: AudioBufferList) {
        let frames = min(frameCount, source.frameCount)
        for channel in 0..<min(channelCount, source.channelCount) {
            copySamples(from: source.samples(channel), to: samples(channel), count: frames)
        }
    }
}
