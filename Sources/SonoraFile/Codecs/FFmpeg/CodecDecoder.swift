import CFFmpeg
import SonoraCore

/// A libavcodec decoder for one compressed stream (AAC LC and HE-AAC, MP3, ALAC, FLAC, Opus):
/// packets in, interleaved Float32 frames out. Not realtime: it allocates per packet.
final class CodecDecoder {
    /// The compressed format this decoder was made for.
    let format: StreamFormat
    /// Interleaved Float32 at the rate and channel count the decoder produces. HE-AAC whose
    /// format gives the core rate decodes at twice it: libavcodec says so after the first packet.
    private(set) var outputFormat: StreamFormat

    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    /// Packets given so far, for error messages.
    private var packetIndex = 0

    init(format: StreamFormat, magicCookie: [UInt8]?) throws(AudioError) {
        FFmpegLibrary.silenceLogging()
        guard let name = FFmpegCodecs.decoderName(for: format.formatID) else {
            throw AudioError(.unsupportedDataFormat, "no decoder for format '\(format.formatID)' (Sonora decodes 'aac ', 'aach', '.mp3', 'alac', 'flac', 'opus')")
        }
        guard let codec = avcodec_find_decoder_by_name(name) else {
            throw AudioError(.unsupportedDataFormat, "libavcodec \(FFmpegLibrary.codecVersion) has no \(name) decoder")
        }
        let channels = Int(format.channelsPerFrame)
        guard channels >= 1, channels <= 8 else {
            throw AudioError(.unsupportedDataFormat, "the \(name) decoder takes 1 to 8 channels, not \(channels)")
        }
        guard format.sampleRate >= 1, format.sampleRate <= 768_000, format.sampleRate.rounded() == format.sampleRate else {
            throw AudioError(.unsupportedDataFormat, "the \(name) decoder needs a whole sample rate up to 768000 Hz, not \(format.sampleRate)")
        }
        var extradata: [UInt8] = []
        if let magicCookie, !magicCookie.isEmpty {
            extradata = try MagicCookie.codecConfiguration(for: format.formatID == .mpeg4AAC_HE ? .mpeg4AAC : format.formatID, cookie: magicCookie)
        } else if format.formatID == .appleLossless || format.formatID == .flac {
            // Their packets do not describe themselves: the stream's parameters come only from the cookie.
            throw AudioError(.invalidFileData, "the \(name) decoder needs the stream's magic cookie (none given)")
        }
        self.format = format
        outputFormat = .linearPCM(sampleRate: format.sampleRate, channels: channels, sample: .float32)
        context = avcodec_alloc_context3(codec)
        frame = av_frame_alloc()
        packet = av_packet_alloc()
        guard let context, frame != nil, packet != nil else {
            throw AudioError(.memoryFull, "libavcodec could not allocate a \(name) decoder")
        }
        context.pointee.sample_rate = Int32(format.sampleRate)
        // Every decoded frame out, the Opus pre-skip included: what to drop is the caller's
        // (the packet table's priming), as with Core Audio's decoders.
        context.pointee.flags2 |= Int32(AV_CODEC_FLAG2_SKIP_MANUAL)
        av_channel_layout_default(&context.pointee.ch_layout, Int32(channels))
        if !extradata.isEmpty {
            guard let memory = av_mallocz(extradata.count + Int(AV_INPUT_BUFFER_PADDING_SIZE)) else {
                throw AudioError(.memoryFull, "libavcodec could not allocate the \(name) decoder's configuration")
            }
            memory.copyMemory(from: extradata, byteCount: extradata.count)
            context.pointee.extradata = memory.assumingMemoryBound(to: UInt8.self)
            context.pointee.extradata_size = Int32(extradata.count)
        }
        let status = avcodec_open2(context, codec, nil)
        guard status >= 0 else {
            let code: AudioError.Code = extradata.isEmpty ? .unsupportedDataFormat : .invalidFileData
            throw AudioError.ffmpeg(status, code, "the \(name) decoder refused \(format)\(extradata.isEmpty ? "" : " with its \(extradata.count)-byte magic cookie")")
        }
        updateOutputFormat(rate: Int(context.pointee.sample_rate), channels: Int(context.pointee.ch_layout.nb_channels))
        // libavcodec learns HE-AAC's output rate from the first frame; until then say what the
        // configuration (explicit SBR) or the 'aach' format (SBR at twice the core rate) promises.
        if format.formatID == .mpeg4AAC || format.formatID == .mpeg4AAC_HE,
           let rate = Self.heAACOutputRate(config: extradata, format: format), Double(rate) != outputFormat.sampleRate {
            updateOutputFormat(rate: rate, channels: Int(outputFormat.channelsPerFrame))
        }
    }

