import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

/// Damaged compressed streams: clear AudioErrors naming what is wrong, or whole packets
/// of what is intact — never a crash, a hang, or a packet that is not one.
@Suite("AudioFileStream malformed compressed streams", .serialized)
struct AudioFileStreamMalformedTests {
    @Test func badID3SizeIsAnError() throws {
        let mp3 = try CompressedStreamFixtures.bytes("sox.mp3")
        let id3: [UInt8] = Array("ID3".utf8) + [4, 0, 0, 0x00, 0x81, 0x00, 0x10]
        let parsed = parseCompressed(id3 + mp3) { 3 }
        #expect(parsed.error == .invalidFileData)
        #expect(parsed.errorMessage?.contains("synchsafe") == true, "\(parsed.errorMessage ?? "")")
        #expect(parsed.packets.isEmpty)
    }

    @Test func truncatedStreamsGiveWholePacketsOfWhatIsThere() throws {
        for name in ["vbr.mp3", "stereo.aac", "alac.caf", "mp3.wav", "opus.caf"] {
            let bytes = try CompressedStreamFixtures.bytes(name)
            let whole = parseCompressed(bytes)
            var generator = SeededGenerator(seed: 99)
            for _ in 0..<40 {
                let cut = Int.random(in: 0..<bytes.count, using: &generator)
                let parsed = parseCompressed(Array(bytes[..<cut])) { Int.random(in: 1...512, using: &generator) }
                #expect(parsed.error == nil, "\(name) cut at \(cut): \(parsed.errorMessage ?? "")")
                #expect(parsed.badDescriptions == 0)
                #expect(Array(whole.packets.prefix(parsed.packets.count)) == parsed.packets, "\(name) cut at \(cut)")
                // A truncated header announces nothing past what it could read.
                #expect(parsed.properties == Array(whole.properties.prefix(parsed.properties.count)))
            }
        }
    }

    @Test func giantPacketTableCountsAreErrors() throws {
        let adts = parseCompressed(try CompressedStreamFixtures.bytes("mono22k.aac"))
        let caf = AppleStyleCAF.make(format: .compressed(.mpeg4AAC, sampleRate: 22050, channels: 1), formatFlags: 2,
                                     cookie: [1, 2, 3], packets: Array(adts.packets.prefix(10)), priming: 0, remainder: 0)
        // The pakt chunk follows desc (8 + 12 + 32) and kuki (12 + 3): its packet count is its body's first 8 bytes.
        let paktBody = 8 + 12 + 32 + 12 + 3 + 12
        #expect(String(decoding: caf[paktBody - 12..<paktBody - 8], as: UTF8.self) == "pakt")
        var giant = caf
        for index in 0..<8 { giant[paktBody + index] = index == 0 ? 0x7F : 0xFF }
        let parsed = parseCompressed(giant) { 7 }
        #expect(parsed.error == .invalidChunk)
        #expect(parsed.errorMessage?.contains("pakt") == true)
        // Found by the long fuzz run: valid frames near Int64.max overflowed valid + priming + remainder.
        var overflowing = caf
        overflowing[paktBody + 8] = 0x7F
        for index in 9..<16 { overflowing[paktBody + index] = 0xFF }
        overflowing[paktBody + 19] = 5  // priming
        let overflowed = parseCompressed(overflowing) { 11 }
        #expect(overflowed.error == .invalidChunk, "\(overflowed.errorMessage ?? "")")
        // A table claiming more bytes than the data chunk holds.
        var longer = caf
        longer[paktBody + 24] = 0x8F  // the first packet's size gains 2 MB-ish: a longer varint
        let overlong = parseCompressed(longer)
        #expect(overlong.error == .invalidChunk, "\(overlong.errorMessage ?? "")")
        // A pakt chunk whose size is beyond any header.
        var hugeChunk = caf
        hugeChunk[paktBody - 8] = 0x01
        #expect(parseCompressed(hugeChunk).error == .invalidChunk)
    }

