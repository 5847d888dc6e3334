import SonoraCore
import SonoraDSP

/// Canonical frames encoded into a compressed file's packets, as ExtAudioFile writes
/// them: the encoder's priming and the last packet's padding are recorded in the
/// file's packet table, so readers drop them and get back exactly the frames written.
final class CompressedFrameWriter {
    let file: AudioFile
    private let encoder: CodecEncoder
    private let channels: Int
    private var interleaved: [Float] = []
    private var framesWritten: Int64 = 0
    /// Frames the packets stand for in the file (a constant-frame format counts every packet
    /// as full, the short last one included, as Core Audio's packet table does).
    private var packetFrames: Int64 = 0

    /// Opens the encoder first: its magic cookie goes into the file's header.
    static func create(
        _ path: String, type: AudioFileType, format: StreamFormat, settings: EncoderSettings, erase: Bool
    ) throws(AudioError) -> CompressedFrameWriter {
        let encoder = try CodecEncoder(format: format, bitRate: settings.bitRate, quality: settings.quality, complexity: settings.complexity)
        var fileFormat = format
        fileFormat.framesPerPacket = UInt32(encoder.framesPerPacket)
        let file = try AudioFile.create(path, type: type, format: fileFormat, magicCookie: encoder.magicCookie, erase: erase)
        // Containers that keep the priming as the first packet's timestamp (MP4, Ogg) or in a
        // header written first (LAME) need it before any packet; the rest is set on close.
        try file.setPacketTableInfo(AudioFilePacketTableInfo(validFrames: 0, primingFrames: Int32(encoder.primingFrames), remainderFrames: 0))
        return CompressedFrameWriter(file: file, encoder: encoder, channels: Int(format.channelsPerFrame))
    }

    private init(file: AudioFile, encoder: CodecEncoder, channels: Int) {
        self.file = file
        self.encoder = encoder
        self.channels = channels
    }

    /// Encodes canonical frames (file rate and channels) and appends the packets made.
    func writeFrames(from source: AudioBufferList) throws(AudioError) {
        let frames = source.frameCount
        guard frames > 0 else { return }
        if interleaved.count < frames * channels { interleaved = [Float](repeating: 0, count: frames * channels) }
        interleaved.withUnsafeMutableBufferPointer { buffer in
            Interleaving.interleave(channels: channels, frames: frames, from: { UnsafePointer(source.samples($0)) }, into: buffer.baseAddress!)
        }
        let packets = try interleaved.withUnsafeBufferPointer { (buffer: UnsafeBufferPointer<Float>) throws(AudioError) -> [CodecEncoder.EncodedPacket] in
            try encoder.encode(UnsafeBufferPointer(rebasing: buffer.prefix(frames * channels)), frameCount: frames)
        }
        try append(packets)
        framesWritten += Int64(frames)
    }

    /// Drains the encoder, records priming and remainder, and closes the file.
    func close() throws(AudioError) {
        try append(try encoder.finish())
        // The remainder is what the packets stand for beyond the priming and the audio.
        let remainder = max(0, packetFrames - Int64(encoder.primingFrames) - framesWritten)
        try file.setPacketTableInfo(
            AudioFilePacketTableInfo(
                validFrames: framesWritten, primingFrames: Int32(encoder.primingFrames), remainderFrames: Int32(clamping: remainder)))
        try file.close()
    }

    private func append(_ packets: [CodecEncoder.EncodedPacket]) throws(AudioError) {
        guard !packets.isEmpty else { return }
        var bytes: [UInt8] = []
        var descriptions: [AudioStreamPacketDescription] = []
        descriptions.reserveCapacity(packets.count)
        let variableFrames = file.dataFormat.framesPerPacket == 0
        let constantFrames = Int64(file.dataFormat.framesPerPacket)
        for packet in packets {
            packetFrames += constantFrames > 0 ? constantFrames : Int64(packet.frames)
            descriptions.append(
                AudioStreamPacketDescription(
                    startOffset: Int64(bytes.count), variableFramesInPacket: variableFrames ? UInt32(packet.frames) : 0,
                    dataByteSize: UInt32(packet.bytes.count)))
            bytes += packet.bytes
        }
        try file.writePackets(bytes, descriptions: descriptions)
    }
}

/// What an encoder is asked for (Core Audio's converter properties kAudioConverterEncodeBitRate,
/// kAudioConverterCodecQuality; Opus's complexity). Nil leaves the codec's default.
public struct EncoderSettings: Hashable, Sendable {
    /// Bits per second (AAC, MP3, Opus).
    public var bitRate: Int?
    /// 0 (fastest) … 127 (best), Core Audio's kAudioConverterQuality scale.
    public var quality: Int?
    /// Opus's encoder complexity, 0 … 10.
    public var complexity: Int?

    public init(bitRate: Int? = nil, quality: Int? = nil, complexity: Int? = nil) {
        self.bitRate = bitRate
        self.quality = quality
        self.complexity = complexity
    }
}
