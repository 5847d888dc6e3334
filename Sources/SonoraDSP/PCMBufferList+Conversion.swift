import SonoraCore

/// Canonical Float32 channels to and from a PCMBufferList's bytes (SonoraCore's type).
extension PCMBufferList {
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