    @Test func zeroFrameLengthsAreNotFrames() throws {
        let bytes = try CompressedStreamFixtures.bytes("mono22k.aac")
        let whole = parseCompressed(bytes)
        // A stream of ADTS headers that all say "0 bytes": no sync, and an error once past the bound.
        let zeros = [UInt8]((0..<200_000).flatMap { _ in [0xFF, 0xF1, 0x50, 0x80, 0x00, 0x1F, 0xFC] as [UInt8] })
        let parsed = parseCompressed(zeros, hint: .adts) { 4096 }
        #expect(parsed.packets.isEmpty)
        #expect(parsed.error == .invalidFileData, "\(parsed.errorMessage ?? "")")
        // One frame's length zeroed mid-stream: that frame is lost, the stream resyncs on the next.
        let lengths = whole.packets.map { $0.count + 7 }
        let at = lengths[0..<20].reduce(0, +)
        var damaged = bytes
        damaged[at + 3] &= 0xFC
        damaged[at + 4] = 0
        damaged[at + 5] &= 0x1F
        let resynced = parseCompressed(damaged)
        #expect(resynced.error == nil)
        #expect(Array(resynced.packets.prefix(20)) == Array(whole.packets.prefix(20)))
        #expect(Array(resynced.packets.suffix(whole.packets.count - 21)) == Array(whole.packets.suffix(whole.packets.count - 21)))
        // MP3: junk only (no two agreeing headers) is an error past the bound, not a hang.
        var generator = SeededGenerator(seed: 3)
        let junk = (0..<(AudioFileStream.maximumHeaderBytes + 10_000)).map { _ in UInt8.random(in: 0...0xFE, using: &generator) }
        #expect(parseCompressed([0xFF, 0xFB, 0x90, 0x64] + junk) { 65536 }.error == .invalidFileData)
    }

    /// Found by the long fuzz run: a CAF data chunk claiming Int64.max bytes overflowed where the data ends.
    @Test func cafDataChunkOfInt64MaxBytesDoesNotOverflow() throws {
        let bytes = [UInt8](try Data(contentsOf: corpusDirectory.appendingPathComponent("caf16.caf")))
        let data = try #require(bytes.windows(ofCount: 4).firstIndex(of: Array("data".utf8)))
        var huge = bytes
        huge[data + 4] = 0x7F
        for offset in 5..<12 { huge[data + offset] = 0xFF }
        let recorder = CompressedParseRecorder()
        recorder.feed(huge[...])
        #expect(recorder.record.error == nil)
        #expect(recorder.record.properties.contains(.audioDataByteCount(Int.max - 4)))
        #expect(throws: AudioError.self) { try recorder.stream.seek(toPacket: .max / 2) }
    }

    /// Found by the long fuzz run (a peak of 265 MB): a pakt chunk in a CAF of constant-size packets
    /// claiming millions (or billions) of packets has no entries to bound its count; it is not decoded.
    @Test func constantPacketCAFWithAGiantPacketTableIsNotDecoded() throws {
        let bytes = [UInt8](try Data(contentsOf: corpusDirectory.appendingPathComponent("caf16.caf")))
        let data = try #require(bytes.windows(ofCount: 4).firstIndex(of: Array("data".utf8)))
        let pakt: [UInt8] = Array("pakt".utf8) + [0, 0, 0, 0, 0, 0, 0, 24] + [0, 0, 0, 0, 0x01, 0, 0, 0] + [UInt8](repeating: 0, count: 16)
        let damaged = Array(bytes[..<data]) + pakt + Array(bytes[data...])
        let before = AudioFileStreamCompressedFuzzTests.memoryKilobytes().resident
        let parsed = parseCompressed(damaged) { 100 }
        #expect(parsed.error == nil)
        #expect(parsed.constantPacketBytes > 0)
        #expect(AudioFileStreamCompressedFuzzTests.memoryKilobytes().resident < before + 32_768)
    }

    @Test func adtsWithSeveralBlocksAFrameIsUnsupported() throws {
        var bytes = try CompressedStreamFixtures.bytes("mono22k.aac")
        bytes[6] |= 0x01  // number_of_raw_data_blocks_in_frame = 1 → two blocks
        let parsed = parseCompressed(bytes)
        #expect(parsed.error == .unsupportedDataFormat)
    }

    @Test func vbrCAFWithoutAPacketTableIsAnError() throws {
        let adts = parseCompressed(try CompressedStreamFixtures.bytes("mono22k.aac"))
        let caf = AppleStyleCAF.make(format: .compressed(.mpeg4AAC, sampleRate: 22050, channels: 1), formatFlags: 2,
                                     cookie: [1], packets: Array(adts.packets.prefix(4)), priming: 0, remainder: 0)
        // Rename the pakt chunk: the data's packets cannot be found.
        var renamed = caf
        let index = try #require(caf.windows(ofCount: 4).firstIndex(of: Array("pakt".utf8)))
        renamed[index] = UInt8(ascii: "f")
        var streamed = renamed
        // With an open-ended data chunk (size -1, as written while streaming) it is an error at once.
        let data = try #require(renamed.windows(ofCount: 4).firstIndex(of: Array("data".utf8)))
        for offset in 4..<12 { streamed[data + offset] = 0xFF }
        let parsed = parseCompressed(Array(streamed[..<(data + 16)]))
        #expect(parsed.error == .invalidChunk, "\(parsed.errorMessage ?? "")")
        // With a sized data chunk the parser waits for a table that never comes: no packets, no error.
        let waiting = parseCompressed(renamed)
        #expect(waiting.packets.isEmpty && waiting.error == nil)
    }
}
