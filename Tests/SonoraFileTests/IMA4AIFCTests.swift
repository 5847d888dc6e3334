import CSndfile
import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

/// IMA4 in AIFC, checked against libsndfile, which reads and writes AIFC 'ima4' itself
/// and so is an independent encoder and decoder here (sox cannot write it).
@Suite("IMA4 in AIFC")
final class IMA4AIFCTests {
    /// Removed with its contents when the suite's instance goes away (after each test).
    let folder: TemporaryFolder

    init() throws {
        folder = try TemporaryFolder(prefix: "sonora-aifc")
    }

    func path(_ name: String) -> String { folder.path(name) }

    /// Two different tones, 1000 frames.
    func tone(channels: Int, frames: Int = 1000) throws -> OwnedAudioBufferList {
        let source = try OwnedAudioBufferList(channelCount: channels, frameCapacity: frames)
        for frame in 0..<frames {
            for channel in 0..<channels {
                source.list[channel][frame] = Float(0.4 * sin(2 * .pi * Double(440 + 700 * channel) * Double(frame) / 44100))
            }
        }
        return source
    }

    func readAll(_ path: String) throws -> (file: AudioFile, samples: [[Float]]) {
        let file = try AudioFile.open(path)
        let channels = Int(file.dataFormat.channelsPerFrame)
        let buffers = try OwnedAudioBufferList(channelCount: channels, frameCapacity: file.frameCount + 10)
        let read = try file.readFrames(into: buffers.list)
        return (file, (0..<channels).map { channel in (0..<read).map { buffers.list[channel][$0] } })
    }

    /// libsndfile's decode of `path` as 16-bit integers, per channel.
    func libsndfileDecode(_ path: String) -> (frames: Int, samples: [[Int16]]) {
        var info = SF_INFO()
        guard let handle = try? SndfileOpening.open(path, mode: Int32(SFM_READ), info: &info).get() else { return (-1, []) }
        defer { sf_close(handle) }
        var interleaved = [Int16](repeating: 0, count: Int(info.frames) * Int(info.channels))
        let read = Int(sf_readf_short(handle, &interleaved, info.frames))
        let channels = Int(info.channels)
        return (Int(info.frames), (0..<channels).map { channel in (0..<read).map { interleaved[$0 * channels + channel] } })
    }

    func snr(_ original: OwnedAudioBufferList, _ decoded: [Float], channel: Int, from: Int = 64, to: Int = 1000) -> Double {
        SignalMeasurement.snr(reference: original.list[channel][from..<to], test: decoded[from..<to])
    }

