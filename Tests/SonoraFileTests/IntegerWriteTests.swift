import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

/// What Sonora reads from an integer file it writes back unchanged. libsndfile alone
/// does not: it writes floats × (2^(bits−1) − 1) and reads them ÷ 2^(bits−1), so
/// every sample louder than half scale came back one step quieter.
@Suite("Integer files written exactly")
struct IntegerWriteTests {
    @Test(arguments: [
        (AudioFileType.wave, StreamFormat.linearPCM(sampleRate: 8000, channels: 1, sample: .int16), "wav", 16),
        (.aiff, .linearPCM(sampleRate: 8000, channels: 1, sample: .int16, bigEndian: true), "aiff", 16),
        (.caf, .linearPCM(sampleRate: 8000, channels: 1, sample: .int24), "caf", 24),
        (.wave, .linearPCM(sampleRate: 8000, channels: 1, sample: .uint8), "wav", 8),
        (.flac, .compressed(.flac, sampleRate: 8000, channels: 1), "flac", 16),
    ])
    func everyIntegerValueSurvivesAWriteAndRead(type: AudioFileType, format: StreamFormat, ext: String, bits: Int) throws {
        let scratch = try TemporaryFolder()
        let path = scratch.path("sonora-exact-\(getpid())-\(bits).\(ext)")
        // Every 8- and 16-bit value; for 24 bits a spread including both extremes.
        let scale = Float(sign: .plus, exponent: bits - 1, significand: 1)
        let values: [Float] = bits == 24
            ? stride(from: -8_388_608, through: 8_388_607, by: 257).map { Float($0) / scale } + [8_388_607 / scale]
            : (-(1 << (bits - 1))..<(1 << (bits - 1))).map { Float($0) / scale }
        let file = try AudioFile.create(path, type: type, format: format, erase: true)
        let source = try OwnedAudioBufferList(channelCount: 1, frameCapacity: values.count + 2)
        for (index, value) in values.enumerated() { source.list[0][index] = value }
        // Beyond full scale: clipped, not wrapped.
        source.list[0][values.count] = 1.5
        source.list[0][values.count + 1] = -1.5
        try file.writeFrames(from: source.list)
        try file.close()

        let reread = try AudioFile.open(path)
        let back = try OwnedAudioBufferList(channelCount: 1, frameCapacity: values.count + 2)
        #expect(try reread.readFrames(into: back.list) == values.count + 2)
        let differing = values.indices.filter { back.list[0][$0] != values[$0] }
        #expect(differing.isEmpty, "\(differing.count) values differ, first at \(differing.first.map { values[$0] * scale } ?? 0)")
        #expect(back.list[0][values.count] == (scale - 1) / scale && back.list[0][values.count + 1] == -1)
    }

    @Test(.enabled(if: soxPath != nil, "sox is not installed"))
    func aSixteenBitCopyIsTheSameAudio() throws {
        let scratch = try TemporaryFolder()
        let original = scratch.path("sonora-loud-\(getpid()).wav"), copy = scratch.path("sonora-loud-copy-\(getpid()).wav")
        try run(soxPath!, ["-n", "-r", "44100", "-c", "2", "-b", "16", original, "synth", "0.2", "sine", "440", "sine", "1000", "gain", "-0.1"])
        let input = try AudioFile.open(original)
        let output = try AudioFile.create(copy, type: .wave, format: input.dataFormat)
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 1000)
        while true {
            let read = try input.readFrames(into: buffers.list)
            if read == 0 { break }
            try output.writeFrames(from: buffers.list.frames(from: 0, count: read))
        }
        try output.close()
        let data = { (path: String) throws -> Data in
            let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            return bytes.suffix(8820 * 4)  // the audio: both files end with their data chunk
        }
        #expect(try data(original) == data(copy))
    }
}
