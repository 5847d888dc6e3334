import Foundation
import SonoraCore
import SonoraDSP
import SonoraFile
import SonoraTestSupport
import Testing

@Suite("ExtAudioFile", .enabled(if: soxPath != nil, "sox is not installed"))
struct ExtAudioFileTests {
    /// Removed with its contents when the suite's instance goes away (after each test).
    let folder: TemporaryFolder

    init() throws {
        folder = try TemporaryFolder(prefix: "sonora-ext")
    }

    func path(_ name: String) -> String { folder.path(name) }

    func zeroCrossingsPerSecond(_ samples: ArraySlice<Float>, rate: Double) -> Double {
        Double(zip(samples, samples.dropFirst()).filter { ($0 < 0) != ($1 < 0) }.count) / (Double(samples.count) / rate)
    }

    @Test func readsInAnotherRateAndLayout() throws {
        let source = path("source.wav")
        try run(soxPath!, ["-n", "-r", "44100", "-c", "2", "-b", "16", source, "synth", "1", "sine", "1000", "gain", "-6"])
        let ext = try ExtAudioFile.open(source)
        let client = StreamFormat.linearPCM(sampleRate: 48000, channels: 2, sample: .float32, interleaved: true)
        try ext.setClientFormat(client)
        let buffers = try OwnedPCMBufferList(format: client, frameCapacity: 1000)
        var left: [Float] = []
        while true {
            let read = try ext.read(into: buffers.list(frameCount: 1000), frameCount: 1000)
            if read == 0 { break }
            let floats = buffers.bytes(0).bindMemory(to: Float.self)
            for frame in 0..<read { left.append(floats[frame * 2]) }
        }
        #expect(abs(left.count - 48000) <= 2, "\(left.count) frames at 48 kHz")
        let middle = left[12000..<36000]
        #expect(abs(zeroCrossingsPerSecond(middle, rate: 48000) - 2000) < 5)
        #expect(abs((middle.map(abs).max() ?? 0) - 0.5012) < 0.005)  // -6 dB
    }

    @Test func readsExactIntegersInAnyLayoutAtTheFileRate() throws {
        let source = path("ramp.wav")
        // A file whose 16-bit samples are known exactly: written with AudioFile itself.
        let writer = try AudioFile.create(source, type: .wave, format: .linearPCM(sampleRate: 8000, channels: 2, sample: .int16))
        let block = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 1000)
        for frame in 0..<1000 {
            block.list[0][frame] = Float(frame) / 32768
            block.list[1][frame] = -Float(frame) / 32768
        }
        try writer.writeFrames(from: block.list)
        try writer.close()

        let ext = try ExtAudioFile.open(source)
        let client = StreamFormat.linearPCM(sampleRate: 8000, channels: 2, sample: .int16, interleaved: false, bigEndian: true)
        try ext.setClientFormat(client)
        try ext.seek(toFrame: 100)
        #expect(ext.position == 100)
        let buffers = try OwnedPCMBufferList(format: client, frameCapacity: 50)
        #expect(try ext.read(into: buffers.list(frameCount: 50), frameCount: 50) == 50)
        let right = buffers.bytes(1)
        let value = Int16(bigEndian: right.load(fromByteOffset: 2 * 7, as: Int16.self))
        #expect(value == -107)
        #expect(ext.position == 150)

        // Mono client from a stereo file: the average of the channels.
        let mono = StreamFormat.linearPCM(sampleRate: 8000, channels: 1, sample: .float32)
        try ext.setClientFormat(mono)
        try ext.seek(toFrame: 0)
        let monoBuffers = try OwnedPCMBufferList(format: mono, frameCapacity: 10)
        #expect(try ext.read(into: monoBuffers.list(frameCount: 10), frameCount: 10) == 10)
        #expect(monoBuffers.bytes(0).bindMemory(to: Float.self).allSatisfy { $0 == 0 })
        let wrong = StreamFormat.linearPCM(sampleRate: 8000, channels: 3, sample: .int16)
        #expect(throws: AudioError.self) { try ext.setClientFormat(wrong) }
    }

    @Test func writesFromAClientFormatInAnotherRate() throws {
        let target = path("written.wav")
        let ext = try ExtAudioFile.create(target, type: .wave, format: .linearPCM(sampleRate: 44100, channels: 2, sample: .int16))
        let client = StreamFormat.linearPCM(sampleRate: 22050, channels: 1, sample: .int16)
        try ext.setClientFormat(client)
        let buffers = try OwnedPCMBufferList(format: client, frameCapacity: 2205)
        var oscillator = SineOscillator(frequency: 500, sampleRate: 22050)
        let floats = try OwnedAudioBufferList(channelCount: 1, frameCapacity: 2205)
        for _ in 0..<10 {
            oscillator.render(into: floats.list.samples(0), count: 2205, amplitude: 0.5)
            let samples = buffers.bytes(0).bindMemory(to: Int16.self)
            for frame in 0..<2205 { samples[frame] = Int16((floats.list[0][frame] * 32767).rounded()).littleEndian }
            try ext.write(from: buffers.list(frameCount: 2205), frameCount: 2205)
        }
        try ext.close()
        let reread = try AudioFile.open(target)
        #expect(abs(reread.frameCount - 44100) <= 2, "\(reread.frameCount) frames")
        let all = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 44200)
        let got = try reread.readFrames(into: all.list)
        let left = Array(all.list[0].prefix(got))
        #expect(left == Array(all.list[1].prefix(got)))
        #expect(abs(zeroCrossingsPerSecond(left[11025..<33075], rate: 44100) - 1000) < 5)
    }
}
