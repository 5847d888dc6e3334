/// Buffer sample formats (AL_FORMAT_MONO8 … and AL_EXT_float32's FLOAT32 formats).
/// 8-bit samples are unsigned (128 is silence), 16-bit signed native-endian, float32 in −1…1.
public enum ALFormat: Sendable, Hashable, CaseIterable {
    case mono8, mono16, stereo8, stereo16, monoFloat32, stereoFloat32

    public var channels: Int {
        switch self {
        case .mono8, .mono16, .monoFloat32: 1
        case .stereo8, .stereo16, .stereoFloat32: 2
        }
    }

    /// Bits per sample (AL_BITS).
    public var bits: Int {
        switch self {
        case .mono8, .stereo8: 8
        case .mono16, .stereo16: 16
        case .monoFloat32, .stereoFloat32: 32
        }
    }

    /// Bytes per frame (all channels).
    public var bytesPerFrame: Int { channels * bits / 8 }

    /// The OpenAL enum value (AL_FORMAT_MONO8 0x1100 …, AL_FORMAT_MONO_FLOAT32 0x10010).
    public var alValue: Int32 {
        switch self {
        case .mono8: 0x1100
        case .mono16: 0x1101
        case .stereo8: 0x1102
        case .stereo16: 0x1103
        case .monoFloat32: 0x10010
        case .stereoFloat32: 0x10011
        }
    }

    /// The format with OpenAL enum value `value`, or nil (AL_INVALID_ENUM for a caller).
    public init?(alValue value: Int32) {
        guard let format = Self.allCases.first(where: { $0.alValue == value }) else { return nil }
        self = format
    }
}
