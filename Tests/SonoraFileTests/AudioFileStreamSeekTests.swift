import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

/// `AudioFileStreamSeek`: the byte offset of a packet, exact or estimated; parsing from it
/// with a discontinuity resumes at that packet (exact) or at a frame sync near it (estimated).
@Suite("AudioFileStream seek", .serialized)
struct AudioFileStreamSeekTests {
    /// Feeds `bytes[..<upTo]`, seeks to `packet`, then feeds from the returned offset with a discontinuity.
    func seekAndResume(_ bytes: [UInt8], upTo: Int, packet: Int) throws -> (offset: Int, estimated: Bool, first: [UInt8]?, recorder: CompressedParseRecorder) {
        let recorder = CompressedParseRecorder()
        recorder.feed(bytes[..<upTo])
        let before = recorder.record.packets.count
        let target = try recorder.stream.seek(toPacket: packet)
        // AudioFileStreamSeek's offset counts from the audio data; the stream position adds DataOffset.
        let position = target.byteOffset + (recorder.record.dataOffset ?? 0)
        recorder.feed(bytes[position...], discontinuity: true)
        let resumed = recorder.record.packets.dropFirst(before)
        return (position, target.isEstimated, resumed.first, recorder)
    }

    @Test(arguments: CompressedStreamFixtures.names)
    func seekAfterTheWholeStreamIsExact(name: String) throws {
        let bytes = try CompressedStreamFixtures.bytes(name)
        let whole = parseCompressed(bytes)
        for packet in [0, 1, whole.packets.count / 3, whole.packets.count - 1] {
            let result = try seekAndResume(bytes, upTo: bytes.count, packet: packet)
            #expect(!result.estimated, "\(name): packets already parsed are found exactly")
            #expect(result.first == whole.packets[packet], "\(name): seek to \(packet) gave another packet")
            // Everything from there on is the rest of the stream.
            #expect(Array(result.recorder.record.packets.suffix(whole.packets.count - packet)) == Array(whole.packets[packet...]))
        }
    }

