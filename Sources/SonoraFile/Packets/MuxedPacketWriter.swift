import CFFmpeg
import Foundation
import SonoraCore

/// Compressed packets into the containers libavformat writes for Sonora: MP4/M4A (AAC,
/// ALAC; the `ipod` muxer for .m4a), ADTS AAC, MP3 and Ogg Opus. The magic cookie becomes
/// the stream's extradata (an esds' AudioSpecificConfig, an ALAC atom, an OpusHead).
/// Priming is given the way libavcodec's encoders give it, so the muxers write it where
/// each container keeps it: the first packet's timestamp is −priming (the MP4 edit list,
/// the Ogg granule positions), `initial_padding`/`trailing_padding` (the LAME header), and
/// the last packet's duration is shortened by the remainder (the MP4 `stts`, the last Ogg
/// granule).
final class MuxedPacketWriter: PacketWriter {
    let format: StreamFormat
    private let path: String
    private var context: UnsafeMutablePointer<AVFormatContext>?
    private let stream: UnsafeMutablePointer<AVStream>
    private let packet: UnsafeMutablePointer<AVPacket>
    private(set) var packetCount = 0
    private(set) var totalFrames: Int64 = 0
    private(set) var byteCount: Int64 = 0
    private(set) var maximumPacketSize = 0
    private var headerWritten = false
    /// The packets, kept until `finish`: their timestamps depend on the priming and the
    /// last one's duration on the remainder, and the packet table may be set at any time
    /// before closing (as Core Audio allows). MP4's muxer keeps its index in memory too.
    private var pending: [UInt8] = []
    private var pendingSizes: [Int] = []
    private var pendingFrames: [Int] = []
    private var nextTimestamp: Int64 = 0
    private let isMP3: Bool
    private let isMP4: Bool
    private var info: AudioFilePacketTableInfo?

    static func muxerName(for type: AudioFileType) -> String? {
        switch type {
        case .m4a: "ipod"
        case .mp4: "mp4"
        case .adts: "adts"
        case .mp3: "mp3"
        case .ogg: "ogg"
        default: nil
        }
    }

    static func codecID(_ format: AudioFormatID) -> AVCodecID? {
        switch format {
        case .mpeg4AAC, .mpeg4AAC_HE: AV_CODEC_ID_AAC
        case .appleLossless: AV_CODEC_ID_ALAC
        case .mpegLayer3: AV_CODEC_ID_MP3
        case .flac: AV_CODEC_ID_FLAC
        case .opus: AV_CODEC_ID_OPUS
        default: nil
        }
    }

    init(path: String, type: AudioFileType, format: StreamFormat, cookie: [UInt8]?) throws(AudioError) {
        guard let muxer = Self.muxerName(for: type), let codec = Self.codecID(format.formatID) else {
            throw AudioError(.unsupportedDataFormat, "\(path): a \(type) file cannot hold \(format)")
        }
        FFmpegLibrary.silenceLogging()
        self.path = path
        self.format = format
        isMP3 = type == .mp3
        isMP4 = type == .m4a || type == .mp4
        var created: UnsafeMutablePointer<AVFormatContext>?
        var status = avformat_alloc_output_context2(&created, nil, muxer, path)
        guard status >= 0, let context = created else {
            throw AudioError(.unspecified, "\(path): libavformat has no \(muxer) muxer (\(FFmpegLibrary.message(status)))")
        }
        self.context = context
        guard let stream = avformat_new_stream(context, nil), let packet = av_packet_alloc() else {
            avformat_free_context(context)
            throw AudioError(.memoryFull, "\(path): no memory for a stream")
        }
        self.stream = stream
        self.packet = packet
        let parameters = stream.pointee.codecpar!
        parameters.pointee.codec_type = AVMEDIA_TYPE_AUDIO
        parameters.pointee.codec_id = codec
        parameters.pointee.sample_rate = Int32(format.sampleRate)
        av_channel_layout_default(&parameters.pointee.ch_layout, Int32(format.channelsPerFrame))
        parameters.pointee.frame_size = Int32(format.framesPerPacket)
        stream.pointee.time_base = AVRational(num: 1, den: Int32(format.sampleRate))
        if let cookie, !cookie.isEmpty {
            let extradata: [UInt8]
            let configured = format.formatID == .mpeg4AAC_HE ? AudioFormatID.mpeg4AAC : format.formatID
            do { extradata = try MagicCookie.codecConfiguration(for: configured, cookie: cookie) } catch {
                abandon()
                throw AudioError(error.code, "\(path): \(error.message)")
            }
            guard let buffer = av_mallocz(extradata.count + Int(AV_INPUT_BUFFER_PADDING_SIZE))?.assumingMemoryBound(to: UInt8.self) else {
                abandon()
                throw AudioError(.memoryFull, "\(path): no memory for the magic cookie")
            }
            extradata.withUnsafeBufferPointer { buffer.update(from: $0.baseAddress!, count: extradata.count) }
            parameters.pointee.extradata = buffer
            parameters.pointee.extradata_size = Int32(extradata.count)
        } else if format.formatID == .appleLossless || format.formatID == .opus || ((format.formatID == .mpeg4AAC || format.formatID == .mpeg4AAC_HE) && type != .mp3) {
            abandon()
            throw AudioError(.unsupportedDataFormat, "\(path): \(format.formatID) in a \(type) file needs its magic cookie")
        }
        status = avio_open(&context.pointee.pb, path, AVIO_FLAG_WRITE)
        guard status >= 0 else {
            abandon()
            throw AudioError(.filePermission, "\(path): cannot create (\(FFmpegLibrary.message(status)))")
        }
    }

