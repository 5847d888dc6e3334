import SonoraCore
import SonoraFile

/// What to record (AVAudioRecorder's settings keys: AVFormatIDKey, AVSampleRateKey,
/// AVNumberOfChannelsKey, AVLinearPCMBitDepthKey, AVLinearPCMIsFloatKey,
/// AVLinearPCMIsBigEndianKey, AVEncoderBitDepthHintKey, AVEncoderAudioQualityKey).
public struct AudioRecorderSettings: Hashable, Sendable {
    /// Linear PCM, IMA4 or ALAC (FLAC files take linear PCM, encoded by the file layer).
    public var formatID: AudioFormatID = .linearPCM
    public var sampleRate: Double = 44100
    public var numberOfChannels: Int = 2
    /// Linear PCM: bits per sample (8, 16, 24, 32; float 32 or 64); ALAC: the source data's, 16 or 24.
    public var bitDepth: Int = 16
    /// Linear PCM: float samples (32 or 64 bits) rather than integers.
    public var isFloat = false
    /// Linear PCM: big-endian samples (AIFF's order; WAV and CAF files take either).
    public var isBigEndian = false
    /// The encoder's quality where the file's codec has one (FLAC: its compression effort,
    /// min fastest … max smallest file). Linear PCM, IMA4 and ALAC have none, and ignore it as
    /// AVAudioRecorder does. Nil: the encoder's default.
    public var encoderQuality: AudioQuality?

    public init(
        formatID: AudioFormatID = .linearPCM, sampleRate: Double = 44100, numberOfChannels: Int = 2, bitDepth: Int = 16,
        isFloat: Bool = false, isBigEndian: Bool = false, encoderQuality: AudioQuality? = nil
    ) {
        self.encoderQuality = encoderQuality
        self.formatID = formatID
        self.sampleRate = sampleRate
        self.numberOfChannels = numberOfChannels
        self.bitDepth = bitDepth
        self.isFloat = isFloat
        self.isBigEndian = isBigEndian
    }

    /// The queue's stream format for these settings, or why there is none.
    func streamFormat() throws(AudioError) -> StreamFormat {
        guard sampleRate.isFinite, sampleRate >= 1000, sampleRate <= 384_000 else {
            throw AudioError(.unsupportedDataFormat, "sample rate \(sampleRate) Hz is outside 1000 … 384000")
        }
        guard (1...8).contains(numberOfChannels) else {
            throw AudioError(.unsupportedDataFormat, "\(numberOfChannels) channels; a recorder takes 1 … 8")
        }
        switch formatID {
        case .linearPCM:
            let sample: PCMSample
            switch (isFloat, bitDepth) {
            case (false, 8): sample = .uint8
            case (false, 16): sample = .int16
            case (false, 24): sample = .int24
            case (false, 32): sample = .int32
            case (true, 32): sample = .float32
            case (true, 64): sample = .float64
            default: throw AudioError(.unsupportedDataFormat, "\(isFloat ? "float" : "integer") linear PCM of \(bitDepth) bits")
            }
            return .linearPCM(sampleRate: sampleRate, channels: numberOfChannels, sample: sample, bigEndian: isBigEndian)
        case .appleIMA4:
            return .appleIMA4(sampleRate: sampleRate, channels: numberOfChannels)
        case .appleLossless:
            // ALAC's format flags name the source depth (3 = 24-bit, Core Audio's
            // kAppleLosslessFormatFlag_24BitSourceData; 16-bit stays 0, the encoder's default,
            // as before: libsndfile, which reads those files, returned 16 times the frames of a
            // CAF whose desc says 1). The capture's Float32 holds every 24-bit value exactly, so
            // both are lossless. libavcodec's encoder writes only these two: 20-bit and 32-bit
            // source data are refused rather than silently widened or cut.
            let flags: UInt32
            switch bitDepth {
            case 16: flags = 0
            case 24: flags = 3
            default:
                throw AudioError(.unsupportedDataFormat, "ALAC from \(bitDepth)-bit source data; the recorder's ALAC encoder writes 16-bit or 24-bit")
            }
            var format = StreamFormat.compressed(.appleLossless, sampleRate: sampleRate, channels: numberOfChannels)
            format.formatFlags = AudioFormatFlags(rawValue: flags)
            return format
        default:
            throw AudioError(.unsupportedDataFormat, "\(formatID): a recorder takes linear PCM, IMA4 or ALAC (FLAC through a .flac file)")
        }
    }
}

/// AVAudioQuality: an encoder's quality on Core Audio's codec-quality scale (0 … 127).
public enum AudioQuality: Int, Hashable, Sendable, CaseIterable {
    case min = 0
    case low = 0x20
    case medium = 0x40
    case high = 0x60
    case max = 0x7F

    /// libsndfile's compression level (0 … 1) for this quality.
    var compressionLevel: Double { Double(rawValue) / Double(Self.max.rawValue) }
}
