import CFFmpeg
import Foundation
import SonoraCore

/// Packets of the containers Sonora does not parse itself — MP4/M4A (AAC, ALAC), MP3,
/// ADTS AAC, FLAC and Ogg (Opus, Vorbis) — found by demuxing the file once with
/// libavformat when it is opened. Packet bytes stay in the file (offsets from the
/// demuxer), except for Ogg, whose packets are split across and joined within pages:
/// there they are kept in memory (about the file's size; re-demuxing for every read
/// would cost a pass from the last seek point each time).
///
/// Priming and remainder come from the container as libavformat reports them: the MP4
/// edit list, the LAME/Xing header, Ogg Opus' pre-skip and end trimming (the skip-samples
/// side data of the first and last packets, and the packets' durations).
enum DemuxedPacketReader {

    /// libavformat's demuxer names for the types a hint can name.
    static func demuxerName(for type: AudioFileType) -> String? {
        switch type {
        case .m4a, .mp4: "mov"
        case .mp3: "mp3"
        case .adts: "aac"
        case .flac: "flac"
        case .ogg: "ogg"
        default: nil
        }
    }

    private static func fileType(demuxer: String, context: UnsafeMutablePointer<AVFormatContext>) -> AudioFileType? {
        switch demuxer {
        case "mov,mp4,m4a,3gp,3g2,mj2":
            let brand = av_dict_get(context.pointee.metadata, "major_brand", nil, 0).map { String(cString: $0.pointee.value) }
            return brand?.hasPrefix("M4A") == true ? .m4a : .mp4
        case "mp3": return .mp3
        case "aac": return .adts
        case "flac": return .flac
        case "ogg": return .ogg
        default: return nil
        }
    }

    private static func formatID(_ codec: AVCodecID) -> AudioFormatID? {
        switch codec {
        case AV_CODEC_ID_AAC: .mpeg4AAC
        case AV_CODEC_ID_ALAC: .appleLossless
        case AV_CODEC_ID_MP3: .mpegLayer3
        case AV_CODEC_ID_FLAC: .flac
        case AV_CODEC_ID_OPUS: .opus
        case AV_CODEC_ID_VORBIS: .vorbis
        default: nil
        }
    }

    /// The demuxer for `path`: the hint's when the content does not clearly say otherwise
    /// (AudioFileOpenURL's hint), else the one the content names.
    private static func inputFormat(_ path: String, typeHint: AudioFileType?) -> UnsafePointer<AVInputFormat>? {
        guard let hint = typeHint, let name = demuxerName(for: hint), let hinted = av_find_input_format(name) else { return nil }
        guard let handle = FileHandle(forReadingAtPath: path) else { return hinted }
        defer { try? handle.close() }
        var head = [UInt8]((try? handle.read(upToCount: 1 << 16)) ?? Data())
        let count = head.count
        head += [UInt8](repeating: 0, count: Int(AVPROBE_PADDING_SIZE))
        var score: Int32 = 0
        let probed: UnsafePointer<AVInputFormat>? = head.withUnsafeMutableBufferPointer { buffer in
            "".withCString { empty in
                var probe = AVProbeData(filename: empty, buf: buffer.baseAddress, buf_size: Int32(count), mime_type: nil)
                return av_probe_input_format3(&probe, 1, &score)
            }
        }
        // The content decides when it is sure of another container.
        if let probed, probed != hinted, score > AVPROBE_SCORE_MAX / 4 { return probed }
        return hinted
    }

