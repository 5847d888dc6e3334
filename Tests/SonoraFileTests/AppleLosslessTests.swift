import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

/// Apple Lossless in CAF goes through libsndfile (1.2.0 on Debian 12 writes and reads it;
/// no other ALAC tool is installed here, so this checks losslessness, not interchange).
@Suite("Apple Lossless in CAF")
struct AppleLosslessTests {
    @Test func sixteenBitAudioComesBackBitExactWithItsFrameCount() throws {
        let scratch = try TemporaryFolder()
        let path = scratch.path("sonora-alac-\(getpid()).caf")
        // Not a multiple of ALAC's 4096-frame packets, and noise-like so nothing compresses to trivia.
        let frames = 44100 + 123
        let source = try OwnedAudioBufferList(channelCount: 2, frameCapacity: frames)
        var state: UInt32 = 1
        for frame in 0..<frames {
            state = state &* 1_664_525 &+ 1_013_904_223
            let noise = Int(Int16(truncatingIfNeeded: state >> 16)) / 8
            let tone = Int(8000 * sin(Double(frame) * 0.03))
            source.list[0][frame] = Float(tone + noise) / 32768
            source.list[1][frame] = Float(-32768 + frame % 65536) / 32768  // a ramp from the most negative value
        }
        let file = try AudioFile.create(path, type: .caf, format: .compressed(.appleLossless, sampleRate: 44100, channels: 2), erase: true)
        try file.writeFrames(from: source.list)
        try file.close()

        let reread = try AudioFile.open(path)
        #expect(reread.fileType == .caf && reread.dataFormat.formatID == .appleLossless)
        #expect(reread.frameCount == frames)
        let back = try OwnedAudioBufferList(channelCount: 2, frameCapacity: frames + 10)
        #expect(try reread.readFrames(into: back.list) == frames)
        for channel in 0..<2 {
            let differing = (0..<frames).filter { back.list[channel][$0] != source.list[channel][$0] }.count
            #expect(differing == 0, "channel \(channel): \(differing) samples differ")
        }
        let size = try #require(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        #expect(size < frames * 4, "ALAC, not PCM: \(size) bytes")
    }
}