    deinit { abandon() }

    /// Frees everything without finishing the file (the caller removes it).
    func abandon() {
        guard let context else { return }
        if context.pointee.pb != nil { avio_closep(&context.pointee.pb) }
        avformat_free_context(context)
        self.context = nil
        var unowned: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&unowned)
    }

    private func writeHeader() throws(AudioError) {
        guard !headerWritten, let context else { return }
        let priming = Int64(info?.primingFrames ?? 0)
        stream.pointee.codecpar.pointee.initial_padding = Int32(priming)
        stream.pointee.codecpar.pointee.trailing_padding = info?.remainderFrames ?? 0
        var options: OpaquePointer?
        if isMP4 {
            // The edit list in samples, not the default 1/1000 s: at milliseconds its duration
            // rounds, and FFmpeg 5.1 then stretches the last packet to match (a frame too many).
            av_dict_set(&options, "movie_timescale", String(Int(format.sampleRate)), 0)
        }
        defer { av_dict_free(&options) }
        let status = avformat_write_header(context, &options)
        guard status >= 0 else {
            throw AudioError(.unsupportedDataFormat, "\(path): libavformat refuses \(format) (\(FFmpegLibrary.message(status)))")
        }
        nextTimestamp = -priming
        headerWritten = true
    }

    func write(_ bytes: [UInt8], sizes: [Int], frames: [Int]) throws(AudioError) {
        pending += bytes
        pendingSizes += sizes
        pendingFrames += frames
        packetCount += sizes.count
        byteCount += Int64(bytes.count)
        totalFrames += frames.reduce(Int64(0)) { $0 + Int64($1) }
        maximumPacketSize = max(maximumPacketSize, sizes.max() ?? 0)
    }

    private func mux(_ bytes: ArraySlice<UInt8>, frames: Int, skip: Int = 0, discard: Int = 0) throws(AudioError) {
        guard let context else { throw AudioError(.fileNotOpen, "\(path) is closed") }
        var status = av_new_packet(packet, Int32(bytes.count))
        guard status >= 0 else { throw AudioError(.memoryFull, "\(path): no memory for a packet of \(bytes.count) bytes") }
        if skip > 0 || discard > 0, let side = av_packet_new_side_data(packet, AV_PKT_DATA_SKIP_SAMPLES, 10) {
            for index in 0..<4 {
                side[index] = UInt8(truncatingIfNeeded: skip >> (8 * index))
                side[4 + index] = UInt8(truncatingIfNeeded: discard >> (8 * index))
            }
            side[8] = 0
            side[9] = 0
        }
        bytes.withUnsafeBufferPointer { packet.pointee.data.update(from: $0.baseAddress!, count: bytes.count) }
        let timeBase = AVRational(num: 1, den: Int32(format.sampleRate))
        packet.pointee.pts = av_rescale_q(nextTimestamp, timeBase, stream.pointee.time_base)
        packet.pointee.dts = packet.pointee.pts
        packet.pointee.duration = av_rescale_q(Int64(frames), timeBase, stream.pointee.time_base)
        packet.pointee.stream_index = stream.pointee.index
        packet.pointee.flags |= AV_PKT_FLAG_KEY
        nextTimestamp += Int64(frames)
        status = av_write_frame(context, packet)
        av_packet_unref(packet)
        guard status >= 0 else {
            throw AudioError(.unspecified, "\(path): cannot write packet \(packetCount) (\(FFmpegLibrary.message(status)))")
        }
    }

    /// MP4 has no index until its `moov` is written at the end, and the packets are
    /// timestamped only then (see `pending`): these files become valid when closed.
    func writeValidSoFar(info: AudioFilePacketTableInfo?) throws(AudioError) -> Bool { false }

    func finish(info: AudioFilePacketTableInfo?) throws(AudioError) {
        defer { abandon() }
        self.info = info
        try writeHeader()
        // The remainder comes off the last packet's duration (what ends the MP4 edit and the last Ogg granule).
        let remainder = Int(info?.remainderFrames ?? 0)
        var at = 0
        for index in pendingSizes.indices {
            let size = pendingSizes[index]
            let frames = index == pendingSizes.count - 1 ? max(pendingFrames[index] - remainder, 0) : pendingFrames[index]
            // MP3: priming and remainder also as the skip-samples side data demuxers give (the
            // LAME header takes them from there). Not for MP4, where the edit list has them and the
            // side data moved the end by a frame.
            let skip = index == 0 && isMP3 ? Int(info?.primingFrames ?? 0) : 0
            let discard = index == pendingSizes.count - 1 && isMP3 ? remainder : 0
            try mux(pending[at..<at + size], frames: frames, skip: skip, discard: discard)
            at += size
        }
        pending = []
        guard let context else { return }
        let status = av_write_trailer(context)
        guard status >= 0 else {
            throw AudioError(.unspecified, "\(path): cannot finish the file (\(FFmpegLibrary.message(status)))")
        }
    }
}
