/// The kind of data a stream carries (`mFormatID` of an `AudioStreamBasicDescription`).
/// Values are Core Audio's four-character codes.
@frozen
public struct AudioFormatID: RawRepresentable, Hashable, Sendable, BitwiseCopyable {
    public var rawValue: FourCharCode

    @inlinable
    public init(rawValue: FourCharCode) { self.rawValue = rawValue }

    public static let linearPCM = AudioFormatID(rawValue: "lpcm")
    /// Apple IMA ADPCM: 64 frames in 34 bytes per channel.
    public static let appleIMA4 = AudioFormatID(rawValue: "ima4")
    public static let appleLossless = AudioFormatID(rawValue: "alac")
    public static let mpeg4AAC = AudioFormatID(rawValue: "aac ")
    /// MPEG-4 High Efficiency AAC (AAC-LC core + SBR): 2048 output frames per packet at twice the core rate.
    public static let mpeg4AAC_HE = AudioFormatID(rawValue: "aach")
    public static let mpegLayer3 = AudioFormatID(rawValue: ".mp3")
    public static let mpegLayer1 = AudioFormatID(rawValue: ".mp1")
    public static let mpegLayer2 = AudioFormatID(rawValue: ".mp2")
    public static let flac = AudioFormatID(rawValue: "flac")
    public static let opus = AudioFormatID(rawValue: "opus")
    public static let uLaw = AudioFormatID(rawValue: "ulaw")
    public static let aLaw = AudioFormatID(rawValue: "alaw")
    /// Ogg Vorbis. Core Audio has no constant for it; this code is Sonora's.
    public static let vorbis = AudioFormatID(rawValue: "vorb")

    /// Frames in one packet where the format fixes it, else nil (variable or unknown).
    public var framesPerPacket: UInt32? {
        switch self {
        case .linearPCM, .uLaw, .aLaw: 1
        case .appleIMA4: 64
        case .appleLossless: 4096
        case .mpeg4AAC: 1024
        case .mpeg4AAC_HE: 2048
        case .mpegLayer3, .mpegLayer2: 1152
        case .mpegLayer1: 384
        default: nil
        }
    }
}

extension AudioFormatID: CustomStringConvertible {
    public var description: String { rawValue.description }
}
