import CSndfile
import SonoraCore

/// A container format (`AudioFileTypeID`), with Core Audio's codes where Core Audio has one.
public struct AudioFileType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: FourCharCode
    public init(rawValue: FourCharCode) { self.rawValue = rawValue }

    public static let wave = AudioFileType(rawValue: "WAVE")
    public static let aiff = AudioFileType(rawValue: "AIFF")
    public static let aifc = AudioFileType(rawValue: "AIFC")
    public static let caf = AudioFileType(rawValue: "caff")
    public static let flac = AudioFileType(rawValue: "flac")
    public static let rf64 = AudioFileType(rawValue: "RF64")
    public static let mp3 = AudioFileType(rawValue: "MPG3")
    /// Ogg (Vorbis or Opus); Core Audio has no code for it, this one is Sonora's.
    public static let ogg = AudioFileType(rawValue: "OggS")
    /// MPEG-4 audio file (kAudioFileM4AType): AAC or Apple Lossless in an `.m4a`.
    public static let m4a = AudioFileType(rawValue: "m4af")
    /// MPEG-4 file (kAudioFileMPEG4Type).
    public static let mp4 = AudioFileType(rawValue: "mp4f")
    /// Raw AAC in ADTS frames (kAudioFileAAC_ADTSType).
    public static let adts = AudioFileType(rawValue: "adts")

    public var description: String { rawValue.description }

    /// The type a path's extension names, if any (`.wav`, `.aif`, `.caf` …).
    public init?(pathExtension: String) {
        switch pathExtension.lowercased() {
        case "wav", "wave": self = .wave
        case "aif", "aiff": self = .aiff
        case "aifc": self = .aifc
        case "caf", "caff": self = .caf
        case "flac": self = .flac
        case "rf64": self = .rf64
        case "mp3": self = .mp3
        case "ogg", "oga", "opus": self = .ogg
        case "m4a": self = .m4a
        case "mp4", "m4b": self = .mp4
        case "aac", "adts": self = .adts
        default: return nil
        }
    }

    var sndfileMajor: Int32? {
        switch self {
        case .wave: Int32(SF_FORMAT_WAV)
        case .aiff, .aifc: Int32(SF_FORMAT_AIFF)
        case .caf: Int32(SF_FORMAT_CAF)
        case .flac: Int32(SF_FORMAT_FLAC)
        case .rf64: Int32(SF_FORMAT_RF64)
        case .mp3: Int32(SF_FORMAT_MPEG)
        case .ogg: Int32(SF_FORMAT_OGG)
        default: nil
        }
    }

    init?(sndfileMajor major: Int32) {
        switch major {
        case Int32(SF_FORMAT_WAV), Int32(SF_FORMAT_WAVEX): self = .wave
        case Int32(SF_FORMAT_AIFF): self = .aiff
        case Int32(SF_FORMAT_CAF): self = .caf
        case Int32(SF_FORMAT_FLAC): self = .flac
        case Int32(SF_FORMAT_RF64): self = .rf64
        case Int32(SF_FORMAT_MPEG): self = .mp3
        case Int32(SF_FORMAT_OGG): self = .ogg
        default: return nil
        }
    }
}
