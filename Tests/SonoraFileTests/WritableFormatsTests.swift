import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

/// `writableFormats(for:)` lists exactly what `create` writes, and `create` refuses ('fmt?')
/// what a type cannot hold instead of writing something else.
@Suite("Writable formats tell the truth")
struct WritableFormatsTests {
    static let types: [AudioFileType] = [.wave, .rf64, .aiff, .aifc, .caf, .flac, .ogg]

    static func isPacketOnly(_ format: StreamFormat, in type: AudioFileType) -> Bool {
        [AudioFormatID.mpeg4AAC, .mpeg4AAC_HE, .mpegLayer3].contains(format.formatID) || (type == .caf && [AudioFormatID.flac, .opus].contains(format.formatID))
    }

    @Test(arguments: types)
    func everyListedFormatIsTheFormatCreateWrites(type: AudioFileType) throws {
        let scratch = try TemporaryFolder()
        let formats = AudioFile.writableFormats(for: type)
        #expect(!formats.isEmpty)
        // Packet-only formats (AAC, MP3; FLAC/Opus in CAF …) are written with writePackets: PacketFileTests.
        for (index, format) in formats.enumerated() where !Self.isPacketOnly(format, in: type) {
            let path = scratch.path("listed-\(index)")
            let file = try AudioFile.create(path, type: type, format: format)
            let frames = 4800
            let buffers = try OwnedAudioBufferList(channelCount: Int(format.channelsPerFrame), frameCapacity: frames)
            for channel in 0..<Int(format.channelsPerFrame) {
                for frame in 0..<frames { buffers.list[channel][frame] = Float(0.25 * sin(Double(frame) * 0.05)) }
            }
            try file.writeFrames(from: buffers.list)
            try file.close()
            let reread = try AudioFile.open(path)
            #expect(reread.dataFormat == format, "\(type) listed \(format) but wrote \(reread.dataFormat)")
        }
    }

    @Test func formatsATypeCannotHoldAreRefusedNotSubstituted() throws {
        let scratch = try TemporaryFolder()
        let flac = StreamFormat.compressed(.flac, sampleRate: 48000, channels: 2)
        let refused: [(AudioFileType, StreamFormat)] = [
            (.caf, .compressed(.vorbis, sampleRate: 48000, channels: 2)), (.wave, flac), (.aiff, flac), (.aifc, flac), (.rf64, flac),
            (.wave, .compressed(.vorbis, sampleRate: 48000, channels: 2)),
            (.m4a, .compressed(.opus, sampleRate: 48000, channels: 2)),
            (.wave, .compressed(.appleLossless, sampleRate: 48000, channels: 2)),
            (.wave, .linearPCM(sampleRate: 48000, channels: 2, sample: .int24In32)),
            (.caf, .audioUnitCanonical8_24(sampleRate: 48000, channels: 2)),
            (.ogg, .linearPCM(sampleRate: 48000, channels: 2, sample: .int16)),
        ]
        for (index, (type, format)) in refused.enumerated() {
            #expect(!AudioFile.writableFormats(for: type).contains(format), "\(type) lists \(format)")
            let path = scratch.path("refused-\(index)")
            let error = #expect(throws: AudioError.self, "\(type) took \(format)") {
                _ = try AudioFile.create(path, type: type, format: format)
            }
            #expect(error?.code == .unsupportedDataFormat)
            #expect(error?.message.contains("cannot hold") == true)
            #expect(!FileManager.default.fileExists(atPath: path))
        }
    }
}
