import CFFmpeg
import SonoraCore

/// A libavcodec encoder for one compressed stream (AAC, MP3 through LAME, ALAC, FLAC, Opus
/// through libopus): interleaved Float32 frames in, packets out, cut into the codec's frame
/// size here. Not realtime: it allocates per packet.
final class CodecEncoder {
    /// One encoded packet and the frames it stands for (the codec's packet size; the last
    /// ALAC/FLAC packet is shorter).
    struct EncodedPacket: Equatable {
        var bytes: [UInt8]
        var frames: Int
    }

    /// The compressed format this encoder makes.
    let format: StreamFormat
    /// Frames per packet (AAC 1024, MP3 1152, ALAC 4096, FLAC its block size, Opus 960 = 20 ms).
    let framesPerPacket: Int
    /// The encoder's delay: frames of the decoded stream before the first input frame
    /// (libavcodec's `initial_padding`; AAC 1024, LAME 528 + 1, Opus its pre-skip).
    let primingFrames: Int
    /// Frames at the end of the last packet(s) that are padding, valid after `finish()`.
    private(set) var remainderFrames = 0
    /// The bit rate the encoder runs at (bits per second; 0 when the codec has none).
    let bitRate: Int

    private let name: String
    private let channels: Int
    private let bits: Int
    private let fixedPacketFrames: Bool
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    /// Input frames not yet in a packet (interleaved).
    private var pending: [Float] = []
    private var inputFrames = 0
    private var packetFrames = 0
    private var finished = false

    init(format: StreamFormat, bitRate: Int?, quality: Int?, complexity: Int?) throws(AudioError) {
        FFmpegLibrary.silenceLogging()
        guard let name = FFmpegCodecs.encoderName(for: format.formatID) else {
            throw AudioError(.unsupportedDataFormat, "no encoder for format '\(format.formatID)' (Sonora encodes 'aac ', '.mp3', 'alac', 'flac', 'opus')")
        }
        guard let codec = avcodec_find_encoder_by_name(name) else {
            throw AudioError(.unsupportedDataFormat, "libavcodec \(FFmpegLibrary.codecVersion) has no \(name) encoder")
        }
        self.name = name
        self.format = format
        channels = Int(format.channelsPerFrame)
        let rate = Int(format.sampleRate)
        let rates = FFmpegCodecs.list(codec.pointee.supported_samplerates, end: 0).map(Int.init)
        // Opus packets are always 48 kHz on the wire (its ASBD says 48000 whatever libopus runs at inside).
        let allowedRates = format.formatID == .opus ? [48000] : rates
        guard Double(rate) == format.sampleRate, allowedRates.isEmpty || allowedRates.contains(rate),
              rate > 0, rate <= 655_350 else {
            throw AudioError(.unsupportedDataFormat, "the \(name) encoder does not take \(format.sampleRate) Hz (it takes \(allowedRates.isEmpty ? "1 to 655350" : allowedRates.map(String.init).joined(separator: ", ")))")
        }
        let maxChannels = [.mpegLayer3: 2, .opus: 2][format.formatID] ?? 8
        guard channels >= 1, channels <= maxChannels else {
            throw AudioError(.unsupportedDataFormat, "the \(name) encoder takes 1 to \(maxChannels) channels, not \(channels)")
        }
        bits = try Self.bitDepth(of: format, name: name)
        fixedPacketFrames = format.formatID != .appleLossless && format.formatID != .flac
        context = avcodec_alloc_context3(codec)
        packet = av_packet_alloc()
        guard let context, packet != nil else { throw AudioError(.memoryFull, "libavcodec could not allocate a \(name) encoder") }
        context.pointee.sample_rate = Int32(rate)
        context.pointee.time_base = AVRational(num: 1, den: Int32(rate))
        av_channel_layout_default(&context.pointee.ch_layout, Int32(channels))
        context.pointee.sample_fmt = Self.sampleFormat(codec, bits: bits)
        if bits == 24 { context.pointee.bits_per_raw_sample = 24 }
        if let bitRate {
            guard bitRate > 0, bitRate <= 2_000_000 else {
                throw AudioError(.unsupportedDataFormat, "the \(name) encoder's bit rate must be 1 to 2000000 bits per second, not \(bitRate)")
            }
            context.pointee.bit_rate = Int64(bitRate)
        }
        if let level = Self.compressionLevel(format.formatID, quality: quality, complexity: complexity) {
            context.pointee.compression_level = Int32(level)
        }
        let status = avcodec_open2(context, codec, nil)
        guard status >= 0 else {
            throw AudioError.ffmpeg(status, .unsupportedDataFormat, "the \(name) encoder refused \(format)")
        }
        let frameSize = Int(context.pointee.frame_size)
        framesPerPacket = frameSize > 0 ? frameSize : 4096
        primingFrames = Int(context.pointee.initial_padding)
        self.bitRate = Int(context.pointee.bit_rate)
    }

