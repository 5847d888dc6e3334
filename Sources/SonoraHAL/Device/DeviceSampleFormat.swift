import CALSA
import SonoraCore

/// A sample format a device can be driven in: ALSA's PCM formats that Sonora converts
/// to and from canonical Float at the device edge.
public enum DeviceSampleFormat: String, CaseIterable, Hashable, Sendable {
    case s16LE = "S16_LE", s16BE = "S16_BE"
    /// 24 bits in the low three bytes of a 4-byte container.
    case s24LE = "S24_LE", s24BE = "S24_BE"
    /// 24 bits packed in 3 bytes.
    case s24_3LE = "S24_3LE", s24_3BE = "S24_3BE"
    case s32LE = "S32_LE", s32BE = "S32_BE"
    case float32LE = "FLOAT_LE", float32BE = "FLOAT_BE"

    /// Preference when the caller does not ask for one: the canonical float first (no
    /// conversion), then the widest integers, native byte order before swapped.
    public static let preferenceOrder: [DeviceSampleFormat] = [
        .float32LE, .s32LE, .s24LE, .s24_3LE, .s16LE, .float32BE, .s32BE, .s24BE, .s24_3BE, .s16BE,
    ]

    /// Accepts ALSA's names in any case, plus `FLOAT` / `S16` etc. meaning little-endian.
    public init?(name: String) {
        let upper = name.uppercased()
        if let format = DeviceSampleFormat(rawValue: upper) { self = format; return }
        let aliases: [String: DeviceSampleFormat] = [
            "S16": .s16LE, "S24": .s24LE, "S24_3": .s24_3LE, "S32": .s32LE, "FLOAT": .float32LE,
            "FLOAT32": .float32LE, "F32": .float32LE,
        ]
        guard let format = aliases[upper] else { return nil }
        self = format
    }

    public var alsaFormat: snd_pcm_format_t {
        switch self {
        case .s16LE: SND_PCM_FORMAT_S16_LE
        case .s16BE: SND_PCM_FORMAT_S16_BE
        case .s24LE: SND_PCM_FORMAT_S24_LE
        case .s24BE: SND_PCM_FORMAT_S24_BE
        case .s24_3LE: SND_PCM_FORMAT_S24_3LE
        case .s24_3BE: SND_PCM_FORMAT_S24_3BE
        case .s32LE: SND_PCM_FORMAT_S32_LE
        case .s32BE: SND_PCM_FORMAT_S32_BE
        case .float32LE: SND_PCM_FORMAT_FLOAT_LE
        case .float32BE: SND_PCM_FORMAT_FLOAT_BE
        }
    }

    public init?(alsaFormat: snd_pcm_format_t) {
        guard let format = Self.allCases.first(where: { $0.alsaFormat == alsaFormat }) else { return nil }
        self = format
    }

    /// The sample type SonoraDSP's `SampleConversion` reads and writes.
    public var sample: PCMSample {
        switch self {
        case .s16LE, .s16BE: .int16
        case .s24LE, .s24BE: .int24In32
        case .s24_3LE, .s24_3BE: .int24
        case .s32LE, .s32BE: .int32
        case .float32LE, .float32BE: .float32
        }
    }

    public var isBigEndian: Bool {
        switch self {
        case .s16BE, .s24BE, .s24_3BE, .s32BE, .float32BE: true
        default: false
        }
    }

    /// Bytes one sample occupies.
    public var byteCount: Int {
        switch self {
        case .s16LE, .s16BE: 2
        case .s24_3LE, .s24_3BE: 3
        default: 4
        }
    }

    /// The name ALSA uses for a format Sonora may not support (for explanations).
    static func name(of format: snd_pcm_format_t) -> String {
        guard let name = snd_pcm_format_name(format) else { return "format \(format.rawValue)" }
        return String(cString: name)
    }
}

/// How samples reach a device's buffer.
public enum DeviceAccess: String, CaseIterable, Hashable, Sendable {
    case mmapNonInterleaved = "mmap-noninterleaved"
    case mmapInterleaved = "mmap-interleaved"
    case readWriteInterleaved = "rw-interleaved"
    case readWriteNonInterleaved = "rw-noninterleaved"

    /// mmap first (no copy through the kernel or plugin), non-interleaved first (no
    /// (de)interleaving); read/write only for PCMs that have no mmap.
    public static let preferenceOrder: [DeviceAccess] = [
        .mmapNonInterleaved, .mmapInterleaved, .readWriteInterleaved, .readWriteNonInterleaved,
    ]

    public var alsaAccess: snd_pcm_access_t {
        switch self {
        case .mmapNonInterleaved: SND_PCM_ACCESS_MMAP_NONINTERLEAVED
        case .mmapInterleaved: SND_PCM_ACCESS_MMAP_INTERLEAVED
        case .readWriteInterleaved: SND_PCM_ACCESS_RW_INTERLEAVED
        case .readWriteNonInterleaved: SND_PCM_ACCESS_RW_NONINTERLEAVED
        }
    }

    public var isMMap: Bool { self == .mmapInterleaved || self == .mmapNonInterleaved }
    public var isInterleaved: Bool { self == .mmapInterleaved || self == .readWriteInterleaved }
}
