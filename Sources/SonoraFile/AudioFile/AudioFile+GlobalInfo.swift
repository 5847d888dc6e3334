import CSndfile
import SonoraCore

extension AudioFile {
    /// Containers Sonora reads (kAudioFileGlobalInfo_ReadableTypes).
    public static var readableTypes: [AudioFileType] { [.wave, .rf64, .aiff, .aifc, .caf, .flac, .ogg, .mp3] }

    /// Containers Sonora writes (kAudioFileGlobalInfo_WritableTypes): those for which
    /// libsndfile accepts at least one data format.
    public static var writableTypes: [AudioFileType] {
        readableTypes.filter { !writableFormats(for: $0).isEmpty }
    }

    /// The data formats `type` can hold (kAudioFileGlobalInfo_AvailableStreamDescriptionsForFormat),
    /// as checked with libsndfile for stereo at 48 kHz.
    public static func writableFormats(for type: AudioFileType) -> [StreamFormat] {
        let rate = 48000.0
        var candidates: [StreamFormat] = PCMSample.allCases.filter { $0 != .int24In32 }.flatMap { sample in
            [false, true].map { StreamFormat.linearPCM(sampleRate: rate, channels: 2, sample: sample, bigEndian: $0) }
        }
        candidates += [AudioFormatID.flac, .vorbis, .opus, .appleLossless, .uLaw, .aLaw].map {
            StreamFormat.compressed($0, sampleRate: rate, channels: 2)
        }
        var seen: Set<StreamFormat> = []
        // IMA4 in CAF and AIFC is Sonora's own writer, not libsndfile's.
        let ima4: [StreamFormat] = type == .caf || type == .aifc ? [.appleIMA4(sampleRate: rate, channels: 2)] : []
        return ima4 + candidates.filter { format in
            guard let word = SndfileFormat.word(for: format, in: type) else { return false }
            // Keep the byte order the container really writes.
            var actual = format
            if format.isLinearPCM && format.pcmSample != .uint8 {
                let endian = word & SndfileFormat.endianMask
                if endian == Int32(SF_ENDIAN_BIG) { actual.formatFlags.insert(.isBigEndian) }
                if endian == Int32(SF_ENDIAN_LITTLE) { actual.formatFlags.remove(.isBigEndian) }
                if endian == 0 && (type == .aiff || type == .aifc) { actual.formatFlags.insert(.isBigEndian) }
                if endian == 0 && (type == .wave || type == .rf64) { actual.formatFlags.remove(.isBigEndian) }
            }
            return seen.insert(actual).inserted && actual == format
        }
    }
}