    /// The output rate of an SBR stream: the AudioSpecificConfig's extension rate when it signals SBR
    /// (object type 5 or 29), else twice the core rate for an 'aach' format given at the core rate.
    static func heAACOutputRate(config: [UInt8], format: StreamFormat) -> Int? {
        let rates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]
        var bit = 0
        func read(_ count: Int) -> Int? {
            guard bit + count <= config.count * 8 else { return nil }
            var value = 0
            for _ in 0..<count {
                value = value << 1 | Int(config[bit / 8] >> (7 - bit % 8) & 1)
                bit += 1
            }
            return value
        }
        func rate() -> Int? {
            guard let index = read(4) else { return nil }
            if index == 15 { return read(24) }
            return index < rates.count ? rates[index] : nil
        }
        var core: Int?
        if var objectType = read(5) {
            if objectType == 31 { objectType = 32 + (read(6) ?? 0) }
            core = rate()
            if objectType == 5 || objectType == 29, read(4) != nil, let extended = rate() { return extended }
        }
        let coreRate = core ?? Int(format.sampleRate)
        if format.formatID == .mpeg4AAC_HE, Double(coreRate) == format.sampleRate { return 2 * coreRate }
        return nil
    }

    deinit {
        avcodec_free_context(&context)
        av_frame_free(&frame)
        av_packet_free(&packet)
    }

    /// Decodes one packet and appends what it yields to `output` (interleaved Float32 at
    /// `outputFormat`); returns the frames appended (0 while the decoder fills its delay).
    @discardableResult
    func decode(_ bytes: UnsafeRawBufferPointer, into output: inout [Float]) throws(AudioError) -> Int {
        guard try send(bytes) else { return 0 }
        return try receive(what: "packet \(packetIndex - 1) (\(bytes.count) bytes)") { frame throws(AudioError) in
            try FFmpegCodecs.appendInterleaved(frame, to: &output)
        }
    }

    /// Decodes one packet and appends what it yields to `output`, one array per channel
    /// (the file layer's canonical layout: no interleave on the way). Returns the frames appended.
    @discardableResult
    func decode(_ bytes: UnsafeRawBufferPointer, intoChannels output: inout [[Float]]) throws(AudioError) -> Int {
        guard try send(bytes) else { return 0 }
        return try receive(what: "packet \(packetIndex - 1) (\(bytes.count) bytes)") { frame throws(AudioError) in
            try FFmpegCodecs.appendChannels(frame, to: &output)
        }
    }

    /// The frames the decoder still holds at the end of the stream (none for these codecs
    /// in libavcodec 5.1, but a decoder with delay would hand them out here).
    @discardableResult
    func drain(into output: inout [Float]) throws(AudioError) -> Int {
        guard sendEndOfStream() else { return 0 }
        return try receive(what: "the end of the stream") { frame throws(AudioError) in try FFmpegCodecs.appendInterleaved(frame, to: &output) }
    }

    /// `drain(into:)` for per-channel output.
    @discardableResult
    func drain(intoChannels output: inout [[Float]]) throws(AudioError) -> Int {
        guard sendEndOfStream() else { return 0 }
        return try receive(what: "the end of the stream") { frame throws(AudioError) in try FFmpegCodecs.appendChannels(frame, to: &output) }
    }

    /// Forgets the stream so far (after a seek): the next packet decodes as a new start.
    func reset() {
        guard let context else { return }
        avcodec_flush_buffers(context)
    }

    /// Hands one packet to libavcodec; false once the decoder is gone.
    private func send(_ bytes: UnsafeRawBufferPointer) throws(AudioError) -> Bool {
        guard let context, let packet else { return false }
        defer { packetIndex += 1 }
        guard !bytes.isEmpty else {
            throw AudioError(.invalidFileData, "\(format.formatID) packet \(packetIndex) is empty")
        }
        guard bytes.count <= Int(Int32.max) - Int(AV_INPUT_BUFFER_PADDING_SIZE),
              av_new_packet(packet, Int32(bytes.count)) >= 0 else {
            throw AudioError(.memoryFull, "\(format.formatID) packet \(packetIndex): no memory for \(bytes.count) bytes")
        }
        defer { av_packet_unref(packet) }
        packet.pointee.data.update(from: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), count: bytes.count)
        let status = avcodec_send_packet(context, packet)
        guard status >= 0 else {
            throw AudioError.ffmpeg(status, .invalidFileData, "\(format.formatID) packet \(packetIndex) (\(bytes.count) bytes) does not decode")
        }
        return true
    }

    /// Tells libavcodec the stream has ended; false when there is nothing to drain.
    private func sendEndOfStream() -> Bool {
        guard let context else { return false }
        let status = avcodec_send_packet(context, nil)
        return status >= 0 || status == sonora_averror_eof()
    }

    /// `what` names the packet in an error; built only then (not per packet).
    private func receive(what: @autoclosure () -> String, _ append: (UnsafeMutablePointer<AVFrame>) throws(AudioError) -> Void) throws(AudioError) -> Int {
        guard let context, let frame else { return 0 }
        var appended = 0
        while true {
            let status = avcodec_receive_frame(context, frame)
            if status == sonora_averror_eagain() || status == sonora_averror_eof() { return appended }
            guard status >= 0 else {
                throw AudioError.ffmpeg(status, .invalidFileData, "\(format.formatID) \(what()) does not decode")
            }
            defer { av_frame_unref(frame) }
            updateOutputFormat(rate: Int(frame.pointee.sample_rate), channels: Int(frame.pointee.ch_layout.nb_channels))
            try append(frame)
            appended += Int(frame.pointee.nb_samples)
        }
    }

    private func updateOutputFormat(rate: Int, channels: Int) {
        guard rate > 0, channels > 0 else { return }
        if Double(rate) != outputFormat.sampleRate || channels != Int(outputFormat.channelsPerFrame) {
            outputFormat = .linearPCM(sampleRate: Double(rate), channels: channels, sample: .float32)
        }
    }
}
