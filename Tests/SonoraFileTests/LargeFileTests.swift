import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

/// Files past 4 GiB. Opt-in (SONORA_LARGE_FILE_TESTS=1): each writes and reads back
/// over 4 GiB, which takes minutes and disk space CI should not spend on every run.
@Suite("Files over 4 GiB", .serialized,
       .enabled(if: ProcessInfo.processInfo.environment["SONORA_LARGE_FILE_TESTS"] == "1", "set SONORA_LARGE_FILE_TESTS=1"))
struct LargeFileTests {
    /// 16-bit stereo: 4 bytes a frame, so 2^30 frames fill 4 GiB exactly; 48 000 more go past it.
    static let frames = (1 << 30) + 48000
    static let block = 65536

    /// A recognisable value for any frame, exact in 16 bits.
    static func sample(_ frame: Int, channel: Int) -> Float {
        Float(Int16(truncatingIfNeeded: frame &* 7 &+ channel &* 12345)) / 32768
    }

    @Test func rf64HoldsMoreThan4GiBAndReadsBackExactly() throws {
        let scratch = try TemporaryFolder()
        let path = scratch.path("sonora-large-\(getpid()).rf64")
        let file = try AudioFile.create(path, type: .rf64, format: .linearPCM(sampleRate: 48000, channels: 2, sample: .int16), erase: true)
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: Self.block)
        var written = 0
        while written < Self.frames {
            let count = min(Self.block, Self.frames - written)
            // Every frame gets its own value only where it is checked (the last block and
            // the one across 4 GiB); elsewhere the same block repeats, to keep the test fast.
            let checked = written + count > Self.frames - 2 * Self.block || (written...(written + count)).contains(1 << 30)
            if checked || written == 0 {
                for channel in 0..<2 { for index in 0..<count { buffers.list[channel][index] = Self.sample(written + index, channel: channel) } }
            }
            try file.writeFrames(from: buffers.list.frames(from: 0, count: count))
            written += count
        }
        try file.close()
        let size = try #require(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        #expect(size > 1 << 32, "the file is past 4 GiB: \(size) bytes")

        let reread = try AudioFile.open(path)
        #expect(reread.fileType == .rf64)
        #expect(reread.frameCount == Self.frames)
        for start in [(1 << 30) - 500, Self.frames - 1000] {
            let back = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 1000)
            #expect(try reread.readFrames(into: back.list, from: start) == 1000)
            let wrong = (0..<1000).filter { index in
                (0..<2).contains { back.list[$0][index] != Self.sample(start + index, channel: $0) }
            }
            #expect(wrong.isEmpty, "frames from \(start): \(wrong.count) differ")
        }
        try reread.close()
    }

    @Test func aWAVRefusesToGrowPast4GiBAndLeavesNothingBehind() throws {
        let folder = try TemporaryFolder(prefix: "sonora-large-wav")
        let directory = folder.url
        let path = directory.appendingPathComponent("big.wav").path
        let file = try AudioFile.create(path, type: .wave, format: .linearPCM(sampleRate: 48000, channels: 2, sample: .int16))
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: Self.block)
        var written = 0
        var refusal: AudioError?
        while written < Self.frames {
            do {
                try file.writeFrames(from: buffers.list)
            } catch {
                refusal = error
                break
            }
            written += Self.block
        }
        #expect(refusal?.code == .doesNotAllow64BitDataSize, "\(String(describing: refusal))")
        #expect(written * 4 <= Int(UInt32.max) && (written + Self.block) * 4 > Int(UInt32.max) - AudioFile.riffHeaderAllowance)
        #expect(throws: AudioError.self) { try file.close() }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty, "no partial WAV is left")
    }
}
