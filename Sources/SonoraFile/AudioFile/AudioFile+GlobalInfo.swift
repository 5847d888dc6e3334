import CSndfile
import SonoraCore

extension AudioFile {
    /// Containers Sonora reads (kAudioFileGlobalInfo_ReadableTypes).
    public static var readableTypes: [AudioFileType] { [.wave, .rf64, .aiff, .aifc, .caf, .flac, .ogg, .mp3, .m4a, .mp4, .adts] }

    /// Containers Sonora writes (kAudioFileGlobalInfo_WritableTypes): those for which
    /// libsndfile accepts at least one data format.
    public static var writableTypes: [AudioFileType] {
        readableTypes.filter { !writableFormats(for: $0).isEmpty }
    }

    /// The data formats `type` can hold (kAudioFileGlobalInfo_AvailableStreamDescriptionsForFormat),
    /// for stereo at 48 kHz: exactly those `create` writes as they are (read back, the file's
    /// data format is the one listed); `create` refuses the others with 'fmt?'. Compressed
    /// formats libsndfile does not encode are listed where `create` makes a packet file
    /// (written with `writePackets`, not frames).
    public static func writableFormats(for type: AudioFileType) -> [StreamFormat] {
        let rate = 48000.0
        let pcm = PCMSample.allCases.filter { $0 != .int24In32 && $0 != .fixed8_24 }
        var candidates: [StreamFormat] = pcm.flatMap { sample in
            // One-byte samples have no byte order.
            (sample == .uint8 ? [false] : [false, true]).map {
                StreamFormat.linearPCM(sampleRate: rate, channels: 2, sample: sample, bigEndian: $0)
            }
        }
        var signed8 = StreamFormat.linearPCM(sampleRate: rate, channels: 2, sample: .uint8)
        signed8.formatFlags.insert(.isSignedInteger)
        candidates.append(signed8)
        candidates += [AudioFormatID.flac, .vorbis, .opus, .appleLossless, .uLaw, .aLaw].map {
            StreamFormat.compressed($0, sampleRate: rate, channels: 2)
        }
        // IMA4 in CAF and AIFC is Sonora's own writer, not libsndfile's.
        let ima4: [StreamFormat] = type == .caf || type == .aifc ? [.appleIMA4(sampleRate: rate, channels: 2)] : []
        let sndfile = candidates.filter { format in
            // A FLAC file takes linear PCM only to encode it: what it holds is FLAC.
            !(type == .flac && format.isLinearPCM) && SndfileFormat.word(for: format, in: type) != nil
        }
        // Compressed packets Sonora writes itself (CAF) or through libavformat (M4A, ADTS, MP3, Ogg Opus).
        let packets = packetFormats(for: type).map { StreamFormat.compressed($0, sampleRate: rate, channels: 2) }.filter { !sndfile.contains($0) }
        return ima4 + sndfile + packets
    }
}