    deinit {
        avcodec_free_context(&context)
        av_packet_free(&packet)
    }

    /// The Core Audio magic cookie for the stream (the AAC esds, ALACSpecificConfig, FLAC STREAMINFO,
    /// OpusHead), or nil when the codec has none (MP3). FLAC's STREAMINFO is final only after `finish()`.
    var magicCookie: [UInt8]? {
        guard let context, context.pointee.extradata_size > 0, let data = context.pointee.extradata else { return nil }
        let extradata = Array(UnsafeBufferPointer(start: data, count: Int(context.pointee.extradata_size)))
        return MagicCookie.cookie(for: format.formatID, codecConfiguration: extradata, averageBitRate: bitRate, maximumBitRate: 0)
    }

    /// Takes `frameCount` interleaved frames; returns the packets they complete.
    func encode(_ interleaved: UnsafeBufferPointer<Float>, frameCount: Int) throws(AudioError) -> [EncodedPacket] {
        guard !finished else { throw AudioError(.illegalOperation, "the \(name) encoder has finished its stream") }
        guard frameCount >= 0, interleaved.count >= frameCount * channels else {
            throw AudioError(.invalidInputSize, "\(frameCount) frames of \(channels) channels need \(frameCount * channels) samples, not \(interleaved.count)")
        }
        pending.append(contentsOf: UnsafeBufferPointer(rebasing: interleaved[0..<frameCount * channels]))
        inputFrames += frameCount
        var packets: [EncodedPacket] = []
        var used = 0
        while pending.count / channels - used >= framesPerPacket {
            try send(from: used, frames: framesPerPacket)
            used += framesPerPacket
            try receive(into: &packets)
        }
        pending.removeFirst(used * channels)
        return packets
    }

    /// Encodes what is left (a short last packet) and drains the encoder's delay.
    func finish() throws(AudioError) -> [EncodedPacket] {
        guard !finished, let context else { return [] }
        finished = true
        var packets: [EncodedPacket] = []
        let left = pending.count / channels
        if left > 0 {
            try send(from: 0, frames: left)
            try receive(into: &packets)
        }
        pending = []
        let status = avcodec_send_frame(context, nil)
        guard status >= 0 else { throw AudioError.ffmpeg(status, .unspecified, "the \(name) encoder did not drain") }
        try receive(into: &packets)
        remainderFrames = max(0, packetFrames - primingFrames - inputFrames)
        return packets
    }