    /// Demuxes `path` into a packet index; `type` is the container found.
    static func open(_ path: String, typeHint: AudioFileType?) throws(AudioError) -> (index: PacketIndex, type: AudioFileType) {
        // Its warnings ("moov atom not found" …) would reach stderr; the errors carry FFmpeg's message.
        FFmpegLibrary.silenceLogging()
        var context: UnsafeMutablePointer<AVFormatContext>?
        var status = avformat_open_input(&context, path, inputFormat(path, typeHint: typeHint), nil)
        if status < 0, typeHint != nil {
            status = avformat_open_input(&context, path, nil, nil)
        }
        guard status >= 0, let opened = context else {
            throw AudioError(.unsupportedFileType, "\(path): not an audio file Sonora reads (\(FFmpegLibrary.message(status)))")
        }
        defer { avformat_close_input(&context) }
        let demuxer = String(cString: opened.pointee.iformat.pointee.name)
        guard let type = fileType(demuxer: demuxer, context: opened) else {
            throw AudioError(.unsupportedFileType, "\(path): a \(demuxer) file, not a container Sonora reads")
        }
        status = avformat_find_stream_info(opened, nil)
        guard status >= 0 else {
            throw AudioError(.invalidFileData, "\(path): \(type) file cannot be read (\(FFmpegLibrary.message(status)))")
        }
        let streamIndex = av_find_best_stream(opened, AVMEDIA_TYPE_AUDIO, -1, -1, nil, 0)
        guard streamIndex >= 0, let stream = opened.pointee.streams[Int(streamIndex)] else {
            throw AudioError(.invalidFileData, "\(path): a \(type) file with no audio stream")
        }
        let parameters = stream.pointee.codecpar.pointee
        guard var id = formatID(parameters.codec_id) else {
            throw AudioError(.unsupportedDataFormat, "\(path): \(String(cString: avcodec_get_name(parameters.codec_id))) audio in a \(type) file is not a format Sonora handles")
        }
        let sampleRate = Int(parameters.sample_rate)
        let channels = Int(parameters.ch_layout.nb_channels)
        guard sampleRate > 0, channels > 0 else {
            throw AudioError(.invalidFileData, "\(path): \(id) stream with \(sampleRate) Hz and \(channels) channels")
        }
        let extradata = parameters.extradata.map { [UInt8](UnsafeBufferPointer(start: $0, count: Int(parameters.extradata_size))) } ?? []
        // HE-AAC (SBR, and PS in v2): Core Audio's 'aach', 2048 frames a packet at the output rate
        // libavcodec reports — signalled by the AudioSpecificConfig's object type (5 or 29), by
        // the profile, or implicitly by an output rate twice the config's core rate.
        if id == .mpeg4AAC && (parameters.profile == FF_PROFILE_AAC_HE || parameters.profile == FF_PROFILE_AAC_HE_V2
            || [5, 29].contains(extradata.first.map { $0 >> 3 } ?? 0)
            || (extradata.count >= 2 && coreRate(extradata).map { $0 * 2 == sampleRate } == true)) {
            id = .mpeg4AAC_HE
        }
        var format = StreamFormat.compressed(id, sampleRate: Double(sampleRate), channels: channels)
        switch id {
        case .mpegLayer3 where parameters.frame_size > 0: format.framesPerPacket = UInt32(parameters.frame_size)
        case .appleLossless:
            if let config = try? MagicCookie.alacSpecificConfig(fromCookie: extradata) {
                format.framesPerPacket = config[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                // Core Audio says the source depth in the flags (kAppleLosslessFormatFlag_16BitSourceData = 1 …).
                let depths: [UInt8: UInt32] = [16: 1, 20: 2, 24: 3, 32: 4]
                format.formatFlags = AudioFormatFlags(rawValue: depths[config[5]] ?? 0)
            }
        case .flac, .opus, .vorbis: format.framesPerPacket = 0  // frames vary per packet: descriptions carry them
        default: break
        }
        let index = try PacketIndex(path: path, format: format, inMemory: type == .ogg)
        index.cookie = MagicCookie.cookie(for: id == .mpeg4AAC_HE ? .mpeg4AAC : id, codecConfiguration: extradata, averageBitRate: Int(parameters.bit_rate))

        guard let packet = av_packet_alloc() else { throw AudioError(.memoryFull, "\(path): no memory for a packet") }
        defer {
            var unowned: UnsafeMutablePointer<AVPacket>? = packet
            av_packet_free(&unowned)
        }
        let timeBase = stream.pointee.time_base
        let sampleBase = AVRational(num: 1, den: Int32(sampleRate))
        var priming: Int64 = 0
        var discard: Int64 = 0
        var durationSum: Int64 = 0
        let nominal = Int(format.framesPerPacket)
        while true {
            status = av_read_frame(opened, packet)
            if status == sonora_averror_eof() { break }
            guard status >= 0 else {
                throw AudioError(.invalidFileData, "\(path): \(type) file unreadable after \(index.packetCount) packets (\(FFmpegLibrary.message(status)))")
            }
            defer { av_packet_unref(packet) }
            guard packet.pointee.stream_index == streamIndex, packet.pointee.size > 0, let data = packet.pointee.data else { continue }
            var size = Int(packet.pointee.size)
            var offset = packet.pointee.pos
            var start = UnsafeRawPointer(data)
            if type == .adts {
                // Raw AAC without the ADTS header, as Core Audio's packets are.
                guard size >= 7, data[0] == 0xFF, data[1] & 0xF0 == 0xF0 else {
                    throw AudioError(.invalidFileData, "\(path): ADTS frame \(index.packetCount) has no sync word")
                }
                let header = data[1] & 1 == 1 ? 7 : 9
                if index.cookie == nil { index.cookie = adtsCookie(data) }
                size -= header
                offset += Int64(header)
                start += header
            }
            guard type == .ogg || offset >= 0 else {
                throw AudioError(.invalidFileData, "\(path): packet \(index.packetCount) has no position in the file")
            }
            var frames = packet.pointee.duration > 0 ? Int(av_rescale_q(packet.pointee.duration, timeBase, sampleBase)) : nominal
            durationSum += Int64(frames)
            if nominal > 0 { frames = nominal }
            var sideSize = 0
            if let skip = av_packet_get_side_data(packet, AV_PKT_DATA_SKIP_SAMPLES, &sideSize), sideSize >= 8 {
                priming += Int64(UInt32(skip[0]) | UInt32(skip[1]) << 8 | UInt32(skip[2]) << 16 | UInt32(skip[3]) << 24)
                discard += Int64(UInt32(skip[4]) | UInt32(skip[5]) << 8 | UInt32(skip[6]) << 16 | UInt32(skip[7]) << 24)
            }
            if index.packetCount == 0 { index.dataOffset = max(offset, 0) }
            index.append(offset: offset, size: size, frames: frames, bytes: UnsafeRawBufferPointer(start: start, count: size))
        }
        guard index.packetCount > 0 else { throw AudioError(.invalidFileData, "\(path): a \(type) file with no audio packets") }
        if nominal == 0, discard > 0, index.packetCount > 1, durationSum > 0 {
            // Variable-frame formats: the demuxer has already shortened the last packet's
            // duration by the end discard (Ogg's last granule); the packet decodes to both.
            let last = index.packetCount - 1
            index.setFrames(Int32(clamping: Int64(index.frames[last]) + discard), at: last)
            durationSum += discard
        }
        // Valid frames: what the packets' (container-trimmed) durations cover, less priming
        // and the end discard the container announces.
        let valid = max(durationSum - priming - discard, 0)
        let total = index.totalFrames
        let remainder = max(total - priming - valid, 0)
        index.info = AudioFilePacketTableInfo(validFrames: valid, primingFrames: Int32(clamping: priming), remainderFrames: Int32(clamping: remainder))
        return (index, type)
    }

    /// The sampling rate an AudioSpecificConfig names (its 4-bit index; nil for the escape form).
    private static func coreRate(_ config: [UInt8]) -> Int? {
        let rates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]
        let index = Int((config[0] & 0x07) << 1 | config[1] >> 7)
        return index < rates.count ? rates[index] : nil
    }

    /// Core Audio's AAC cookie (an esds) for an ADTS stream, from its first frame header.
    private static func adtsCookie(_ header: UnsafeMutablePointer<UInt8>) -> [UInt8]? {
        let objectType = (header[2] >> 6) + 1
        let frequencyIndex = (header[2] >> 2) & 0x0F
        let channelConfiguration = (header[2] & 1) << 2 | header[3] >> 6
        let config: [UInt8] = [objectType << 3 | frequencyIndex >> 1, (frequencyIndex & 1) << 7 | channelConfiguration << 3]
        return MagicCookie.cookie(for: .mpeg4AAC, codecConfiguration: config)
    }
}
