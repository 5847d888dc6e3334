import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

/// Sonora's decoders against libavcodec's own decoding through the `ffmpeg` command line: the
/// same packets (demuxed by libavformat from files ffmpeg wrote) must decode to the same
/// float32 samples bit for bit. ffmpeg drops the priming its demuxer knows of, so the
/// comparison is aligned at the offset where ffmpeg's output starts, which must be that priming.
@Suite("Codec decoding equals ffmpeg's")
struct CodecReferenceDecodingTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var formatID: AudioFormatID
        var file: String
        var encode: [String]
        var rate: Int
        var channels: Int
        /// Frames ffmpeg drops at the start (the encoder delay its demuxer reads from the file).
        var priming: Int
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "AAC-LC in M4A", formatID: .mpeg4AAC, file: "x.m4a", encode: ["-c:a", "aac", "-b:a", "128k"], rate: 44100, channels: 2, priming: 1024),
        // ADTS: no cookie (each packet's header configures the decoder) and no priming known to ffmpeg.
        Case(name: "AAC-LC in ADTS", formatID: .mpeg4AAC, file: "x.aac", encode: ["-c:a", "aac", "-b:a", "96k", "-f", "adts"], rate: 48000, channels: 2, priming: 0),
        Case(name: "MP3 (LAME)", formatID: .mpegLayer3, file: "x.mp3", encode: ["-c:a", "libmp3lame", "-b:a", "128k"], rate: 44100, channels: 2, priming: 1105),
        Case(name: "MP3 mono 22.05 kHz", formatID: .mpegLayer3, file: "x.mp3", encode: ["-c:a", "libmp3lame", "-b:a", "64k"], rate: 22050, channels: 1, priming: 1105),
        Case(name: "ALAC 16-bit in M4A", formatID: .appleLossless, file: "x.m4a", encode: ["-c:a", "alac", "-sample_fmt", "s16p"], rate: 44100, channels: 2, priming: 0),
        Case(name: "ALAC 24-bit in CAF", formatID: .appleLossless, file: "x.caf", encode: ["-c:a", "alac", "-sample_fmt", "s32p"], rate: 48000, channels: 2, priming: 0),
        Case(name: "FLAC 16-bit", formatID: .flac, file: "x.flac", encode: ["-c:a", "flac", "-sample_fmt", "s16"], rate: 44100, channels: 2, priming: 0),
        Case(name: "FLAC 24-bit mono", formatID: .flac, file: "x.flac", encode: ["-c:a", "flac", "-sample_fmt", "s32"], rate: 96000, channels: 1, priming: 0),
        Case(name: "Opus in Ogg", formatID: .opus, file: "x.ogg", encode: ["-c:a", "libopus", "-b:a", "96k"], rate: 48000, channels: 2, priming: 312),
    ]

    @Test(arguments: cases)
    func decodesAsFFmpegDoes(_ test: Case) throws {
        let folder = try TemporaryFolder()
        let path = folder.path(test.file)
        _ = try FFmpegReference.ffmpeg(FFmpegReference.sourceArguments(rate: test.rate, channels: test.channels) + ["-ac", "\(test.channels)"] + test.encode + [path])
        let stream = try FFmpegReference.demux(path)
        #expect(stream.sampleRate == test.rate && stream.channels == test.channels)
        let reference = try FFmpegReference.decoded(path)
        let ours = try FFmpegReference.sonoraDecoded(stream, formatID: test.formatID)
        #expect(reference.count > test.rate)  // ffmpeg decoded the 2 s
        let offset = FFmpegReference.alignment(of: reference, in: ours, channels: test.channels)
        #expect(offset == test.priming, "ffmpeg's output starts at frame \(offset.map(String.init) ?? "none") of Sonora's")
        let difference = FFmpegReference.firstDifference(reference, ours, offset: (offset ?? test.priming) * test.channels)
        #expect(difference == nil, "first differing sample \(difference ?? -1) of \(reference.count); Sonora made \(ours.count)")
    }

    /// Dropping the priming through primeInfo (as a reader does from the packet table) gives ffmpeg's stream from frame 0.
    @Test func primeInfoDropsThePriming() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("x.m4a")
        _ = try FFmpegReference.ffmpeg(FFmpegReference.sourceArguments(rate: 44100, channels: 2) + ["-c:a", "aac", path])
        let stream = try FFmpegReference.demux(path)
        let reference = try FFmpegReference.decoded(path)
        let ours = try FFmpegReference.sonoraDecoded(stream, formatID: .mpeg4AAC, primeInfo: AudioConverterPrimeInfo(leadingFrames: 1024, trailingFrames: 0))
        #expect(FFmpegReference.firstDifference(reference, ours, offset: 0) == nil)
    }
}