    private func send(from start: Int, frames: Int) throws(AudioError) {
        guard let context else { return }
        var frame: UnsafeMutablePointer<AVFrame>? = av_frame_alloc()
        defer { av_frame_free(&frame) }
        guard let frame else { throw AudioError(.memoryFull, "libavcodec could not allocate a frame") }
        frame.pointee.nb_samples = Int32(frames)
        frame.pointee.format = context.pointee.sample_fmt.rawValue
        frame.pointee.sample_rate = context.pointee.sample_rate
        guard av_channel_layout_copy(&frame.pointee.ch_layout, &context.pointee.ch_layout) >= 0,
              av_frame_get_buffer(frame, 0) >= 0 else {
            throw AudioError(.memoryFull, "libavcodec could not allocate a frame of \(frames) samples")
        }
        frame.pointee.pts = Int64(inputFrames - pending.count / channels + start)
        pending.withUnsafeBufferPointer { buffer in
            FFmpegCodecs.fill(frame, from: buffer.baseAddress! + start * channels, frames: frames, channels: channels, bits: bits)
        }
        let status = avcodec_send_frame(context, frame)
        guard status >= 0 else { throw AudioError.ffmpeg(status, .unspecified, "the \(name) encoder refused \(frames) frames") }
    }

    private func receive(into packets: inout [EncodedPacket]) throws(AudioError) {
        guard let context, let packet else { return }
        while true {
            let status = avcodec_receive_packet(context, packet)
            if status == sonora_averror_eagain() || status == sonora_averror_eof() { return }
            guard status >= 0 else { throw AudioError.ffmpeg(status, .unspecified, "the \(name) encoder failed") }
            defer { av_packet_unref(packet) }
            // FLAC's encoder ends with an empty packet carrying only the final STREAMINFO (side data).
            guard packet.pointee.size > 0 else { continue }
            let bytes = Array(UnsafeBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size)))
            let duration = Int(packet.pointee.duration)
            let frames = fixedPacketFrames || duration <= 0 ? framesPerPacket : duration
            packetFrames += frames
            packets.append(EncodedPacket(bytes: bytes, frames: frames))
        }
    }

    /// Bits per sample of the source for the lossless codecs (Core Audio's ALAC/FLAC format flags
    /// 1 = 16-bit, 3 = 24-bit source data, or `bitsPerChannel`); 0 for the lossy ones (they take float).
    private static func bitDepth(of format: StreamFormat, name: String) throws(AudioError) -> Int {
        guard format.formatID == .appleLossless || format.formatID == .flac else { return 0 }
        let fromFlags = [1: 16, 2: 20, 3: 24, 4: 32][Int(format.formatFlags.rawValue)]
        let bits = fromFlags ?? (format.bitsPerChannel == 0 ? 16 : Int(format.bitsPerChannel))
        guard bits == 16 || bits == 24 else {
            throw AudioError(.unsupportedDataFormat, "the \(name) encoder takes 16- or 24-bit source data, not \(bits)-bit")
        }
        return bits
    }

    /// The codec's sample format: float where it takes float, else 16- or 32-bit integers (24 used).
    private static func sampleFormat(_ codec: UnsafePointer<AVCodec>, bits: Int) -> AVSampleFormat {
        let formats = FFmpegCodecs.list(codec.pointee.sample_fmts, end: AV_SAMPLE_FMT_NONE)
        let preference = bits == 0 ? [AV_SAMPLE_FMT_FLTP, AV_SAMPLE_FMT_FLT]
            : bits == 16 ? [AV_SAMPLE_FMT_S16P, AV_SAMPLE_FMT_S16] : [AV_SAMPLE_FMT_S32P, AV_SAMPLE_FMT_S32]
        return preference.first(where: formats.contains) ?? formats.first ?? AV_SAMPLE_FMT_FLTP
    }

    /// libavcodec's `compression_level` from Core Audio's codec quality (0…127, 127 best) for LAME
    /// (its algorithm quality 9…0) and FLAC (0…12), and from the complexity (0…10) for Opus.
    static func compressionLevel(_ format: AudioFormatID, quality: Int?, complexity: Int?) -> Int? {
        switch format {
        case .mpegLayer3: quality.map { 9 - min(max($0, 0), 127) * 9 / 127 }
        case .flac: quality.map { min(max($0, 0), 127) * 12 / 127 }
        case .opus: complexity.map { min(max($0, 0), 10) }
        default: nil
        }
    }
}
