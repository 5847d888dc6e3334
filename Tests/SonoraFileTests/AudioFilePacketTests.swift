import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

@Suite("AudioFile packets, bytes and channel layout")
struct AudioFilePacketTests {
    @Test func pcmPacketsAndBytesAreTheFilesOwn() throws {
        let path = corpusDirectory.appendingPathComponent("wav16.wav").path
        let file = try AudioFile.open(path)
        #expect(file.maximumPacketSize == 4 && file.packetCount == 80 && file.audioDataByteCount == 320)
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let (packets, descriptions) = try file.readPackets(from: 10, count: 5)
        #expect(descriptions == nil)
        #expect(packets == Array(bytes[44 + 40..<44 + 60]))
        #expect(try file.readBytes(from: 40, count: 20) == packets)
        #expect(try file.readPackets(from: 78, count: 10).bytes.count == 8)  // clipped at the end
        // Any byte offset, not whole packets only (AudioFileReadBytes; issue 16).
        #expect(try file.readBytes(from: 41, count: 4) == Array(bytes[44 + 41..<44 + 45]))
        #expect(throws: AudioError.self) { try file.readPackets(from: 81, count: 1) }
    }

    /// The form a file source refills queue buffers with: straight into the caller's memory, the
    /// same bytes and packet count as the array form, bounded by the bytes given and the file's end;
    /// nil where libsndfile does not read the packets raw (IMA4), so the caller uses the array form.
    @Test func pcmPacketsReadStraightIntoMemoryAreTheArrayFormsBytes() throws {
        let path = corpusDirectory.appendingPathComponent("wav16.wav").path
        let file = try AudioFile.open(path)
        let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: 400, alignment: 16)
        defer { memory.deallocate() }
        for (start, count, bound) in [(10, 5, 400), (0, 80, 400), (3, 50, 18), (78, 10, 400), (80, 4, 400)] {
            memory.initializeMemory(as: UInt8.self, repeating: 0xA5)
            let array = try file.readPacketData(from: start, count: count, maximumBytes: bound)
            let direct = try #require(try file.readPacketData(from: start, count: count, maximumBytes: bound, into: memory.baseAddress!))
            #expect(direct.packetCount == array.packetCount && direct.byteCount == array.bytes.count)
            #expect(Array(memory[0..<direct.byteCount]) == array.bytes)
            #expect(memory[direct.byteCount] == 0xA5)  // nothing written past what was read
        }
        #expect(throws: AudioError.self) { try file.readPacketData(from: 81, count: 1, maximumBytes: 400, into: memory.baseAddress!) }

        let scratch = try TemporaryFolder()
        let ima4 = scratch.path("sonora-ima4-direct-\(getpid()).caf")
        let writer = try AudioFile.create(ima4, type: .caf, format: .appleIMA4(sampleRate: 8000, channels: 1), erase: true)
        try writer.writeFrames(from: try OwnedAudioBufferList(channelCount: 1, frameCapacity: 128).list)
        try writer.close()
        #expect(try AudioFile.open(ima4).readPacketData(from: 0, count: 2, maximumBytes: 400, into: memory.baseAddress!) == nil)
    }

    @Test func ima4PacketsAreTheFilesOwn() throws {
        let scratch = try TemporaryFolder()
        let path = scratch.path("sonora-ima4-packets-\(getpid()).caf")
        let file = try AudioFile.create(path, type: .caf, format: .appleIMA4(sampleRate: 8000, channels: 1), erase: true)
        let frames = try OwnedAudioBufferList(channelCount: 1, frameCapacity: 300)
        for frame in 0..<300 { frames.list[0][frame] = Float(frame % 50) / 100 }
        try file.writeFrames(from: frames.list)
        try file.close()
        let reread = try AudioFile.open(path)
        #expect(reread.maximumPacketSize == 34 && reread.packetCount == 5)
        var streamed: [UInt8] = []
        let stream = AudioFileStream(propertyListener: { _ in }, packetsHandler: { streamed += $0; _ = $1 })
        try stream.parse([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
        #expect(try reread.readPackets(from: 1, count: 2).bytes == Array(streamed[34..<102]))
    }

    @Test func packetsWrittenDirectlyReadBackInSox() throws {
        guard let sox = soxPath else { return }
        let scratch = try TemporaryFolder()
        let path = scratch.path("sonora-raw-\(getpid()).wav")
        let file = try AudioFile.create(path, type: .wave, format: .linearPCM(sampleRate: 8000, channels: 2, sample: .int16), erase: true)
        var raw: [UInt8] = []
        for frame in 0..<100 {
            for value in [Int16(frame * 100), Int16(-frame * 100)] { withUnsafeBytes(of: value.littleEndian) { raw += $0 } }
        }
        try file.writePackets(raw)
        #expect(throws: AudioError.self) { try file.writePackets([1, 2, 3]) }
        try file.close()
        let decoded = scratch.path("sonora-raw-\(getpid()).s16")
        try run(sox, [path, "-t", "s16", decoded])
        #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: decoded))) == raw)
    }

    @Test func channelLayoutsSurviveInCAF() throws {
        let scratch = try TemporaryFolder()
        let path = scratch.path("sonora-layout-\(getpid()).caf")
        let layout: [AudioChannelLabel] = [.left, .right, .center, .lfeScreen, .leftSurround, .rightSurround]
        let file = try AudioFile.create(path, type: .caf, format: .linearPCM(sampleRate: 48000, channels: 6, sample: .int24, bigEndian: true), erase: true)
        try file.setChannelLayout(layout)
        #expect(throws: AudioError.self) { try file.setChannelLayout([.left]) }
        let frames = try OwnedAudioBufferList(channelCount: 6, frameCapacity: 16)
        try file.writeFrames(from: frames.list)
        try file.close()
        #expect(try AudioFile.open(path).channelLayout == layout)
    }
}

@Suite("AudioFile magic cookies")
struct AudioFileMagicCookieTests {
    @Test func alacAndFLACHaveCookiesPCMDoesNot() throws {
        let scratch = try TemporaryFolder()
        let alac = scratch.path("sonora-cookie-\(getpid()).caf")
        let flac = scratch.path("sonora-cookie-\(getpid()).flac")
        let frames = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 4096)
        for (path, type, format) in [
            (alac, AudioFileType.caf, StreamFormat.compressed(.appleLossless, sampleRate: 44100, channels: 2)),
            (flac, .flac, .compressed(.flac, sampleRate: 44100, channels: 2)),
        ] {
            let file = try AudioFile.create(path, type: type, format: format, erase: true)
            try file.writeFrames(from: frames.list)
            try file.close()
        }
        // ALACSpecificConfig: frame length 4096, 16 bits, 2 channels, 44100 Hz (big-endian fields).
        let alacCookie = try #require(try AudioFile.open(alac).magicCookie)
        #expect(alacCookie.count == 24)
        #expect(Array(alacCookie[0..<4]) == [0, 0, 0x10, 0] && alacCookie[5] == 16 && alacCookie[9] == 2)
        #expect(Array(alacCookie[20..<24]) == [0, 0, 0xAC, 0x44])
        // STREAMINFO: 34 bytes, sample rate in 20 bits at byte 10.
        let streamInfo = try #require(try AudioFile.open(flac).magicCookie)
        #expect(streamInfo.count == 34)
        let rate = Int(streamInfo[10]) << 12 | Int(streamInfo[11]) << 4 | Int(streamInfo[12]) >> 4
        #expect(rate == 44100)
        #expect(try AudioFile.open(corpusDirectory.appendingPathComponent("wav16.wav").path).magicCookie == nil)
    }
}
