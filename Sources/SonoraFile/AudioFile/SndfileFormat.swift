import CSndfile
import SonoraCore

/// Translation between libsndfile's format words and `StreamFormat`.
enum SndfileFormat {
    static let typeMask = Int32(SF_FORMAT_TYPEMASK)
    static let subMask = Int32(SF_FORMAT_SUBMASK)
    static let endianMask = Int32(0x3000_0000)

    /// The StreamFormat a file's data has, as Core Audio would describe it.
    static func streamFormat(_ info: SF_INFO) -> StreamFormat {
        let rate = Double(info.samplerate)
        let channels = Int(info.channels)
        let bigEndian = (info.format & endianMask) == Int32(SF_ENDIAN_BIG)
            || ((info.format & endianMask) == 0 && (info.format & typeMask) == Int32(SF_FORMAT_AIFF))
        if (info.format & typeMask) == Int32(SF_FORMAT_FLAC) {
            // FLAC's subformat names the decoded depth; the data in the file is FLAC.
            return .compressed(.flac, sampleRate: rate, channels: channels)
        }
        switch info.format & subMask {
        case Int32(SF_FORMAT_PCM_U8): return .linearPCM(sampleRate: rate, channels: channels, sample: .uint8)
        case Int32(SF_FORMAT_PCM_S8):
            var format = StreamFormat.linearPCM(sampleRate: rate, channels: channels, sample: .uint8)
            format.formatFlags.insert(.isSignedInteger)
            return format
        case Int32(SF_FORMAT_PCM_16): return .linearPCM(sampleRate: rate, channels: channels, sample: .int16, bigEndian: bigEndian)
        case Int32(SF_FORMAT_PCM_24): return .linearPCM(sampleRate: rate, channels: channels, sample: .int24, bigEndian: bigEndian)
        case Int32(SF_FORMAT_PCM_32): return .linearPCM(sampleRate: rate, channels: channels, sample: .int32, bigEndian: bigEndian)
        case Int32(SF_FORMAT_FLOAT): return .linearPCM(sampleRate: rate, channels: channels, sample: .float32, bigEndian: bigEndian)
        case Int32(SF_FORMAT_DOUBLE): return .linearPCM(sampleRate: rate, channels: channels, sample: .float64, bigEndian: bigEndian)
        case Int32(SF_FORMAT_IMA_ADPCM): return .compressed(.appleIMA4, sampleRate: rate, channels: channels)
        case Int32(SF_FORMAT_ULAW): return .compressed(.uLaw, sampleRate: rate, channels: channels)
        case Int32(SF_FORMAT_ALAW): return .compressed(.aLaw, sampleRate: rate, channels: channels)
        case Int32(SF_FORMAT_VORBIS): return .compressed(.vorbis, sampleRate: rate, channels: channels)
        case Int32(SF_FORMAT_OPUS): return .compressed(.opus, sampleRate: rate, channels: channels)
        case Int32(SF_FORMAT_ALAC_16), Int32(SF_FORMAT_ALAC_20), Int32(SF_FORMAT_ALAC_24),
            Int32(SF_FORMAT_ALAC_32):
            return .compressed(.appleLossless, sampleRate: rate, channels: channels)
        case Int32(SF_FORMAT_MPEG_LAYER_III): return .compressed(.mpegLayer3, sampleRate: rate, channels: channels)
        default:
            if (info.format & typeMask) == Int32(SF_FORMAT_FLAC) {
                return .compressed(.flac, sampleRate: rate, channels: channels)
            }
            return .compressed(AudioFormatID(rawValue: "????"), sampleRate: rate, channels: channels)
        }
    }

    /// The libsndfile format word for writing `format` into a `type` file, or nil if libsndfile cannot.
    static func word(for format: StreamFormat, in type: AudioFileType) -> Int32? {
        guard let major = type.sndfileMajor else { return nil }
        var sub: Int32
        if format.isLinearPCM {
            switch (format.pcmSample, format.isSignedInteger) {
            case (.uint8?, false): sub = Int32(SF_FORMAT_PCM_U8)
            case (.uint8?, true): sub = Int32(SF_FORMAT_PCM_S8)
            case (.int16?, _): sub = Int32(SF_FORMAT_PCM_16)
            case (.int24?, _): sub = Int32(SF_FORMAT_PCM_24)
            case (.int32?, _): sub = Int32(SF_FORMAT_PCM_32)
            case (.float32?, _): sub = Int32(SF_FORMAT_FLOAT)
            case (.float64?, _): sub = Int32(SF_FORMAT_DOUBLE)
            default: return nil
            }
        } else {
            switch format.formatID {
            case .flac: sub = Int32(SF_FORMAT_PCM_16)
            case .vorbis: sub = Int32(SF_FORMAT_VORBIS)
            case .opus: sub = Int32(SF_FORMAT_OPUS)
            case .appleLossless: sub = Int32(SF_FORMAT_ALAC_16)
            case .uLaw: sub = Int32(SF_FORMAT_ULAW)
            case .aLaw: sub = Int32(SF_FORMAT_ALAW)
            default: return nil
            }
        }
        var endian: Int32 = 0
        if format.isLinearPCM && format.pcmSample != .uint8 {
            endian = format.isBigEndian ? Int32(SF_ENDIAN_BIG) : Int32(SF_ENDIAN_LITTLE)
            if type == .flac { endian = 0 }
        }
        var word = major | sub | endian
        var info = SF_INFO(frames: 0, samplerate: Int32(format.sampleRate), channels: Int32(format.channelsPerFrame), format: word, sections: 0, seekable: 0)
        if sf_format_check(&info) == 0 {
            // Some containers fix their byte order; try the file's default.
            word = major | sub
            info.format = word
            guard sf_format_check(&info) != 0 else { return nil }
        }
        // What libsndfile will write must read back as the format asked for: a type that cannot
        // hold `format` refuses it ('fmt?' from create) instead of writing something else.
        // The one exception: a FLAC file encodes the linear PCM it is given (its depth), which
        // recordings and renders to .flac rely on; `writableFormats` does not list it.
        if !(type == .flac && format.isLinearPCM) {
            var written = streamFormat(info)
            written.sampleRate = format.sampleRate
            guard comparable(written) == comparable(format) else { return nil }
        }
        return word
    }

    /// Byte order means nothing for one-byte samples: 8-bit formats compare without it.
    private static func comparable(_ format: StreamFormat) -> StreamFormat {
        var format = format
        if format.isLinearPCM && format.bitsPerChannel == 8 { format.formatFlags.remove(.isBigEndian) }
        return format
    }
}