    @Test(arguments: [1, 2])
    func sonoraWritesAIFCThatLibsndfileDecodesIdentically(channels: Int) throws {
        let target = path("sonora-\(channels).aifc")
        let format = StreamFormat.appleIMA4(sampleRate: 44100, channels: channels)
        let source = try tone(channels: channels)
        let file = try AudioFile.create(target, type: .aifc, format: format)
        try file.writeFrames(from: source.list.frames(from: 0, count: 333))
        try file.writeFrames(from: source.list.frames(from: 333, count: 667))
        try file.close()

        let (reread, ours) = try readAll(target)
        #expect(reread.fileType == .aifc && reread.dataFormat == format)
        // AIFC has no count of valid frames: the padded last packet counts whole.
        #expect(reread.frameCount == 1024 && reread.packetCount == 16)
        for channel in 0..<channels { #expect(snr(source, ours[channel], channel: channel) > 20) }
        // The same packets as Sonora's CAF writer makes from the same audio.
        let caf = path("same.caf")
        let cafFile = try AudioFile.create(caf, type: .caf, format: format, erase: true)
        try cafFile.writeFrames(from: source.list)
        try cafFile.close()
        #expect(try AudioFile.open(caf).readPackets(from: 0, count: 16).bytes == reread.readPackets(from: 0, count: 16).bytes)

        let theirs = libsndfileDecode(target)
        #expect(theirs.frames == 1024)
        for channel in 0..<channels {
            let ours16 = ours[channel].map { Int16(($0 * 32768).rounded()) }
            #expect(ours16 == theirs.samples[channel], "libsndfile decodes Sonora's AIFC to the same samples")
        }
        // The header fields, as Apple writes them.
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: target)))
        #expect(Array(bytes[8..<12]) == Array("AIFC".utf8) && bytes.count == 78 + 16 * 34 * channels)
        #expect(bytes[34..<38] == [0, 0, 0, 16], "COMM numSampleFrames counts packets")
        #expect(Array(bytes[50..<54]) == Array("ima4".utf8))
        #expect(bytes[4..<8].reduce(0) { $0 << 8 | Int($1) } == bytes.count - 8)
    }

    @Test(arguments: [1, 2])
    func readsAIFCThatLibsndfileEncoded(channels: Int) throws {
        let target = path("libsndfile-\(channels).aifc")
        let source = try tone(channels: channels)
        var info = SF_INFO(frames: 0, samplerate: 44100, channels: Int32(channels), format: Int32(SF_FORMAT_AIFF | SF_FORMAT_IMA_ADPCM), sections: 0, seekable: 0)
        let handle = try SndfileOpening.open(target, mode: Int32(SFM_WRITE), info: &info).get()
        var interleaved = [Float](repeating: 0, count: 1000 * channels)
        for frame in 0..<1000 { for channel in 0..<channels { interleaved[frame * channels + channel] = source.list[channel][frame] } }
        #expect(sf_writef_float(handle, &interleaved, 1000) == 1000)
        sf_close(handle)

        let (file, ours) = try readAll(target)
        #expect(file.fileType == .aifc && file.dataFormat == .appleIMA4(sampleRate: 44100, channels: channels))
        // From the SSND size: libsndfile's COMM says 16 / channels packets.
        #expect(file.frameCount == 1024)
        let theirs = libsndfileDecode(target)
        for channel in 0..<channels {
            #expect(ours[channel].map { Int16(($0 * 32768).rounded()) } == theirs.samples[channel], "the same decode of libsndfile's packets")
            #expect(snr(source, ours[channel], channel: channel) > 20)
        }
        // The stream parser hands out exactly the file's packets.
        var packets: [UInt8] = []
        var formats: [StreamFormat] = []
        let stream = AudioFileStream(
            propertyListener: { if case .dataFormat(let format) = $0 { formats.append(format) } },
            packetsHandler: { packets += $0; _ = $1 })
        for byte in try Data(contentsOf: URL(fileURLWithPath: target)) { try stream.parse([byte]) }
        #expect(formats == [.appleIMA4(sampleRate: 44100, channels: channels)])
        #expect(packets == (try file.readPackets(from: 0, count: 16)).bytes)
    }

    @Test func cutAndDamagedAIFCFilesGiveErrorsOrWholePacketsNeverCrashes() throws {
        let target = path("whole.aifc")
        let file = try AudioFile.create(target, type: .aifc, format: .appleIMA4(sampleRate: 8000, channels: 2))
        let source = try tone(channels: 2)  // kept alive: `list` does not own its memory
        try file.writeFrames(from: source.list)
        try file.close()
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: target)))
        let damaged = path("damaged.aifc")
        var generator = SeededGenerator(seed: 0x1A4)  // seeded, so a failure reproduces
        for length in Array(0..<100) + [bytes.count - 1, bytes.count - 35, bytes.count - 68] {
            try Data(bytes.prefix(length)).write(to: URL(fileURLWithPath: damaged))
            if let opened = try? AudioFile.open(damaged) {
                // A file cut inside the audio keeps its whole packets.
                #expect(opened.frameCount == max(0, (length - 78) / 68) * 64)
                _ = try? readAll(damaged)
            }
        }
        for _ in 0..<300 {
            var mutated = bytes
            for _ in 0..<3 { mutated[Int.random(in: 0..<78, using: &generator)] = UInt8.random(in: 0...255, using: &generator) }
            try Data(mutated).write(to: URL(fileURLWithPath: damaged))
            if let opened = try? AudioFile.open(damaged) { _ = try? readAll(damaged); try? opened.close() }
        }
    }
}
