import SonoraCore

/// The file layer's one codec interface for reading packets: a packet in, interleaved Float32
/// frames out at `outputFormat`. Apple IMA4 (Sonora's own) and the libavcodec codecs
/// (`CodecDecoder`) both stand behind it, so a reader needs no case per format.
protocol PacketDecoding: AnyObject {
    /// Interleaved Float32 at the rate and channel count the decoder makes.
    var outputFormat: StreamFormat { get }
    /// Appends one packet's frames to `output`; returns the frames appended.
    @discardableResult
    func decode(_ packet: UnsafeRawBufferPointer, into output: inout [Float]) throws(AudioError) -> Int
    /// Forgets the stream so far (after a seek).
    func reset()
}

extension CodecDecoder: PacketDecoding {}

/// The decoder for `format`: IMA4 here, the compressed formats through libavcodec.
func makePacketDecoder(format: StreamFormat, magicCookie: [UInt8]?) throws(AudioError) -> any PacketDecoding {
    if format.formatID == .appleIMA4 { return try IMA4PacketDecoder(format: format) }
    return try CodecDecoder(format: format, magicCookie: magicCookie)
}

/// Apple IMA4 behind `PacketDecoding`: each packet stands alone, so `reset()` has nothing to forget.
final class IMA4PacketDecoder: PacketDecoding {
    let outputFormat: StreamFormat
    private let channels: Int
    private let scratch: OwnedAudioBufferList

    init(format: StreamFormat) throws(AudioError) {
        channels = Int(format.channelsPerFrame)
        guard format.formatID == .appleIMA4, channels > 0 else {
            throw AudioError(.unsupportedDataFormat, "IMA4PacketDecoder: \(format) is not IMA4 with channels")
        }
        outputFormat = .linearPCM(sampleRate: format.sampleRate, channels: channels, sample: .float32)
        scratch = try OwnedAudioBufferList(channelCount: channels, frameCapacity: AppleIMA4.framesPerPacket)
    }

    @discardableResult
    func decode(_ packet: UnsafeRawBufferPointer, into output: inout [Float]) throws(AudioError) -> Int {
        try AppleIMA4.decode(packet: packet, channels: channels, into: scratch.list)
        let frames = AppleIMA4.framesPerPacket
        output.reserveCapacity(output.count + frames * channels)
        for frame in 0..<frames {
            for channel in 0..<channels { output.append(scratch.list.samples(channel)[frame]) }
        }
        return frames
    }

    func reset() {}
}
