import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

@Suite("IMA4 in CAF")
struct IMA4CAFTests {
    @Test func writesAndReadsIMA4CAFWithExactFrameCount() throws {
        let scratch = try TemporaryFolder()
        let path = scratch.path("sonora-ima4-\(getpid()).caf")
        let format = StreamFormat.appleIMA4(sampleRate: 44100, channels: 2)
        let file = try AudioFile.create(path, type: .caf, format: format, erase: true)
        let frames = 1000
        let source = try OwnedAudioBufferList(channelCount: 2, frameCapacity: frames)
        for frame in 0..<frames {
            let t = Double(frame) / 44100
            source.list[0][frame] = Float(0.4 * sin(2 * .pi * 440 * t))
            source.list[1][frame] = Float(0.2 * sin(2 * .pi * 1500 * t))
        }
        // In two writes, so a packet straddles them.
        try file.writeFrames(from: source.list.frames(from: 0, count: 333))
        try file.writeFrames(from: source.list.frames(from: 333, count: frames - 333))
        #expect(!FileManager.default.fileExists(atPath: path))
        try file.close()

        let reread = try AudioFile.open(path)
        #expect(reread.fileType == .caf && reread.dataFormat == format)
        #expect(reread.frameCount == frames)
        let back = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 2000)
        #expect(try reread.readFrames(into: back.list) == frames)
        #expect(try reread.readFrames(into: back.list) == 0)
        var signal = 0.0
        var noise = 0.0
        for frame in 64..<frames {
            let a = Double(source.list[0][frame])
            signal += a * a
            noise += (a - Double(back.list[0][frame])) * (a - Double(back.list[0][frame]))
        }
        #expect(10 * log10(signal / noise) > 20)
        // Seeking into the middle of a packet.
        let one = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 1)
        #expect(try reread.readFrames(into: one.list, from: 700) == 1)
        #expect(one.list[1][0] == back.list[1][700])

        // The stream parser reads the same file: IMA4 packets, 16 of 68 bytes.
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var properties: [AudioFileStream.Property] = []
        var packets: [UInt8] = []
        let stream = AudioFileStream(propertyListener: { properties.append($0) }, packetsHandler: { packets += $0; _ = $1 })
        try stream.parse(bytes)
        #expect(properties.contains(.dataFormat(format)))
        #expect(packets.count == 16 * 68)
        // And the packets are what the converter makes of the same frames.
        var pcm: [UInt8] = []
        for frame in 0..<frames {
            for channel in 0..<2 { withUnsafeBytes(of: source.list[channel][frame].bitPattern.littleEndian) { pcm += $0 } }
        }
        let converter = try AudioConverter(from: .linearPCM(sampleRate: 44100, channels: 2, sample: .float32), to: format)
        #expect(try converter.convert(pcm) + converter.flush() == packets)
    }

    @Test("any split of the writes gives the same file", arguments: [[1, 63, 64, 65, 127, 500], [7], [64], [1000]])
    func writeSplitsDoNotMatter(chunks: [Int]) throws {
        let format = StreamFormat.appleIMA4(sampleRate: 48000, channels: 2)
        let frames = 2500
        let source = try OwnedAudioBufferList(channelCount: 2, frameCapacity: frames)
        for frame in 0..<frames {
            source.list[0][frame] = Float(0.5 * sin(Double(frame) * 0.05))
            source.list[1][frame] = Float(0.3 * sin(Double(frame) * 0.13))
        }
        func write(_ chunks: [Int]) throws -> Data {
            let scratch = try TemporaryFolder()
            let path = scratch.path("sonora-ima4-split-\(UUID().uuidString).caf")
            let file = try AudioFile.create(path, type: .caf, format: format, erase: true)
            var done = 0, index = 0
            while done < frames {
                let count = min(chunks[index % chunks.count], frames - done)
                try file.writeFrames(from: source.list.frames(from: done, count: count))
                done += count
                index += 1
            }
            try file.close()
            return try Data(contentsOf: URL(fileURLWithPath: path))
        }
        #expect(try write(chunks) == write([frames]))
    }

    @Test func aCAFThatIsNotIMA4IsLeftToLibsndfileAndTruncationIsAnError() throws {
        let scratch = try TemporaryFolder()
        let pcmPath = scratch.path("sonora-pcm-\(getpid()).caf")
        let pcm = try AudioFile.create(pcmPath, type: .caf, format: .linearPCM(sampleRate: 8000, channels: 1, sample: .int16, bigEndian: true), erase: true)
        let silence = try OwnedAudioBufferList(channelCount: 1, frameCapacity: 640)  // owns what the views point at
        try pcm.writeFrames(from: silence.list(frameCount: 10))
        try pcm.close()
        #expect(try AudioFile.open(pcmPath).dataFormat.isLinearPCM)

        let imaPath = scratch.path("sonora-ima4-cut-\(getpid()).caf")
        let ima = try AudioFile.create(imaPath, type: .caf, format: .appleIMA4(sampleRate: 8000, channels: 1), erase: true)
        try ima.writeFrames(from: silence.list)
        try ima.close()
        let whole = try Data(contentsOf: URL(fileURLWithPath: imaPath))
        try whole.prefix(40).write(to: URL(fileURLWithPath: imaPath))  // cut inside the pakt chunk
        #expect(throws: AudioError.self) { try AudioFile.open(imaPath) }
    }
}