    @Test(arguments: ["alac.caf", "flac.caf", "opus.caf"])
    func cafSeeksAreExactFromThePacketTable(name: String) throws {
        let bytes = try CompressedStreamFixtures.bytes(name)
        let whole = parseCompressed(bytes)
        let ready = try #require(whole.dataOffset)
        // ffmpeg writes the table after the data, so readiness needs the whole file; seek back into it.
        for packet in [whole.packets.count - 1, 2, whole.packets.count / 2] {
            let result = try seekAndResume(bytes, upTo: bytes.count, packet: packet)
            #expect(!result.estimated && result.first == whole.packets[packet])
            #expect(result.offset >= ready)
        }
        let recorder = CompressedParseRecorder()
        recorder.feed(bytes[...])
        let listed = try #require(whole.properties.compactMap { property -> Int? in
            if case .audioDataPacketCount(let count) = property { return count } else { return nil }
        }.first)
        #expect(listed >= whole.packets.count)
        #expect(throws: AudioError.self) { try recorder.stream.seek(toPacket: listed + 1) }
        #expect(throws: AudioError.self) { try recorder.stream.seek(toPacket: -1) }
    }

    /// A fresh stream knows only its header: MP3 seeks come from the Xing TOC or the bit rate,
    /// flagged as estimates, and land on a frame sync within a few packets of the one asked for.
    @Test(arguments: ["cbr.mp3", "vbr.mp3", "sox.mp3", "stereo.aac", "mono22k.mp3"])
    func freshStreamSeeksAreEstimatesThatLandOnAFrame(name: String) throws {
        let bytes = try CompressedStreamFixtures.bytes(name)
        let whole = parseCompressed(bytes)
        let header = try #require(whole.dataOffset) + 4096
        for packet in [whole.packets.count / 2, whole.packets.count * 9 / 10] {
            let result = try seekAndResume(bytes, upTo: header, packet: packet)
            #expect(result.estimated, "\(name): a packet not yet parsed is an estimate")
            let first = try #require(result.first, "\(name): nothing after seeking to \(packet)")
            let landed = try #require(whole.packets.firstIndex(of: first), "\(name): resumed mid-frame")
            // CBR and the bit rate are near exact; a Xing TOC has 1 % steps.
            // ADTS has no table of contents: the average of the frames seen so far (the first few, quieter ones) estimates.
            let tolerance = name.hasSuffix(".aac") ? whole.packets.count / 10 : max(2, whole.packets.count / 50)
            #expect(abs(landed - packet) <= tolerance, "\(name): asked \(packet), landed \(landed)")
            // And the packets after it are the stream's own.
            #expect(Array(result.recorder.record.packets.suffix(whole.packets.count - landed)) == Array(whole.packets[landed...]))
        }
    }

    @Test func constantSizePacketsSeekExactly() throws {
        let wav = [UInt8](try Data(contentsOf: corpusDirectory.appendingPathComponent("wav16.wav")))
        var chunks: [UInt8] = []
        var offset = 0
        let stream = AudioFileStream(propertyListener: { if case .dataOffset(let o) = $0 { offset = o } }, packetsHandler: { data, _ in chunks += data })
        try stream.parse(Array(wav[..<64]))
        let target = try stream.seek(toPacket: 40)
        #expect(target.byteOffset == 40 * 4 && !target.isEstimated)
        chunks = []
        try stream.parse(Array(wav[(offset + target.byteOffset)...]), discontinuity: true)
        #expect(chunks == Array(wav[(offset + target.byteOffset)..<(offset + target.byteOffset + chunks.count)]) && chunks.count == 320 - 160)
        #expect(try stream.packetToFrame(10) == 10 && stream.frameToPacket(10) == (10, 0))
    }

    @Test func packetsAndFramesTranslate() throws {
        let recorder = CompressedParseRecorder()
        recorder.feed(try CompressedStreamFixtures.bytes("vbr.mp3")[...])
        #expect(try recorder.stream.packetToFrame(3) == 3 * 1152)
        #expect(try recorder.stream.frameToPacket(1152 * 3 + 5) == (3, 5))
        let opus = CompressedParseRecorder()
        opus.feed(try CompressedStreamFixtures.bytes("opus.caf")[...])
        let framesPerPacket = try #require(opus.record.dataFormat?.framesPerPacket)
        #expect(try opus.stream.packetToFrame(4) == 4 * Int(framesPerPacket))
        // Absurd packets are errors, not traps: beyond the Xing count, beyond any bit-rate estimate, beyond Int.
        #expect(throws: AudioError.self) { try recorder.stream.seek(toPacket: .max) }
        let noXing = CompressedParseRecorder()
        noXing.feed(try CompressedStreamFixtures.bytes("sox.mp3")[...])
        #expect(throws: AudioError.self) { try noXing.stream.seek(toPacket: .max) }
        #expect(throws: AudioError.self) { try noXing.stream.packetToFrame(.max) }
        let fresh = AudioFileStream(propertyListener: { _ in }, packetsHandler: { _, _ in })
        #expect(throws: AudioError.self) { try fresh.seek(toPacket: 0) }
        #expect(throws: AudioError.self) { try fresh.packetToFrame(0) }
    }

    /// A discontinuity in a packet-table stream without a seek cannot be placed: Core Audio's
    /// DiscontinuityCantRecover, after which a seek recovers.
    @Test func cafDiscontinuityWithoutSeekIsAnErrorASeekRecovers() throws {
        let bytes = try CompressedStreamFixtures.bytes("alac.caf")
        let whole = parseCompressed(bytes)
        let recorder = CompressedParseRecorder()
        recorder.feed(bytes[...])
        #expect(!recorder.feed(bytes[1000...], discontinuity: true))
        #expect(recorder.record.error == .discontinuityCantRecover)
        let target = try recorder.stream.seek(toPacket: 5)
        #expect(recorder.feed(bytes[(target.byteOffset + (recorder.record.dataOffset ?? 0))...], discontinuity: true))
        #expect(Array(recorder.record.packets.suffix(whole.packets.count - 5)) == Array(whole.packets[5...]))
    }
}
